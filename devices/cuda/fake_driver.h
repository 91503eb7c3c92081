// Test support: an in-process fake of the CUDA driver behind a CudaSymbols
// table, so the runtime's bookkeeping is tested without a GPU.
//
// Device memory is host malloc (a CUdeviceptr is the host address); copies
// are memcpy and run at once; kernels are host functions a test installs by
// name; a "cubin" is FakeDriver::Cubin's text naming its kernels, or a real
// ELF cubin or PTX text (whose symbol / entry names are its kernels, which
// do nothing unless a test installs them). Every call
// is counted by name. A kernel (or InjectStickyError) can break the
// context: every call then fails with that sticky error until
// cuDevicePrimaryCtxReset, which frees everything the context held, as the
// real driver does. Handles are checked: a stream, event, module, pointer
// or context not alive in the current context is refused, so use after a
// reset or after free shows up as an error. Timing events measure 0.5 ms
// per launch between their records.
//
// One FakeDriver at a time per process (the table's functions are plain C
// functions that find it through a global). Thread-safe.
#ifndef JITD_DEVICES_CUDA_FAKE_DRIVER_H_
#define JITD_DEVICES_CUDA_FAKE_DRIVER_H_

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "devices/cuda/cuda_symbols.h"

namespace jitd::devices::cuda {

struct FakeDriverOptions {
  int devices = 1;
  int driver_version = 13000;
  CUresult init_result = CUDA_SUCCESS;   // what cuInit answers
  uint64_t device_bytes = uint64_t{64} << 20;
  bool memory_pools = true;
  std::string name = "Fake GPU";
  int sm_major = 9;  // compute capability: sm_90
  int sm_minor = 0;
  // Bytes past malloc's (16-byte aligned) address that pool allocations
  // start: a driver aligning less than jitd's kernels assume.
  uint64_t allocation_offset = 0;
  // A sticky error breaks the GPU for the whole process, as NVIDIA's
  // driver 580 did on an H200 (2026-11-29): cuDevicePrimaryCtxReset
  // succeeds, but every later cuDevicePrimaryCtxRetain answers the error.
  bool sticky_errors_outlive_reset = false;
  // What a launch of a kernel without SetKernel answers (a sticky error
  // breaks the context, as a faulting kernel does; default: success).
  CUresult unset_kernel_result = CUDA_SUCCESS;
};

class FakeDriver {
 public:
  using Kernel = std::function<CUresult(void** params, unsigned grid_x, unsigned block_x)>;

  explicit FakeDriver(FakeDriverOptions options = {});
  ~FakeDriver();
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  const CudaSymbols& symbols() const { return symbols_; }

  // A fake cubin holding `kernels`.
  static std::string Cubin(const std::vector<std::string>& kernels);
  // What a launch of kernel `name` runs (default: nothing, success).
  void SetKernel(const std::string& name, Kernel kernel);
  // Breaks the context as a faulting kernel would.
  void InjectStickyError(CUresult error);
  // The result cuMemHostRegister gives (default: success).
  void SetHostRegisterResult(CUresult result);
  // The next `times` cuModuleLoadData calls answer `result` (a reload that
  // fails after a context reset, say for memory).
  void FailModuleLoads(CUresult result, int times);

  // Observations.
  int calls(std::string_view name) const;
  int context_resets() const;
  bool broken() const;
  size_t live_allocations() const;
  uint64_t device_bytes_in_use() const;
  size_t live_streams() const;
  size_t live_events() const;
  size_t live_modules() const;
  uint64_t registered_host_bytes() const;
  uint64_t pinned_host_bytes() const;  // cuMemAllocHost
  std::vector<unsigned> host_register_flags() const;
  std::vector<std::string> launched() const;  // kernel names, in launch order

  // The table's entry points (public so the C functions can reach them).
  struct State;
  State& state() { return *state_; }

 private:
  CudaSymbols symbols_;
  State* state_;
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_FAKE_DRIVER_H_
