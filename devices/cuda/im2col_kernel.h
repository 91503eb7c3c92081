// The im2col kernel of the convolution fallback (im2col_plan.h): a flat
// grid-stride loop over the patch matrix [G][R][K], each element copied (as
// an integer of the element's size) from the input element Im2colSource
// names, or zero.
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias input, ptr addrspace(1) noalias patches)
#ifndef JITD_DEVICES_CUDA_IM2COL_KERNEL_H_
#define JITD_DEVICES_CUDA_IM2COL_KERNEL_H_

#include <string>

#include "base/status.h"
#include "devices/cuda/im2col_plan.h"
#include "jit/codegen/kernel_plan.h"

namespace llvm {
class Module;
}

namespace jitd::devices::cuda {

// INVALID_ARGUMENT for an element size other than 2, 4 or 8, an empty patch
// matrix or grid limits that are not positive.
StatusOr<codegen::GridPlan> EmitIm2colKernel(llvm::Module& module, const std::string& name,
                                             const Im2colConvPlan& plan, const codegen::GridLimits& limits);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_IM2COL_KERNEL_H_
