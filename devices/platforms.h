// Platforms: which of the devices this build has can run on this machine,
// and which one a client that names none gets.
//
// The default order is cuda, then cpu (the seeds' platform order). cuda is
// there only with a driver, a GPU and a code generator; when it is not,
// the reason says which is missing, and a client asking for the default
// gets cpu with one warning: "No GPU found, falling back to cpu: <reason>".
// Probing cuda loads libcuda and opens GPU 0 once per process
// (devices/cuda/cuda_device.h); interpreter and cpu are always there.
//
// Thread safety: all functions are thread-safe.
#ifndef JITD_DEVICES_PLATFORMS_H_
#define JITD_DEVICES_PLATFORMS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace jitd::devices {

// One device this build has, as this machine sees it. Plain value.
struct DeviceAvailability {
  std::string name;     // "interpreter", "cpu", "cuda"
  bool available = false;
  std::string reason;   // why not ("" when available)
  // A GPU's name and memory when one was opened (even when the device is
  // unavailable for another reason); empty / 0 otherwise.
  std::string gpu_name;
  uint64_t memory_used_bytes = 0;   // jitd's pool on it
  uint64_t memory_total_bytes = 0;
  uint64_t context_resets = 0;
  // Host memory the daemon pinned for it: client segments registered at
  // attach plus the staging pool (under one cap).
  uint64_t pinned_bytes = 0;
  uint64_t registered_bytes = 0;
  // cuda, when available: the CUDA libraries its ops call, or why not
  // ("cuBLASLt 130000 (...); cuFFT ...; cuDNN absent: ...").
  std::string libraries;
  // cuda, when available: how PTX becomes a cubin (nvJitLink, ptxas, or
  // the driver's JIT and why).
  std::string ptx_assembly;
};

// Every device this build has, in DeviceNames() order (probes once).
std::vector<DeviceAvailability> ProbeDevices();
// The names of the available ones.
std::vector<std::string> AvailableDeviceNames();
// The platforms a client that names none tries, in order.
inline constexpr std::string_view kDefaultPlatformOrder[] = {"cuda", "cpu"};

// The device for `requested`: itself when it is a device this machine can
// run ("auto" = the first available of kDefaultPlatformOrder). When
// "auto" skips a device, *fallback_note (if given) says so: "No GPU found,
// falling back to cpu: <reason>". NOT_FOUND naming the reason for an
// unavailable device asked for by name, or naming the known devices.
StatusOr<std::string> ResolveDevice(std::string_view requested, std::string* fallback_note);

// Why device `name`, available when it was probed, can no longer run
// anything in this process (cuda: a sticky error the driver would not
// reset, CudaRuntimeStats::lost); empty while it can. Cheap: no probe.
std::string DeviceLost(std::string_view name);

// A client's host memory made reachable for fast GPU copies while this
// lives (cuda: cuMemHostRegister with flags 0 — never IOMEMORY — while the
// daemon's pinned bytes stay under their cap; past it, or when the driver
// refuses, copies stage through the daemon's pinned pool). Pinning commits
// every page of the range. Unregistered when destroyed; must go before the
// memory is unmapped.
class HostMemoryRegistration {
 public:
  virtual ~HostMemoryRegistration() = default;
  virtual bool pinned() const = 0;
  virtual uint64_t bytes() const = 0;
  // Why the range is not pinned ("" when it is).
  virtual std::string staging_reason() const = 0;
};
// Registers [data, data + bytes) with the GPU device when one is available
// (nullptr when none is: nothing to do); an error only when the GPU's
// context is broken.
StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, uint64_t bytes);

// {"name":..,"available":..,"reason":..,"gpu":..,"memory_used_bytes":..,
// "memory_total_bytes":..} per device, as a JSON array (for jitd stats).
std::string DevicesJson();

}  // namespace jitd::devices

#endif  // JITD_DEVICES_PLATFORMS_H_
