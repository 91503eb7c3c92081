#include "devices/cuda/cuda_device.h"

#include <cstdio>

namespace jitd::devices::cuda {
namespace {

// Whether this build turns modules into CudaPrograms and runs them. Until
// the NVPTX code generator and the executable are linked in (issue 14,
// items 1-2), a machine with a GPU still has no usable cuda device, and
// clients asking for the default platform get cpu.
constexpr bool kCanCompile = false;

CudaProbe Probe() {
  CudaProbe probe;
  StatusOr<std::unique_ptr<CudaDriverLibrary>> driver = LoadCudaDriver();
  if (!driver.ok()) {
    probe.reason = driver.status().message();
    return probe;
  }
  probe.driver_path = (*driver)->path();
  // Both live until exit: the device and its clients may run to the end.
  CudaDriverLibrary* library = driver->release();
  StatusOr<std::unique_ptr<CudaRuntime>> runtime = CudaRuntime::Open(library->symbols());
  if (!runtime.ok()) {
    probe.reason = runtime.status().message();
    return probe;
  }
  probe.runtime = runtime->release();
  if (!kCanCompile) {
    const CudaDeviceInfo& info = probe.runtime->info();
    probe.reason = "GPU 0 (" + info.name + ", sm_" + std::to_string(info.sm_major) +
                   std::to_string(info.sm_minor) +
                   ") is there, but this build cannot compile programs for it yet";
    return probe;
  }
  probe.available = true;
  return probe;
}

}  // namespace

const CudaProbe& ProbeCuda() {
  static const CudaProbe probe = Probe();
  return probe;
}

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create() {
  const CudaProbe& probe = ProbeCuda();
  if (!probe.available) return NotFound("cuda: unavailable (" + probe.reason + ")");
  return std::unique_ptr<CudaDevice>(new CudaDevice(probe.runtime));
}

StatusOr<std::unique_ptr<Executable>> CudaDevice::Compile(std::shared_ptr<const ir::Module> module,
                                                          const CompileOptions& options) const {
  (void)module;
  (void)options;
  return Unimplemented("cuda: this build cannot compile programs for the GPU yet");
}

}  // namespace jitd::devices::cuda
