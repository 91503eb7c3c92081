// The kernel before a cuDNN convolution whose filter is not KCRS: a flat
// grid-stride permutation of its elements (moved as integers of the
// element's size) into a scratch buffer, result dimension k being the
// operand's dimension permutation[k].
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias operand, ptr addrspace(1) noalias result)
#ifndef JITD_DEVICES_CUDA_CUDNN_FILTER_KERNEL_H_
#define JITD_DEVICES_CUDA_CUDNN_FILTER_KERNEL_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"

namespace llvm {
class Module;
}

namespace jitd::devices::cuda {

// INVALID_ARGUMENT for a permutation that is not one of dims' indices, an
// element size other than 1, 2, 4, 8 or 16, or an empty operand.
StatusOr<codegen::GridPlan> EmitPermuteKernel(llvm::Module& module, const std::string& name, int64_t element_bytes,
                                              const std::vector<int64_t>& dims,
                                              const std::vector<int64_t>& permutation,
                                              const codegen::GridLimits& limits);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDNN_FILTER_KERNEL_H_
