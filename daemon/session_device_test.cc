// Executes on device-resident buffers (session_device.cc) through a real
// daemon whose cuda device is the fake driver (built as a libcuda.so.1,
// JITD_CUDA_DRIVER): the same limits as every other execute, named the
// same way when they stop a run.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

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

}  // namespace
}  // namespace jitd::daemon
