// stablehlo.triangular_solve on NVPTX (real element types, n <= 32): a
// thread per (batch, right-hand side) — a column of b when left_side, a
// row otherwise — running the interpreter's substitution (jit/eval/
// linalg.cc): steps in the direction op(a)'s triangle allows, each
// x_i = (b_i - sum over solved k, ascending, of op(a)_ik x_k) / op(a)_ii,
// unrolled (n is static). Values stay in double between steps and round
// once into the element type at the end; the interpreter keeps long double,
// so results are not its bits (a few ulps, more for ill-conditioned a).
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias a, b, result)
#ifndef JITD_JIT_CODEGEN_NVPTX_TRIANGULAR_SOLVE_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_TRIANGULAR_SOLVE_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitTriangularSolveKernel handles `op`: f16 / bf16 / f32 / f64,
// square a of at most 32 x 32 matching b's batch and solve dimension.
bool IsNvptxEmittableTriangularSolve(const ir::Op& op);

StatusOr<GridPlan> EmitTriangularSolveKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                             const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_TRIANGULAR_SOLVE_KERNEL_H_
