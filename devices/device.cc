#include "devices/device.h"

#include "devices/cpu/cpu_device.h"
#include "devices/interpreter/interpreter_device.h"

namespace jitd::devices {

std::vector<std::string> DeviceNames() { return {"interpreter", "cpu"}; }

StatusOr<std::unique_ptr<Device>> CreateDevice(std::string_view name) {
  if (name == "interpreter") return std::unique_ptr<Device>(new InterpreterDevice());
  if (name == "cpu") {
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<cpu::CpuDevice> device, cpu::CpuDevice::Create());
    return std::unique_ptr<Device>(std::move(device));
  }
  std::string known;
  for (const std::string& n : DeviceNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFound("unknown device '" + std::string(name) + "' (this build has: " + known + ")");
}

}  // namespace jitd::devices
