// The CUDA driver API as a table of function pointers, loaded at run time.
//
// jitd never links libcuda (nor the toolkit's stub): LoadCudaDriver dlopens
// libcuda.so.1 and resolves every entry through cuGetProcAddress (v2) with
// the CUDA version of the cuda.h we compiled against, so one binary runs
// with or without a GPU and each absence is reported by name. Everything in
// devices/cuda calls the driver through a CudaSymbols, which is a plain
// struct so tests can fill one with a fake driver (fake_driver.h).
//
// Thread safety: a filled table is immutable and shared freely. Lifetime: a
// CudaDriverLibrary keeps libcuda loaded while it lives; the process-wide
// one (SharedCudaDriver) lives until exit.
#ifndef JITD_DEVICES_CUDA_CUDA_SYMBOLS_H_
#define JITD_DEVICES_CUDA_CUDA_SYMBOLS_H_

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace jitd::devices::cuda {

// Every driver entry point jitd uses. The names are the API names; cuda.h
// maps some to versioned symbols (cuMemHostRegister -> _v2), which the
// field types follow, and cuGetProcAddress resolves the base name at
// CUDA_VERSION to the matching version.
#define JITD_CUDA_SYMBOLS(X)                                                         \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)              \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem)          \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)   \
  X(cuDevicePrimaryCtxReset) X(cuCtxSetCurrent) X(cuCtxSynchronize)                  \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamWaitEvent)   \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize)          \
  X(cuEventQuery) X(cuEventElapsedTime)                                              \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel)     \
  X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolSetAttribute)                    \
  X(cuMemPoolGetAttribute) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)              \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyDtoDAsync) X(cuMemsetD8Async)   \
  X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemAllocHost) X(cuMemFreeHost)     \
  X(cuMemGetInfo)

// The driver table. All fields are set in a table the loader returns.
struct CudaSymbols {
#define JITD_CUDA_SYMBOL_FIELD(name) decltype(&::name) name = nullptr;
  JITD_CUDA_SYMBOLS(JITD_CUDA_SYMBOL_FIELD)
#undef JITD_CUDA_SYMBOL_FIELD
};

// The base names of JITD_CUDA_SYMBOLS, in order (for messages and tests).
std::vector<std::string> CudaSymbolNames();

// Where LoadCudaDriver looks for libcuda.so.1, in order.
struct CudaDriverSearch {
  // Tried first when set: a file, or a folder holding libcuda.so.1.
  // LoadCudaDriver fills it from $JITD_CUDA_DRIVER.
  std::string env_path;
  // Then the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache)
  // when true, then these folders.
  bool use_loader_path = true;
  std::vector<std::string> folders = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
                                      "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"};
};

// A loaded libcuda.so.1 and its table. Not copyable; unloads on destruction.
class CudaDriverLibrary {
 public:
  ~CudaDriverLibrary();
  CudaDriverLibrary(const CudaDriverLibrary&) = delete;
  CudaDriverLibrary& operator=(const CudaDriverLibrary&) = delete;

  const CudaSymbols& symbols() const { return symbols_; }
  const std::string& path() const { return path_; }  // the file loaded

 private:
  friend StatusOr<std::unique_ptr<CudaDriverLibrary>> LoadCudaDriver(const CudaDriverSearch&);
  CudaDriverLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
  CudaSymbols symbols_;
};

// Loads libcuda.so.1 and resolves every symbol. Errors, by name:
// NOT_FOUND "libcuda.so.1 not found (searched ...)"; FAILED_PRECONDITION
// "driver too old: ..." when it lacks cuGetProcAddress_v2 or a symbol at
// our CUDA version; "... is the CUDA toolkit's stub" for the stub library.
// Does not call cuInit (CudaRuntime::Open does).
StatusOr<std::unique_ptr<CudaDriverLibrary>> LoadCudaDriver(const CudaDriverSearch& search);
// With the default search and $JITD_CUDA_DRIVER.
StatusOr<std::unique_ptr<CudaDriverLibrary>> LoadCudaDriver();

// `symbol` looked up (dlsym) in the driver LoadCudaDriver last loaded in
// this process and that is still loaded, or null. The CUDA libraries ask
// it whether the driver is jitd's fake (its `jitd_fake_cuda_libraries`).
void* FindInLoadedCudaDriver(const char* symbol);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_SYMBOLS_H_
