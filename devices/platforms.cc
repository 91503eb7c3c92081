#include "devices/platforms.h"

#include <sstream>

#include "devices/device.h"

#if JITD_HAVE_CUDA
#include "devices/cuda/cuda_device.h"
#endif

namespace jitd::devices {
namespace {

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

DeviceAvailability Probe(const std::string& name) {
  DeviceAvailability d;
  d.name = name;
  if (name != "cuda") {
    d.available = true;
    return d;
  }
#if JITD_HAVE_CUDA
  const cuda::CudaProbe& probe = cuda::ProbeCuda();
  d.available = probe.available;
  d.reason = probe.reason;
  if (probe.runtime) {
    cuda::CudaRuntimeStats stats = probe.runtime->stats();
    d.gpu_name = probe.runtime->info().name;
    d.memory_used_bytes = stats.pool_used_bytes;
    d.memory_total_bytes = stats.device_total_bytes;
    d.context_resets = stats.context_resets;
    d.pinned_bytes = stats.pinned_bytes;
    d.registered_bytes = stats.registered_bytes;
    if (!stats.lost.empty()) {  // a sticky error the driver would not reset
      d.available = false;
      d.reason = "lost: " + stats.lost;
    }
  }
  if (probe.available) d.libraries = cuda::CudaLibrariesLine();
  if (probe.available) d.ptx_assembly = cuda::CudaPtxAssemblyLine();
#else
  d.reason = "this build has no cuda device (cuda.h was not found when it was built)";
#endif
  return d;
}

}  // namespace

std::vector<DeviceAvailability> ProbeDevices() {
  std::vector<DeviceAvailability> out;
  for (const std::string& name : DeviceNames()) out.push_back(Probe(name));
  return out;
}

std::vector<std::string> AvailableDeviceNames() {
  std::vector<std::string> out;
  for (const DeviceAvailability& d : ProbeDevices()) {
    if (d.available) out.push_back(d.name);
  }
  return out;
}

StatusOr<std::string> ResolveDevice(std::string_view requested, std::string* fallback_note) {
  const std::vector<DeviceAvailability> devices = ProbeDevices();
  auto find = [&](std::string_view name) -> const DeviceAvailability* {
    for (const DeviceAvailability& d : devices) {
      if (d.name == name) return &d;
    }
    return nullptr;
  };
  if (requested == "auto") {
    std::string skipped;
    for (std::string_view name : kDefaultPlatformOrder) {
      const DeviceAvailability* d = find(name);
      if (d && d->available) {
        if (fallback_note && !skipped.empty()) {
          *fallback_note = "No GPU found, falling back to " + std::string(name) + ": " + skipped;
        }
        return std::string(name);
      }
      if (d) skipped += (skipped.empty() ? "" : "; ") + d->reason;
    }
    return NotFound("no default device available: " + skipped);
  }
  const DeviceAvailability* d = find(requested);
  if (!d) {
    std::string known;
    for (const DeviceAvailability& k : devices) known += (known.empty() ? "" : ", ") + k.name;
    return NotFound("unknown device '" + std::string(requested) + "' (this build has: " + known +
                    ")");
  }
  if (!d->available) return NotFound(d->name + ": unavailable (" + d->reason + ")");
  return d->name;
}

std::string DeviceLost(std::string_view name) {
#if JITD_HAVE_CUDA
  if (name == "cuda") {
    const cuda::CudaProbe& probe = cuda::ProbeCuda();
    if (probe.runtime != nullptr) return probe.runtime->lost();
  }
#else
  (void)name;
#endif
  return "";
}

#if JITD_HAVE_CUDA
namespace {
class CudaHostRegistration final : public HostMemoryRegistration {
 public:
  explicit CudaHostRegistration(std::unique_ptr<cuda::CudaHostMemory> host) : host_(std::move(host)) {}
  bool pinned() const override { return host_->registered(); }
  uint64_t bytes() const override { return host_->bytes(); }
  std::string staging_reason() const override { return host_->staging_reason(); }

 private:
  std::unique_ptr<cuda::CudaHostMemory> host_;
};
}  // namespace
#endif

StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, uint64_t bytes) {
#if JITD_HAVE_CUDA
  const cuda::CudaProbe& probe = cuda::ProbeCuda();
  // No GPU, or one lost to this process: nothing to pin for.
  if (!probe.available || probe.runtime == nullptr || !probe.runtime->lost().empty()) {
    return std::unique_ptr<HostMemoryRegistration>();
  }
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<cuda::CudaHostMemory> host, probe.runtime->RegisterHost(data, bytes));
  return std::unique_ptr<HostMemoryRegistration>(new CudaHostRegistration(std::move(host)));
#else
  (void)data;
  (void)bytes;
  return std::unique_ptr<HostMemoryRegistration>();
#endif
}

std::string DevicesJson() {
  std::ostringstream out;
  out << "[";
  bool first = true;
  for (const DeviceAvailability& d : ProbeDevices()) {
    out << (first ? "" : ",") << "{\"name\":" << JsonString(d.name)
        << ",\"available\":" << (d.available ? "true" : "false");
    if (!d.reason.empty()) out << ",\"reason\":" << JsonString(d.reason);
    if (!d.gpu_name.empty()) {
      out << ",\"gpu\":" << JsonString(d.gpu_name) << ",\"memory_used_bytes\":"
          << d.memory_used_bytes << ",\"memory_total_bytes\":" << d.memory_total_bytes
          << ",\"context_resets\":" << d.context_resets << ",\"pinned_bytes\":" << d.pinned_bytes
          << ",\"registered_bytes\":" << d.registered_bytes;
    }
    if (!d.libraries.empty()) out << ",\"libraries\":" << JsonString(d.libraries);
    if (!d.ptx_assembly.empty()) out << ",\"ptx_assembly\":" << JsonString(d.ptx_assembly);
    out << "}";
    first = false;
  }
  out << "]";
  return out.str();
}

}  // namespace jitd::devices
