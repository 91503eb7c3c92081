// `jitd serve --default-device=auto` on a machine whose GPU the daemon
// loses: the fake driver (built as a libcuda.so.1, JITD_CUDA_DRIVER) with
// $JITD_FAKE_CUDA_LAUNCHES_FAULT=1 faults at every kernel launch and makes
// no new context after it, as NVIDIA's driver 580 did on an H200. A
// process of its own (the fake driver reads its environment once).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "daemon/test_daemon.h"
#include "libclient/client.h"

namespace jitd::daemon {
namespace {

constexpr char kAdd[] = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// Compiles kAdd on `device` ("" = the daemon's default) and runs it on
// 1..4 and 10..40: the sums, or the first failure.
StatusOr<std::vector<float>> Add(client::Client& client, const std::string& device = "") {
  client::CompileOptions options;
  options.device = device;
  JITD_ASSIGN_OR_RETURN(client::Executable exe, client.Compile(kAdd, options));
  const client::TensorShape shape = exe.arguments[0];
  JITD_ASSIGN_OR_RETURN(client::Buffer a, client.AllocateBuffer(shape));
  JITD_ASSIGN_OR_RETURN(client::Buffer b, client.AllocateBuffer(shape));
  JITD_ASSIGN_OR_RETURN(client::Buffer out, client.AllocateBuffer(shape));
  const float as[4] = {1, 2, 3, 4}, bs[4] = {10, 20, 30, 40};
  std::memcpy(a.data.data(), as, sizeof(as));
  std::memcpy(b.data.data(), bs, sizeof(bs));
  const uint64_t args[] = {a.handle, b.handle};
  const uint64_t results[] = {out.handle};
  JITD_RETURN_IF_ERROR(client.Execute(exe.handle, args, results).status());
  std::vector<float> sums(4);
  std::memcpy(sums.data(), out.data.data(), sizeof(float) * 4);
  return sums;
}

// The default `auto` chose cuda; once the GPU is lost, requests naming no
// device go to cpu (and clients are told so), instead of failing on cuda
// until the daemon restarts.
TEST(AutoDefaultDeviceTest, RequestsNamingNoDeviceGoOnOnCpuOnceTheGpuIsLost) {
  ::setenv("JITD_CUDA_DRIVER", JITD_FAKE_LIBCUDA_DIR, 1);
  ::setenv("JITD_FAKE_CUDA_LAUNCHES_FAULT", "1", 1);
  InstanceOptions instance;
  instance.default_device = "cuda";
  instance.default_device_is_auto = true;
  auto daemon = testing::TestDaemon::Start("auto_default_device_test", testing::TestDaemon::Sessions(),
                                           instance);
  ASSERT_NE(daemon, nullptr);
  auto client = client::Client::Connect(daemon->socket());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->daemon_default_device(), "cuda");

  // On cuda: the kernel faults, and the GPU is lost to the process.
  auto sums = Add(**client);
  ASSERT_FALSE(sums.ok());
  EXPECT_EQ(sums.status().code(), StatusCode::kUnavailable) << sums.status().ToString();
  EXPECT_NE(sums.status().message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << sums.status().message();
  EXPECT_NE(sums.status().message().find("only a new process can use the GPU"), std::string::npos)
      << sums.status().message();

  // The same program, naming no device: cpu runs it.
  sums = Add(**client);
  ASSERT_TRUE(sums.ok()) << sums.status().ToString();
  EXPECT_EQ(*sums, (std::vector<float>{11, 22, 33, 44}));
  auto later = client::Client::Connect(daemon->socket());
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ((*later)->daemon_default_device(), "cpu");

  // Named, cuda still says why not.
  sums = Add(**client, "cuda");
  ASSERT_FALSE(sums.ok());
  EXPECT_NE(sums.status().message().find("the GPU is unusable in this process"), std::string::npos)
      << sums.status().message();
}

// With the default named (not `auto`), nothing moves: requests naming no
// device keep getting cuda, and its error.
TEST(AutoDefaultDeviceTest, ANamedDefaultDeviceStays) {
  ::setenv("JITD_CUDA_DRIVER", JITD_FAKE_LIBCUDA_DIR, 1);
  ::setenv("JITD_FAKE_CUDA_LAUNCHES_FAULT", "1", 1);
  InstanceOptions instance;
  instance.default_device = "cuda";
  auto daemon = testing::TestDaemon::Start("named_default_device_test", testing::TestDaemon::Sessions(),
                                           instance);
  ASSERT_NE(daemon, nullptr);
  auto client = client::Client::Connect(daemon->socket());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto sums = Add(**client);  // loses the GPU (or it was lost before)
  ASSERT_FALSE(sums.ok());
  sums = Add(**client);
  ASSERT_FALSE(sums.ok());
  EXPECT_NE(sums.status().message().find("only a new process can use the GPU"), std::string::npos)
      << sums.status().message();
  auto later = client::Client::Connect(daemon->socket());
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ((*later)->daemon_default_device(), "cuda");
}

}  // namespace
}  // namespace jitd::daemon
