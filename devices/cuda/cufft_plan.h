// A stablehlo.fft as one cuFFT plan (cufftPlanMany over the last 1-3
// axes, the leading axes a batch), worked out at compile time from the op
// alone and kept in the CudaProgram as a library-call step; cufft_runner
// (cuda_libraries.h) makes and runs the plan when the program runs.
//
// FFT / IFFT are C2C (Z2Z for complex<f64>), RFFT R2C (D2Z), IRFFT C2R
// (Z2D), all packed (no embeds): cuFFT's packed complex side of a real
// transform keeps n/2 + 1 values on the last axis, as stablehlo does.
// cuFFT's inverse is unnormalized: the compiler divides IFFT / IRFFT
// results by the product of fft_length in a kernel after the call
// (`normalize`). A multi-dimensional C2R overwrites its input, so the
// compiler hands it a copy (`copy_input`).
#ifndef JITD_DEVICES_CUDA_CUFFT_PLAN_H_
#define JITD_DEVICES_CUDA_CUFFT_PLAN_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::devices::cuda {

enum class FftKind : int64_t { kC2C = 0, kZ2Z = 1, kR2C = 2, kD2Z = 3, kC2R = 4, kZ2D = 5 };

const char* FftKindName(FftKind k);

struct CufftPlan {
  FftKind kind = FftKind::kC2C;
  bool inverse = false;     // CUFFT_INVERSE (C2C / Z2Z; C2R / Z2D always are)
  std::vector<int64_t> n;   // the transform's extents, outermost first (1-3)
  int64_t batch = 1;        // the product of the leading axes
  int64_t input_elements = 0;   // per batch entry: prod(n), or with n.back() / 2 + 1 (complex side)
  int64_t output_elements = 0;
  bool normalize = false;   // divide the result by prod(n) after the call
  bool copy_input = false;  // cuFFT overwrites the input: give it a scratch copy

  bool operator==(const CufftPlan&) const = default;
};

// The plan for `op` (stablehlo.fft), NOT_FOUND saying why cuFFT cannot
// take it (more than 3 axes, an empty tensor, an extent past int32), or
// INVALID_ARGUMENT for an op whose types do not match its fft_type.
StatusOr<CufftPlan> PlanCufft(const ir::Op& op);

std::vector<int64_t> EncodeFftPlan(const CufftPlan& plan);
StatusOr<CufftPlan> DecodeFftPlan(std::span<const int64_t> encoded);

// Whether buffers of these sizes fit the plan (batch x input_elements,
// batch x output_elements, each of its kind's side type): INVALID_ARGUMENT
// naming the one that does not.
Status CheckFftBuffers(const CufftPlan& plan, int64_t input_bytes, int64_t output_bytes);

// "cufft C2R inverse [15x16x32] x 14, normalized".
std::string DescribeFftPlan(const CufftPlan& plan);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUFFT_PLAN_H_
