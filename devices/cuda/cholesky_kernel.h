// stablehlo.cholesky on NVPTX: a thread per matrix of the batch computing
// jit/eval's factorization (linalg.cc) column by column — d = a[j][j] -
// sum_k l[j][k]^2, l[j][j] = sqrt(d) (NaN for d < 0), l[i][j] = (a[i][j] -
// sum_k l[i][k] l[j][k]) / l[j][j], k ascending — in double in a scratch
// buffer, each value rounded once into the result, the other triangle
// zero; upper (`lower = false`) reads a's upper triangle and writes l^T.
// Real f32 / f64 only. The interpreter works in long double: within an ulp
// or so for well-conditioned matrices, not its bits. O(n^3) per thread:
// a small-matrix kernel (cuSOLVER's potrf would be the fast path).
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias a, ptr addrspace(1)
//                        noalias result, ptr addrspace(1) noalias scratch)
// scratch: batch * n * n doubles.
#ifndef JITD_DEVICES_CUDA_CHOLESKY_KERNEL_H_
#define JITD_DEVICES_CUDA_CHOLESKY_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::devices::cuda {

// Whether EmitCholeskyKernel handles `op`: f32 / f64 [..., n, n].
bool IsNvptxEmittableCholesky(const ir::Op& op);

// The scratch bytes the kernel needs for `op`.
int64_t CholeskyScratchBytes(const ir::Op& op);

StatusOr<codegen::GridPlan> EmitCholeskyKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                               const codegen::GridLimits& limits);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CHOLESKY_KERNEL_H_
