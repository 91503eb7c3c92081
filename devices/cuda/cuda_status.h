// CUresult -> jitd Status: where driver errors enter jitd (one macro).
#ifndef JITD_DEVICES_CUDA_CUDA_STATUS_H_
#define JITD_DEVICES_CUDA_CUDA_STATUS_H_

#include <cuda.h>

#include <string>
#include <string_view>

#include "base/status.h"
#include "devices/cuda/cuda_symbols.h"

namespace jitd::devices::cuda {

// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)",
// through the table's cuGetErrorName / cuGetErrorString when it has them,
// else "CUresult 700".
std::string CudaErrorText(const CudaSymbols& symbols, CUresult result);

// Whether `result` leaves the context unusable until it is re-created
// (illegal address, illegal instruction, launch failure, ...).
bool IsStickyError(CUresult result);

// OK for CUDA_SUCCESS; otherwise "<what>: <CudaErrorText>" with a code:
// RESOURCE_EXHAUSTED for out-of-memory, UNAVAILABLE for sticky errors and
// a missing device, INVALID_ARGUMENT for invalid values / handles the
// caller passed, INTERNAL otherwise.
Status CudaStatus(const CudaSymbols& symbols, CUresult result, std::string_view what);

}  // namespace jitd::devices::cuda

// Returns CudaStatus(symbols, expr, what) from the enclosing function when
// `expr` (a driver call) fails.
#define JITD_CUDA_RETURN_IF_ERROR(symbols, expr, what)                              \
  do {                                                                              \
    CUresult jitd_cu_result_ = (expr);                                              \
    if (jitd_cu_result_ != CUDA_SUCCESS) {                                          \
      return ::jitd::devices::cuda::CudaStatus((symbols), jitd_cu_result_, (what)); \
    }                                                                               \
  } while (0)

#endif  // JITD_DEVICES_CUDA_CUDA_STATUS_H_
