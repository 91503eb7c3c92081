#include "devices/cuda/cuda_status.h"

namespace jitd::devices::cuda {

std::string CudaErrorText(const CudaSymbols& symbols, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (symbols.cuGetErrorName) (void)symbols.cuGetErrorName(result, &name);
  if (symbols.cuGetErrorString) (void)symbols.cuGetErrorString(result, &text);
  std::string out = name ? std::string(name) : "CUresult " + std::to_string(static_cast<int>(result));
  if (text) out += std::string(" (") + text + ")";
  return out;
}

bool IsStickyError(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

Status CudaStatus(const CudaSymbols& symbols, CUresult result, std::string_view what) {
  if (result == CUDA_SUCCESS) return Status::Ok();
  std::string message = std::string(what) + ": " + CudaErrorText(symbols, result);
  StatusCode code = StatusCode::kInternal;
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    code = StatusCode::kResourceExhausted;
  } else if (IsStickyError(result) || result == CUDA_ERROR_NO_DEVICE) {
    code = StatusCode::kUnavailable;
  } else if (result == CUDA_ERROR_INVALID_VALUE || result == CUDA_ERROR_INVALID_HANDLE ||
             result == CUDA_ERROR_NOT_FOUND || result == CUDA_ERROR_INVALID_IMAGE) {
    code = StatusCode::kInvalidArgument;
  }
  return Status(code, std::move(message));
}

}  // namespace jitd::devices::cuda
