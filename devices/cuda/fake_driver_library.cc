// Test support: the fake driver (fake_driver.h) as a shared library named
// libcuda.so.1, so a real jitd process can be pointed at it
// (JITD_CUDA_DRIVER=<its folder>) and run its cuda device end to end
// without a GPU: LoadCudaDriver dlopens it, finds cuGetProcAddress_v2 and
// resolves every symbol to the fake's functions. Kernels do nothing here
// (no test installs any), so results are not computed: what this checks
// is everything around them. $JITD_FAKE_CUDA_SM ("100") sets the GPU's
// compute capability (default 90). Built into its own folder, never beside
// jitd's libraries, so nothing finds it by accident.
#include <cstdlib>
#include <cstring>

#include "devices/cuda/fake_driver.h"

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
