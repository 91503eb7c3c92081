// Platform selection on this machine. Where the cuda device cannot run (no
// driver or no GPU), "auto" falls back to cpu with a note, and naming cuda
// is NOT_FOUND with the reason; on a GPU machine "auto" is cuda.
#include "devices/platforms.h"

#include <gtest/gtest.h>

#include "devices/device.h"

namespace jitd::devices {
namespace {

const DeviceAvailability* Find(const std::vector<DeviceAvailability>& all, std::string_view name) {
  for (const DeviceAvailability& d : all) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

TEST(Platforms, EveryBuiltDeviceIsProbed) {
  std::vector<DeviceAvailability> all = ProbeDevices();
  ASSERT_EQ(all.size(), DeviceNames().size());
  ASSERT_NE(Find(all, "cpu"), nullptr);
  EXPECT_TRUE(Find(all, "cpu")->available);
  EXPECT_TRUE(Find(all, "interpreter")->available);
  const DeviceAvailability* cuda = Find(all, "cuda");
  ASSERT_NE(cuda, nullptr);
  EXPECT_EQ(cuda->reason.empty(), cuda->available);
  std::vector<std::string> names = AvailableDeviceNames();
  if (cuda->available) {
    EXPECT_EQ(names, (std::vector<std::string>{"interpreter", "cpu", "cuda"}));
    EXPECT_FALSE(cuda->gpu_name.empty());
  } else {
    EXPECT_EQ(names, (std::vector<std::string>{"interpreter", "cpu"}));
  }
}

bool CudaRuns() { return Find(ProbeDevices(), "cuda")->available; }

TEST(Platforms, AutoIsCudaOnAGpuMachine) {
  if (!CudaRuns()) GTEST_SKIP() << "no usable GPU here: " << Find(ProbeDevices(), "cuda")->reason;
  std::string note;
  StatusOr<std::string> device = ResolveDevice("auto", &note);
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(*device, "cuda");
  EXPECT_TRUE(note.empty());
}

TEST(Platforms, AutoFallsBackToCpuSayingWhy) {
  if (CudaRuns()) GTEST_SKIP() << "this machine runs the cuda device";
  std::string note;
  StatusOr<std::string> device = ResolveDevice("auto", &note);
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  EXPECT_EQ(*device, "cpu");
  const std::string reason = Find(ProbeDevices(), "cuda")->reason;
  EXPECT_EQ(note, "No GPU found, falling back to cpu: " + reason);
}

TEST(Platforms, NamedDevices) {
  std::string note;
  StatusOr<std::string> cpu = ResolveDevice("cpu", &note);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(*cpu, "cpu");
  EXPECT_TRUE(note.empty());

  StatusOr<std::string> cuda = ResolveDevice("cuda", nullptr);
  if (CudaRuns()) {
    EXPECT_TRUE(cuda.ok());
    return;
  }
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cuda.status().message(),
            "cuda: unavailable (" + Find(ProbeDevices(), "cuda")->reason + ")");

  StatusOr<std::string> tpu = ResolveDevice("tpu", nullptr);
  ASSERT_FALSE(tpu.ok());
  EXPECT_EQ(tpu.status().message(), "unknown device 'tpu' (this build has: interpreter, cpu, cuda)");
}

TEST(Platforms, CreateDeviceCudaSaysWhy) {
  if (CudaRuns()) GTEST_SKIP() << "this machine runs the cuda device";
  auto device = CreateDevice("cuda");
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(device.status().message().rfind("cuda: unavailable (", 0), 0u)
      << device.status().message();
}

TEST(Platforms, DevicesJsonNamesTheReason) {
  if (CudaRuns()) GTEST_SKIP() << "this machine runs the cuda device";
  const std::string json = DevicesJson();
  EXPECT_EQ(json.rfind("[{\"name\":\"interpreter\",\"available\":true}", 0), 0u) << json;
  EXPECT_NE(json.find("{\"name\":\"cuda\",\"available\":false,\"reason\":\""), std::string::npos)
      << json;
}

}  // namespace
}  // namespace jitd::devices
