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

// {"name":..,"available":..,"reason":..,"gpu":..,"memory_used_bytes":..,
// "memory_total_bytes":..} per device, as a JSON array (for jitd stats).
std::string DevicesJson();

}  // namespace jitd::devices

#endif  // JITD_DEVICES_PLATFORMS_H_
