// Executes on device-resident buffers (session_device.cc) through a real
// daemon whose cuda device is the fake driver (built as a libcuda.so.1,
// JITD_CUDA_DRIVER): the same limits as every other execute, named the
// same way when they stop a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>

#include "daemon/test_daemon.h"
#include "libclient/client.h"

namespace jitd::daemon {
namespace {

// A loop whose condition is its carried value: with `true` it never ends.
// It needs no kernel (the condition is read back from the device, the body
// copies the value), so the fake driver, which runs no kernels, runs it as
// a GPU would.
constexpr char kLoopWhileTrue[] = R"(
func.func @main(%p: tensor<i1>) -> tensor<i1> {
  %0 = stablehlo.while(%it = %p) : tensor<i1>
   cond {
    stablehlo.return %it : tensor<i1>
  } do {
    stablehlo.return %it : tensor<i1>
  }
  return %0 : tensor<i1>
}
)";

TEST(SessionDeviceTest, TheExecutionTimeLimitIsNamedWhenItStopsADeviceResidentRun) {
  ::setenv("JITD_CUDA_DRIVER", JITD_FAKE_LIBCUDA_DIR, 1);
  SessionOptions session = testing::TestDaemon::Sessions();
  session.max_execute_time = std::chrono::milliseconds(200);
  auto daemon = testing::TestDaemon::Start("session_device_test", session);
  ASSERT_NE(daemon, nullptr);
  {
    auto client = client::Client::Connect(daemon->socket());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client::CompileOptions compile;
    compile.device = "cuda";
    auto exe = (*client)->Compile(kLoopWhileTrue, compile);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    const client::TensorShape shape = exe->arguments[0];
    auto host = (*client)->AllocateBuffer(shape);
    ASSERT_TRUE(host.ok()) << host.status().ToString();
    host->data[0] = 1;  // true
    auto in = (*client)->CreateDeviceBuffer("cuda", shape, &*host);
    auto out = (*client)->CreateDeviceBuffer("cuda", shape);
    ASSERT_TRUE(in.ok() && out.ok()) << in.status().ToString() << " " << out.status().ToString();
    const uint64_t args[] = {*in};
    const uint64_t results[] = {*out};

    // No deadline of its own: the daemon's limit stops it, and says so.
    const auto start = std::chrono::steady_clock::now();
    auto run = (*client)->Execute(exe->handle, args, results);
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().code(), StatusCode::kDeadlineExceeded) << run.status().ToString();
    EXPECT_NE(run.status().message().find("max_execute_time"), std::string::npos)
        << run.status().ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

    // A shorter deadline of the request's own is its own, not the limit.
    client::ExecuteOptions own;
    own.deadline = std::chrono::milliseconds(20);
    run = (*client)->Execute(exe->handle, args, results, own);
    ASSERT_FALSE(run.ok());
    EXPECT_EQ(run.status().code(), StatusCode::kDeadlineExceeded) << run.status().ToString();
    EXPECT_EQ(run.status().message().find("max_execute_time"), std::string::npos)
        << run.status().ToString();
  }
}

// The largest "registered_bytes" in the daemon's stats (client segments
// pinned for the GPU, per device).
uint64_t RegisteredBytes(client::Client& client) {
  auto stats = client.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (!stats.ok()) return 0;
  const std::regex field("\"registered_bytes\": *([0-9]+)");
  uint64_t most = 0;
  for (std::sregex_iterator it(stats->begin(), stats->end(), field), end; it != end; ++it) {
    most = std::max<uint64_t>(most, std::stoull((*it)[1].str()));
  }
  return most;
}

// RegisteredBytes once it is `want`, or after 5 s (a closed client's
// session, and its pinned memory, goes on the dispatcher's reaper thread).
uint64_t RegisteredBytesOnce(client::Client& client, uint64_t want) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  uint64_t bytes = RegisteredBytes(client);
  while (bytes != want && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    bytes = RegisteredBytes(client);
  }
  return bytes;
}

// Copies between a client's heap and device-resident buffers are direct
// only from pinned memory. A segment too large to pin whole (past the 1 GiB
// cap on pinned memory) has its heap's front pinned, as far as the buffers
// reach, by the first CreateBuffer or CopyBuffer that copies from or into
// it, or execute on device buffers with some host buffers, as by the first
// execute on host buffers (Session::PinHeapFront); before, these copies
// staged.
TEST(SessionDeviceTest, DeviceBufferCopiesPinTheHeapFront) {
  ::setenv("JITD_CUDA_DRIVER", JITD_FAKE_LIBCUDA_DIR, 1);
  SessionOptions session = testing::TestDaemon::Sessions();
  session.segment_bytes = uint64_t{2} << 30;  // sparse: nothing is committed
  auto daemon = testing::TestDaemon::Start("session_device_pin_test", session);
  ASSERT_NE(daemon, nullptr);
  constexpr uint64_t kFront = uint64_t{64} << 20;
  for (const char* how : {"CreateBuffer with data", "CopyBuffer", "Execute with a host argument"}) {
    SCOPED_TRACE(how);
    const std::string_view path(how);
    auto client = client::Client::Connect(daemon->socket());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    EXPECT_EQ(RegisteredBytesOnce(**client, 0), 0u) << "pinned whole at attach";
    client::CompileOptions compile;
    compile.device = "cuda";
    // Its result is its argument: copies only, which the fake driver does.
    auto exe = (*client)->Compile(R"(
func.func @main(%p: tensor<4xf32>) -> tensor<4xf32> {
  return %p : tensor<4xf32>
}
)",
                                  compile);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    const client::TensorShape shape = exe->arguments[0];
    auto host = (*client)->AllocateBuffer(shape);
    ASSERT_TRUE(host.ok()) << host.status().ToString();
    const bool with_data = path == "CreateBuffer with data";
    auto device = (*client)->CreateDeviceBuffer("cuda", shape, with_data ? &*host : nullptr);
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    if (!with_data) {
      EXPECT_EQ(RegisteredBytes(**client), 0u) << "pinned for a buffer without data";
    }
    if (path == "CopyBuffer") {
      ASSERT_TRUE((*client)->CopyBuffer(*device, *host, /*to_device=*/true).ok());
    } else if (path == "Execute with a host argument") {
      const uint64_t args[] = {host->handle};
      const uint64_t results[] = {*device};
      auto run = (*client)->Execute(exe->handle, args, results);
      ASSERT_TRUE(run.ok()) << run.status().ToString();
    }
    EXPECT_EQ(RegisteredBytes(**client), kFront);
  }
}

}  // namespace
}  // namespace jitd::daemon
