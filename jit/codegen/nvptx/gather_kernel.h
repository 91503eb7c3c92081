// stablehlo.gather on NVPTX: a flat grid-stride kernel with a thread per
// result element that reads the operand element the spec names — start
// indices clamped so the slice fits, as the interpreter does
// (jit/eval/indexing.cc). A copy: results are the interpreter's bit for
// bit. The kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias operand, indices, result)
//
// launched as the plan EmitGatherKernel returns.
#ifndef JITD_JIT_CODEGEN_NVPTX_GATHER_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_GATHER_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitGatherKernel handles `op`: a plain element type (pred,
// integers, f16, bf16, f32, f64, complex), integer indices, well-formed
// dimension numbers and no zero slice size.
bool IsNvptxEmittableGather(const ir::Op& op);

StatusOr<GridPlan> EmitGatherKernel(llvm::Module& module, const ir::Op& gather, const std::string& name,
                                    const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_GATHER_KERNEL_H_
