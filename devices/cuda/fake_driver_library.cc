// Test support: the fake driver (fake_driver.h) as a shared library named
// libcuda.so.1, so a real jitd process can be pointed at it
// (JITD_CUDA_DRIVER=<its folder>) and run its cuda device end to end
// without a GPU: LoadCudaDriver dlopens it, finds cuGetProcAddress_v2 and
// resolves every symbol to the fake's functions. Kernels do nothing here
// (no test installs any), so their results are not computed: what this
// checks is everything around them. Library calls are: the process takes
// this library's fake cuBLASLt / cuFFT / cuDNN tables
// (jitd_fake_cuda_libraries, asked by SharedCudaLibraries) instead of the
// real libraries, which find no GPU through a fake driver; they compute
// f32 / f64 matmuls and convolutions on the fake's host-memory "device". $JITD_FAKE_CUDA_SM ("100") sets the GPU's
// compute capability (default 90). Built into its own folder, never beside
// jitd's libraries, so nothing finds it by accident.
#include <cstdlib>
#include <cstring>

#include "devices/cuda/fake_driver.h"
#include "devices/cuda/fake_libraries.h"

namespace {

const jitd::devices::cuda::CudaSymbols& Table() {
  static jitd::devices::cuda::FakeDriver* fake = [] {
    jitd::devices::cuda::FakeDriverOptions options;
    options.name = "Fake GPU (libcuda.so.1 of jitd's tests)";
    // $JITD_FAKE_CUDA_SM ("100" = sm_100): another GPU for cache-key tests.
    if (const char* sm = std::getenv("JITD_FAKE_CUDA_SM"); sm && std::strlen(sm) >= 2) {
      const int value = std::atoi(sm);
      if (value >= 10) {
        options.sm_major = value / 10;
        options.sm_minor = value % 10;
      }
    }
    // $JITD_FAKE_CUDA_LAUNCHES_FAULT=1: every kernel launch meets an
    // illegal address, and the driver makes no new context after it, as
    // NVIDIA's driver 580 did on an H200 (the GPU is lost to the process).
    if (const char* fault = std::getenv("JITD_FAKE_CUDA_LAUNCHES_FAULT"); fault && std::strcmp(fault, "1") == 0) {
      options.unset_kernel_result = CUDA_ERROR_ILLEGAL_ADDRESS;
      options.sticky_errors_outlive_reset = true;
    }
    return new jitd::devices::cuda::FakeDriver(options);  // lives until exit
  }();
  return fake->symbols();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
    CUdriverProcAddressQueryResult* status) {
  (void)cuda_version;
  (void)flags;
  const jitd::devices::cuda::CudaSymbols& table = Table();
  *pfn = nullptr;
#define JITD_FAKE_LOOKUP(name) \
  if (std::strcmp(symbol, #name) == 0) *pfn = reinterpret_cast<void*>(table.name);
  JITD_CUDA_SYMBOLS(JITD_FAKE_LOOKUP)
#undef JITD_FAKE_LOOKUP
  if (status) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

// The fake library tables, computing (see the top of this file). 1: given.
extern "C" __attribute__((visibility("default"))) int jitd_fake_cuda_libraries(const void** cublaslt,
                                                                              const void** cufft,
                                                                              const void** cudnn) {
  jitd::devices::cuda::FakeLibraries().compute = true;
  *cublaslt = &jitd::devices::cuda::FakeCublasLtSymbols();
  *cufft = &jitd::devices::cuda::FakeCufftSymbols();
  *cudnn = &jitd::devices::cuda::FakeCudnnSymbols();
  return 1;
}
