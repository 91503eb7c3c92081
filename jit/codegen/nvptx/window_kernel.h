// stablehlo.reduce_window on NVPTX: a flat grid-stride kernel with a thread
// per result element that folds its window in row-major window order from
// the init values, padding and base-dilation holes contributing the init
// values — the interpreter's order and values (jit/eval/reduction.cc), so
// results are bit for bit its own. The kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias input0, ..., inputN-1,
//                        init0, ..., initN-1, result0, ..., resultN-1)
//
// (the op's operands in order, then its results); its launch is the plan
// EmitReduceWindowKernel returns.
#ifndef JITD_JIT_CODEGEN_NVPTX_WINDOW_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_WINDOW_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitReduceWindowKernel handles `op`: N inputs and N rank-0 inits
// of the results' element types (no promotion), positive strides and
// dilations, a body of scalar math NVPTX kernels compute.
bool IsNvptxEmittableReduceWindow(const ir::Op& op);

StatusOr<GridPlan> EmitReduceWindowKernel(llvm::Module& module, const ir::Op& reduce_window,
                                          const std::string& name, const GridLimits& limits);

// stablehlo.select_and_scatter, first lowering: one thread (a launch of
// one block of one thread) fills the result with the init value, then for
// each source element in row-major order selects an operand element of
// its window with the `select` region (a left fold over the in-bounds
// window elements in row-major order keeping the current choice while
// select(current, next) holds) and folds the source element into the
// result there with the `scatter` region — the interpreter's order, bit
// for bit. Serial: correct first. The kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias operand, source, init, result)
bool IsNvptxEmittableSelectAndScatter(const ir::Op& op);

StatusOr<GridPlan> EmitSelectAndScatterKernel(llvm::Module& module, const ir::Op& op, const std::string& name);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_WINDOW_KERNEL_H_
