// A stablehlo.convolution as one cuDNN (v9) cudnnConvolutionForward: the
// descriptor values, worked out at compile time from the op alone (no
// cudnn.h, no library, no GPU), kept in the CudaProgram as a library-call
// step and turned into cuDNN's legacy descriptors by RunCudnnConvolution
// (cuda_libraries.h) when the program runs.
//
// The mapping. cuDNN's tensors are [N, C, spatial...] with any strides, so
// the input and the result are read and written in place in whatever
// layout the dimension numbers give (spatial dimension i is
// input_spatial_dimensions[i], with the kernel's and the output's i-th).
// Its filters are packed, KCRS ("NCHW": output feature, input feature,
// spatial in order) or KRSC ("NHWC": output feature, spatial, input
// feature). KCRS kernels are read in place; others (HWIO, jax's and flax's
// usual, and KRSC, whose cuDNN algorithms want NHWC tensors) are permuted
// to KCRS by a kernel first (`filter_permutation`, cudnn_filter_kernel.h;
// weights are small). A
// convolution with fewer than two spatial dimensions gets unit ones (cuDNN
// wants at least four dimensions); more than three are not planned.
// StableHLO's convolution is cross-correlation (CUDNN_CROSS_CORRELATION).
// feature_group_count becomes the group count.
//
// Not planned (the caller keeps jit's own kernel): batch_group_count > 1,
// lhs_dilation (transposed convolutions), window_reversal, padding that is
// negative or differs low / high, element types other than f16 / bf16 /
// f32 / f64 or mixed, empty tensors, extents or strides past int32.
//
// Precision: f32 may use TF32 (CUDNN_DEFAULT_MATH) for DEFAULT / HIGH,
// CUDNN_FMA_MATH (exact) for HIGHEST or `--cuda-exact-f32`; f16 and bf16
// compute in f32 with tensor cores allowed; f64 in f64.
#ifndef JITD_DEVICES_CUDA_CUDNN_PLAN_H_
#define JITD_DEVICES_CUDA_CUDNN_PLAN_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "devices/cuda/cublaslt_plan.h"
#include "jit/ir/module.h"

namespace jitd::devices::cuda {

enum class ConvMath : int64_t { kDefault = 0, kFma = 1, kTensorOp = 2 };

struct CudnnConvPlan {
  LibType type = LibType::kF32;       // tensors' and filter's element type
  LibType compute = LibType::kF32;    // the convolution descriptor's data type
  ConvMath math = ConvMath::kDefault;
  int64_t groups = 1;
  // [N, C, S...] and [N, K, S'...]: extents and element strides.
  std::vector<int64_t> x_dims, x_strides, y_dims, y_strides;
  std::vector<int64_t> w_dims;        // [K, C / groups, R...]
  bool w_nhwc = false;                // KRSC in memory, else KCRS
  // Not empty: the kernel operand is not KCRS / KRSC; KCRS dimension k is
  // its dimension filter_permutation[k] (the compiler permutes it into a
  // scratch buffer first). Compile-time only: not encoded.
  std::vector<int64_t> filter_permutation;
  std::vector<int64_t> pad, stride, dilation;  // per spatial dimension
  int64_t workspace_bytes = 0;        // the most an algorithm may use

  bool operator==(const CudnnConvPlan&) const = default;
};

inline constexpr int64_t kCudnnWorkspaceBytes = int64_t{32} << 20;

// The plan for `op` (stablehlo.convolution), NOT_FOUND saying why cuDNN
// cannot take it as laid out, INVALID_ARGUMENT for attributes that do not
// describe a convolution. `exact_f32` turns TF32 off.
StatusOr<CudnnConvPlan> PlanCudnnConvolution(const ir::Op& op, bool exact_f32);

std::vector<int64_t> EncodeConvPlan(const CudnnConvPlan& plan);
StatusOr<CudnnConvPlan> DecodeConvPlan(std::span<const int64_t> encoded);

// Whether buffers of these sizes fit the plan (INVALID_ARGUMENT naming the
// first that does not): the largest element each tensor's strides reach.
Status CheckConvBuffers(const CudnnConvPlan& plan, int64_t input_bytes, int64_t filter_bytes, int64_t output_bytes);

// "cudnn conv f32 x [8,3,32,32] w [16,3,3,3] (KCRS) -> [8,16,30,30] groups 1 math FMA".
std::string DescribeConvPlan(const CudnnConvPlan& plan);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDNN_PLAN_H_
