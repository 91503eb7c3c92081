#include "devices/device.h"

#include "devices/cpu/cpu_device.h"
#include "devices/interpreter/interpreter_device.h"

#if JITD_HAVE_CUDA
#include "devices/cuda/cuda_device.h"
#endif

namespace jitd::devices {

// cuda is listed even where it cannot run (devices/platforms.h says why).
std::vector<std::string> DeviceNames() { return {"interpreter", "cpu", "cuda"}; }

StatusOr<std::unique_ptr<Device>> CreateDevice(std::string_view name) {
  if (name == "interpreter") return std::unique_ptr<Device>(new InterpreterDevice());
  if (name == "cpu") {
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuDevice> device, cpu::CpuDevice::Create());
    return std::unique_ptr<Device>(std::move(device));
  }
  if (name == "cuda") {
#if JITD_HAVE_CUDA
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaDevice> device, cuda::CudaDevice::Create());
    return std::unique_ptr<Device>(std::move(device));
#else
    return NotFound("cuda: unavailable (this build has no cuda device: cuda.h was not found "
                    "when it was built)");
#endif
  }
  std::string known;
  for (const std::string& n : DeviceNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFound("unknown device '" + std::string(name) + "' (this build has: " + known + ")");
}

}  // namespace jitd::devices
