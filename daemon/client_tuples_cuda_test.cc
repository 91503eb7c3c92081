// Tuples and tokens with device-resident buffers (issue 16): a daemon whose
// cuda device is the fake driver (built as a libcuda.so.1, JITD_CUDA_DRIVER)
// runs a program with a tuple and a token in its signature on buffers that
// live on the device. Before the signature was flattened at compile time,
// such executes were refused (UNIMPLEMENTED).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "daemon/test_daemon.h"
#include "libclient/client.h"

namespace jitd::daemon {
namespace {

TEST(ClientTuplesCudaTest, DeviceResidentBuffersTakeTuplePrograms) {
  ::setenv("JITD_CUDA_DRIVER", JITD_FAKE_LIBCUDA_DIR, 1);
  auto daemon = testing::TestDaemon::Start("client_tuples_cuda_test");
  ASSERT_NE(daemon, nullptr);

  {
    auto client = client::Client::Connect(daemon->socket());
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client::CompileOptions compile;
    compile.device = "cuda";
    // No kernel: the fake driver computes none, but copies bytes, so the
    // result (the tuple's first leaf) can be checked.
    auto exe = (*client)->Compile(R"(
func.func @main(%p: tuple<tensor<4xf32>, tensor<4xf32>>, %k: !stablehlo.token) -> (!stablehlo.token, tuple<tensor<4xf32>>) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %t = stablehlo.tuple %a : tuple<tensor<4xf32>>
  return %k, %t : !stablehlo.token, tuple<tensor<4xf32>>
}
)",
                                  compile);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    EXPECT_EQ(exe->argument_structure, "(tt)k");
    EXPECT_EQ(exe->result_structure, "k(t)");
    ASSERT_EQ(exe->arguments.size(), 2u);
    ASSERT_EQ(exe->results.size(), 1u);
    const client::TensorShape shape = exe->arguments[0];
    auto host = (*client)->AllocateBuffer(shape);
    ASSERT_TRUE(host.ok()) << host.status().ToString();
    const float values[4] = {1.5f, -2.0f, 3.0f, 8.0f};
    std::memcpy(host->data.data(), values, sizeof(values));
    auto a = (*client)->CreateDeviceBuffer("cuda", shape, &*host);
    auto b = (*client)->CreateDeviceBuffer("cuda", shape, &*host);
    auto out = (*client)->CreateDeviceBuffer("cuda", shape);
    ASSERT_TRUE(a.ok() && b.ok() && out.ok()) << a.status().ToString();
    const uint64_t args[] = {*a, *b};
    const uint64_t results[] = {*out};
    auto run = (*client)->Execute(exe->handle, args, results);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    std::memset(host->data.data(), 0, sizeof(values));
    ASSERT_TRUE((*client)->CopyBuffer(*out, *host, /*to_device=*/false).ok());
    float got[4];
    std::memcpy(got, host->data.data(), sizeof(got));
    EXPECT_EQ(std::vector<float>(got, got + 4), std::vector<float>(values, values + 4));
  }
}

}  // namespace
}  // namespace jitd::daemon
