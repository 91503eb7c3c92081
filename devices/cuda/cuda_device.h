// The cuda device: the daemon's one GPU (GPU 0) behind devices/device.h.
//
// The first use in a process probes the machine once (ProbeCuda): loads
// libcuda (cuda_symbols.h), opens GPU 0 with its primary context and pool
// (cuda_runtime.h). What it found is kept for the process's life and
// shared: every CudaDevice uses that one runtime.
//
// Thread safety: ProbeCuda and CudaDevice are thread-safe.
#ifndef JITD_DEVICES_CUDA_CUDA_DEVICE_H_
#define JITD_DEVICES_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "devices/cuda/cuda_runtime.h"
#include "devices/device.h"

namespace jitd::devices::cuda {

// What the probe found. Plain value, fixed once made.
struct CudaProbe {
  // The device can run programs: a driver, a GPU, and a code generator.
  bool available = false;
  // Why not ("" when available): "libcuda.so.1 not found (searched ...)",
  // "no CUDA device", "driver too old: ...", ...
  std::string reason;
  // GPU 0, opened, when the driver and a GPU are there (even when the
  // device is not available for another reason); lives until exit.
  CudaRuntime* runtime = nullptr;
  std::string driver_path;  // the libcuda loaded ("" when none)
};

// Probes once per process (later calls return the same result).
const CudaProbe& ProbeCuda();

class CudaDevice final : public Device {
 public:
  // NOT_FOUND "cuda: unavailable (<reason>)" when ProbeCuda says so.
  static StatusOr<std::unique_ptr<CudaDevice>> Create();

  std::string_view name() const override { return "cuda"; }
  StatusOr<std::unique_ptr<Executable>> Compile(std::shared_ptr<const ir::Module> module,
                                                const CompileOptions& options) const override;
  CudaRuntime& runtime() const { return *runtime_; }

 private:
  explicit CudaDevice(CudaRuntime* runtime) : runtime_(runtime) {}
  CudaRuntime* runtime_;
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_DEVICE_H_
