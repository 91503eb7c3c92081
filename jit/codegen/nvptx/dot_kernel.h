// stablehlo.dot_general (and the legacy stablehlo.dot) on NVPTX, the exact
// path: a flat grid-stride kernel with a thread per result element that
// accumulates its dot product in jit/eval's arithmetic domain (uint64 for
// integers, f32 for f32 / f16 / bf16, f64, complex in the component type),
// in the contracting dimensions' row-major order, each multiply and add
// rounded separately (never fused), then rounds once into the result type
// — jit/eval/linalg.cc's order and operations, so results are the
// interpreter's (and the cpu device's) bit for bit. Not fast: cuBLASLt is
// the planned path for big matmuls; this one is what an exact-f32 mode
// needs. The kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias lhs, rhs, result)
//
// launched as the plan EmitDotKernel returns.
#ifndef JITD_JIT_CODEGEN_NVPTX_DOT_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_DOT_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitDotKernel handles `op`: integer operands into an integer
// result, real floats (f16, bf16, f32, f64) into a real float result, or
// complex operands of the result's complex type; well-formed dimension
// numbers.
bool IsNvptxEmittableDot(const ir::Op& op);

StatusOr<GridPlan> EmitDotKernel(llvm::Module& module, const ir::Op& dot, const std::string& name,
                                 const GridLimits& limits);

// stablehlo.convolution, the exact path in the same way: a thread per
// result element, the interpreter's reframing (jit/eval/linalg.cc): for
// each kernel tap in row-major order, for each input feature of the
// group, acc = acc + x * w in the domain, padding and dilation holes
// reading zeros that still take part. The kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias lhs, kernel, result)
bool IsNvptxEmittableConvolution(const ir::Op& op);

StatusOr<GridPlan> EmitConvolutionKernel(llvm::Module& module, const ir::Op& conv, const std::string& name,
                                         const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_DOT_KERNEL_H_
