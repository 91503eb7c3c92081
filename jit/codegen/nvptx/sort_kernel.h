// stablehlo.sort on NVPTX, first lowering: a thread per row (every index
// of the dimensions other than the sorted one) sorts its row in place by a
// stable insertion sort with the comparator region. For a comparator that
// is a strict weak order (the spec requires one) a stable sort has exactly
// one result, the interpreter's (its stable merge sort). The results start
// as copies of the operands (the caller's copy kernels); the kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias result0, ..., resultN-1)
//
// launched as the plan EmitSortKernel returns. O(n^2) compares per row:
// correct first; a bitonic / merge sort in shared memory is next.
#ifndef JITD_JIT_CODEGEN_NVPTX_SORT_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_SORT_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitSortKernel handles `op`: N operands of one shape and plain
// element types, a comparator of scalar math NVPTX kernels compute
// returning a pred.
bool IsNvptxEmittableSort(const ir::Op& op);

StatusOr<GridPlan> EmitSortKernel(llvm::Module& module, const ir::Op& sort, const std::string& name,
                                  const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_SORT_KERNEL_H_
