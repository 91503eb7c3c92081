// A dot_general as one cuBLASLt matmul: the descriptor values, worked out
// at compile time from the op alone (no cuda.h, no library, no GPU), kept in
// the CudaProgram as a library-call step and turned into cuBLASLt
// descriptors by cublaslt_runner.h when the program runs.
//
// The mapping. dot_general's result is row-major [batch..., lhs free...,
// rhs free...]; cuBLASLt is column-major. A row-major m x n matrix is a
// column-major n x m one, so the call computes
//     C^T (n x m) = op(A) * op(B)   with A = rhs, B = lhs,
// and every operand is read in place when its layout allows it:
//   - the batch dimensions lead both operands, in the same order;
//   - the free dimensions are contiguous, the contracting dimensions are
//     contiguous and in the same order on both sides (rhs_contracting[i]
//     pairs with lhs_contracting[i]), either group first;
//   - then lhs is [batch, m, k] (B not transposed) or [batch, k, m]
//     (transposed), rhs [batch, k, n] (A not transposed) or [batch, n, k]
//     (transposed).
// Anything else (batch dimensions elsewhere, interleaved groups) is not
// planned as laid out: the compiler permutes such operands first
// (CanonicalizeMatmul).
//
// Types, as XLA:GPU uses cuBLASLt: f16 and bf16 operands with an f16 / bf16
// or f32 result accumulate in f32; f32 in f32, with TF32 tensor cores
// (CUBLAS_COMPUTE_32F_FAST_TF32) when precision_config's highest entry is
// DEFAULT or HIGH, exact f32 for HIGHEST or when the device is told to be
// exact (`jitd serve --cuda-exact-f32`); f64 in f64; complex<f32> /
// complex<f64> likewise with complex scales. Integer and mixed-type dots
// are not planned.
#ifndef JITD_DEVICES_CUDA_CUBLASLT_PLAN_H_
#define JITD_DEVICES_CUDA_CUBLASLT_PLAN_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"
#include "jit/ir/type.h"

namespace jitd::devices::cuda {

// The element types a plan names (cudaDataType_t in cublaslt_runner.cc).
enum class LibType : int64_t { kF16 = 0, kBF16 = 1, kF32 = 2, kF64 = 3, kC64 = 4, kC128 = 5 };
// cublasComputeType_t.
enum class LibCompute : int64_t { k32F = 0, k32FFastTF32 = 1, k64F = 2 };
// stablehlo's precision_config, the higher of the two entries.
enum class MatmulPrecision : int64_t { kDefault = 0, kHigh = 1, kHighest = 2 };

const char* LibTypeName(LibType t);
const char* LibComputeName(LibCompute c);

// One dot_general, described without the IR (tests build these by hand).
struct MatmulProblem {
  ir::DType lhs_type = ir::DType::kF32, rhs_type = ir::DType::kF32, result_type = ir::DType::kF32;
  std::vector<int64_t> lhs_dims, rhs_dims;
  std::vector<int64_t> lhs_batching, rhs_batching, lhs_contracting, rhs_contracting;
  MatmulPrecision precision = MatmulPrecision::kDefault;
};

// Every value a cublasLtMatmul call needs, in cuBLASLt's column-major terms
// (see the top of this file): A = rhs, B = lhs, C = D = the result.
struct CublasLtMatmulPlan {
  int64_t m = 0;  // rows of op(A) and of C: the rhs free extent
  int64_t n = 0;  // columns of op(B) and of C: the lhs free extent
  int64_t k = 0;  // the contracted extent
  int64_t batch = 1;
  bool trans_a = false, trans_b = false;  // CUBLAS_OP_T
  // Stored matrices: rows x cols, leading dimension, batch stride (elements).
  int64_t a_rows = 0, a_cols = 0, lda = 0, stride_a = 0;
  int64_t b_rows = 0, b_cols = 0, ldb = 0, stride_b = 0;
  int64_t c_rows = 0, c_cols = 0, ldc = 0, stride_c = 0;
  LibType a_type = LibType::kF32, b_type = LibType::kF32, c_type = LibType::kF32;
  LibCompute compute = LibCompute::k32F;
  LibType scale_type = LibType::kF32;  // alpha = 1, beta = 0 of this type
  int64_t workspace_bytes = 0;         // the most the algorithm may use

  bool operator==(const CublasLtMatmulPlan&) const = default;
};

inline constexpr int64_t kCublasLtWorkspaceBytes = int64_t{32} << 20;  // XLA:GPU's default

// The plan for `problem`, or NOT_FOUND saying why cuBLASLt cannot take it
// as laid out (the caller uses its own kernel), or INVALID_ARGUMENT for
// dimension numbers that do not describe a dot_general. `exact_f32` turns
// TF32 off whatever the precision.
StatusOr<CublasLtMatmulPlan> PlanCublasLtMatmul(const MatmulProblem& problem, bool exact_f32);

// The same product with its operands permuted into the layout cuBLASLt
// reads in place: lhs [batch, free, contracting], rhs [batch, contracting,
// free] (batch and contracting in the dimension numbers' pairing order,
// free ascending, as dot_general's result orders them). A permutation
// lists, per new dimension, the operand dimension it is; empty when the
// operand is already so. The compiler permutes with a kernel first
// (cudnn_filter_kernel.h's EmitPermuteKernel) when PlanCublasLtMatmul
// does not take the layout as it is.
struct CanonicalMatmul {
  MatmulProblem problem;
  std::vector<int64_t> lhs_permutation, rhs_permutation;
};
CanonicalMatmul CanonicalizeMatmul(const MatmulProblem& problem);

// The problem an op (stablehlo.dot_general or stablehlo.dot) states.
StatusOr<MatmulProblem> MatmulProblemOf(const ir::Op& op);

// The plan as CudaLibraryCall::plan holds it, and back (INVALID_ARGUMENT
// for a wrong length or a value out of range).
std::vector<int64_t> EncodeMatmulPlan(const CublasLtMatmulPlan& plan);
StatusOr<CublasLtMatmulPlan> DecodeMatmulPlan(std::span<const int64_t> encoded);

// Whether buffers of these sizes fit the plan (lhs batch x n x k, rhs
// batch x k x m, result batch x n x m elements of their types):
// INVALID_ARGUMENT naming the first that does not. An executable checks
// a loaded program's calls with it before it runs one.
Status CheckMatmulBuffers(const CublasLtMatmulPlan& plan, int64_t lhs_bytes, int64_t rhs_bytes, int64_t result_bytes);

// "matmul 4 x [64x32 * 32x16] f32 compute 32F_FAST_TF32 (lhs transposed)".
std::string DescribeMatmulPlan(const CublasLtMatmulPlan& plan);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUBLASLT_PLAN_H_
