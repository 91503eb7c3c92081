// The kernel after an inverse cuFFT call: cuFFT leaves IFFT / IRFFT
// unnormalized, stablehlo divides by the product of fft_length. A flat
// grid-stride kernel over the result's real values (a complex value is two)
// dividing each in place:
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias values)
//   values[i] = values[i] / divisor   for i < count
//
// Division, not a multiply by 1/divisor, as jit/eval's fft divides.
#ifndef JITD_DEVICES_CUDA_CUFFT_NORMALIZE_KERNEL_H_
#define JITD_DEVICES_CUDA_CUFFT_NORMALIZE_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"

namespace llvm {
class Module;
}

namespace jitd::devices::cuda {

// `f64`: the values are doubles, else floats. INVALID_ARGUMENT for a
// count below 1, a divisor below 1 or unusable grid limits.
StatusOr<codegen::GridPlan> EmitFftNormalizeKernel(llvm::Module& module, const std::string& name, bool f64,
                                                   int64_t count, int64_t divisor, const codegen::GridLimits& limits);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUFFT_NORMALIZE_KERNEL_H_
