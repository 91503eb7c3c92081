// The C++ client's replicated execution against a real Server (issue 17,
// item 3): CompileOptions::num_replicas, Client::ExecutePerReplica, and
// per-replica feeds from a second connection while the first executes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "daemon/test_daemon.h"
#include "libclient/client.h"

namespace jitd::daemon {
namespace {

// Each replica reads an f32[2] from its infeed, all_reduces it with the
// other's, adds its own argument and writes the sum to its outfeed.
constexpr char kFeedSum[] = R"(
func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %tok = stablehlo.create_token : !stablehlo.token
  %in:2 = "stablehlo.infeed"(%tok) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = "stablehlo.all_reduce"(%in#0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  %out = stablehlo.add %s, %x : tensor<2xf32>
  %done = "stablehlo.outfeed"(%out, %in#1) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %out : tensor<2xf32>
}
)";

class ClientReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = testing::TestDaemon::Start("client_replicas_test");
    ASSERT_NE(daemon_, nullptr);
    socket_ = daemon_->socket();
  }

  std::unique_ptr<testing::TestDaemon> daemon_;
  std::string socket_;
};

const client::TensorShape kF32x2{wire::ElementType_F32, {2}};

std::span<const uint8_t> Bytes(const float (&values)[2]) {
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values), sizeof(values));
}

TEST_F(ClientReplicasTest, ExecutePerReplicaWithFeedsFromASecondConnection) {
  auto runner = client::Client::Connect(socket_);
  auto feeder = client::Client::Connect(socket_);
  ASSERT_TRUE(runner.ok() && feeder.ok());
  client::CompileOptions options;
  options.device = "interpreter";
  options.num_replicas = 2;
  auto exe = (*runner)->Compile(kFeedSum, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(exe->num_replicas, 2u);
  EXPECT_EQ(exe->num_processes(), 2u);
  std::vector<std::vector<uint64_t>> args(2), results(2);
  std::vector<client::Buffer> outs;
  for (int p = 0; p < 2; ++p) {
    auto x = (*runner)->AllocateBuffer(kF32x2);
    auto out = (*runner)->AllocateBuffer(kF32x2);
    ASSERT_TRUE(x.ok() && out.ok());
    const float values[2] = {100.0f * static_cast<float>(p), 1000};
    std::memcpy(x->data.data(), values, sizeof(values));
    args[p] = {x->handle};
    results[p] = {out->handle};
    outs.push_back(*out);
  }
  // One process's arguments: refused, pointing to the per-replica form.
  auto single = (*runner)->Execute(exe->handle, args[0], results[0]);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find("ExecutePerReplica"), std::string::npos);

  StatusOr<client::Timing> ran = Internal("not run");
  std::thread run([&] {
    client::ExecuteOptions deadline;
    deadline.deadline = std::chrono::seconds(30);
    ran = (*runner)->ExecutePerReplica(exe->handle, 2, args, results, deadline);
  });
  const float one[2] = {1, 2}, two[2] = {10, 20};
  EXPECT_TRUE((*feeder)->TransferToInfeed("interpreter", kF32x2, Bytes(two), 1).ok());
  EXPECT_TRUE((*feeder)->TransferToInfeed("interpreter", kF32x2, Bytes(one), 0).ok());
  float got[2] = {0, 0};
  std::span<uint8_t> into(reinterpret_cast<uint8_t*>(got), sizeof(got));
  ASSERT_TRUE((*feeder)
                  ->TransferFromOutfeed("interpreter", kF32x2, into, std::chrono::seconds(30), 1)
                  .ok());
  EXPECT_EQ(got[0], 111.0f);
  EXPECT_EQ(got[1], 1022.0f);
  run.join();
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  float replica0[2];
  std::memcpy(replica0, outs[0].data.data(), sizeof(replica0));
  EXPECT_EQ(replica0[0], 11.0f);
  EXPECT_EQ(replica0[1], 1022.0f);
  ASSERT_TRUE((*feeder)
                  ->TransferFromOutfeed("interpreter", kF32x2, into, std::chrono::seconds(5), 0)
                  .ok());
  EXPECT_EQ(got[0], 11.0f);
  // Replica 2 is not one of this process's.
  Status out_of_range = (*feeder)->TransferToInfeed("interpreter", kF32x2, Bytes(one), 2);
  EXPECT_EQ(out_of_range.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out_of_range.message().find("[0, 2)"), std::string::npos) << out_of_range.message();
  // jitd stats names the program's grid.
  auto stats = (*runner)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_NE(stats->find("(interpreter, 2 replicas x 1 partition)"), std::string::npos) << *stats;
  // Argument lists for the wrong number of processes never leave the client.
  EXPECT_EQ((*runner)->ExecutePerReplica(exe->handle, 2, std::span(args).first(1), results).status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace jitd::daemon
