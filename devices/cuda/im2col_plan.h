// The cuda device's convolution fallback when cuDNN is absent or refuses
// (cudnn_plan.h): im2col + one batched cuBLASLt matmul, planned at compile
// time from the op alone (no library, no GPU).
//
// Three steps, all on the session's stream:
//   1. im2col (im2col_kernel.h): a kernel writes the patch matrix
//      P[G][R][K], G groups (feature_group_count or batch_group_count,
//      at most one of them above 1), R = output batch x output spatial
//      positions (row-major, batch first), K = kernel input features x
//      kernel spatial taps (row-major, feature first). Element
//      (g, r, k) is the input element window position k of output row r
//      reads, or zero where that position is padding, a hole between
//      dilated input elements (lhs_dilation) or cut by negative padding;
//      window_reversal reads tap K_s - 1 - k_s; strides and rhs_dilation
//      place the taps. Any input layout is read in place.
//   2. The filter permuted to [O, Cg, taps...] (cudnn_filter_kernel.h)
//      unless it is so already: as [G][O/G][K] it is the matmul's rhs.
//   3. One cuBLASLt matmul (cublaslt_plan.h) batched over the groups:
//      T[g] = P[g] * W[g]^T, T of [G, R, O/G] = [G, N', S'..., O/G].
//   4. T permuted into the result's layout (the feature dimension is
//      (g, o) in that order) unless it already is (one group, the result's
//      feature dimension innermost and its batch dimension outermost; unit
//      dimensions do not count).
//
// Bound: the patch matrix is at most kIm2colMaxBytes (256 MiB); a larger
// one is not planned (NOT_FOUND) and the compiler keeps its direct kernel
// (a thread per output) for that convolution. Not tiled.
//
// Not planned (NOT_FOUND, the direct kernel): element types other than
// f16 / bf16 / f32 / f64 or mixed, empty tensors, and everything cuBLASLt's
// plan refuses. Precision as cuBLASLt's matmul plan treats a dot_general's
// precision_config.
#ifndef JITD_DEVICES_CUDA_IM2COL_PLAN_H_
#define JITD_DEVICES_CUDA_IM2COL_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "devices/cuda/cublaslt_plan.h"
#include "jit/ir/module.h"

namespace jitd::devices::cuda {

inline constexpr int64_t kIm2colMaxBytes = int64_t{256} << 20;

struct Im2colConvPlan {
  int64_t element_bytes = 4;
  int64_t groups = 1;              // G
  bool batch_groups = false;       // G counts batch groups, else feature groups
  int64_t batch = 1;               // N' = output batch (input batch / G for batch groups)
  int64_t channels = 1;            // Cg = the kernel's input feature extent
  int64_t out_per_group = 1;       // O / G
  std::vector<int64_t> in_spatial, out_spatial, kernel_spatial;
  std::vector<int64_t> stride, pad_low, lhs_dilation, rhs_dilation;
  std::vector<int64_t> reversal;   // 0 / 1 per spatial dimension
  // The input's element strides: batch, feature, spatial...
  int64_t in_batch_stride = 0, in_feature_stride = 0;
  std::vector<int64_t> in_spatial_strides;
  int64_t rows = 0;                // R
  int64_t depth = 0;               // K
  int64_t patch_elements = 0;      // G x R x K
  // The filter's dimensions in [O, Cg, taps...] order (empty: it is so, up
  // to dimensions of extent 1).
  std::vector<int64_t> filter_permutation;
  // T's dimensions [G, N', S'..., O/G] and, per result-layout dimension
  // (feature split into g, o), the T dimension it is (empty: identity).
  std::vector<int64_t> gemm_dims;
  std::vector<int64_t> output_permutation;
  CublasLtMatmulPlan matmul;
};

// The plan for `op` (stablehlo.convolution), NOT_FOUND saying why it is not
// planned, INVALID_ARGUMENT for attributes that do not describe a
// convolution. `exact_f32` turns TF32 off.
StatusOr<Im2colConvPlan> PlanIm2colConvolution(const ir::Op& op, bool exact_f32);

// The input element (flat, in the input's own layout) that patch element
// `index` (flat over [G][R][K]) copies, or -1 for a zero. The kernel
// computes exactly this; tests use it as the host reference.
int64_t Im2colSource(const Im2colConvPlan& plan, int64_t index);

// "im2col 2 x [36 x 27] f32 (lhs dilation, reversal) + matmul ...".
std::string DescribeIm2colPlan(const Im2colConvPlan& plan);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_IM2COL_PLAN_H_
