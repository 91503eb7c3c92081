// Tuples and tokens through a real Server with the C++ client (issue 16,
// item 6): the compile reply's leaves and structures, executes on leaf
// buffers (tokens carry none), on both devices; such programs compile with
// a flat signature (jit/passes/flatten_signature.h), replicated too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "daemon/test_daemon.h"
#include "devices/cpu/cpu_device.h"
#include "libclient/client.h"

namespace jitd::daemon {
namespace {

// Arguments: a nested tuple and a token; results: a nested tuple holding a
// token, and the token an outfeed returned.
constexpr char kProgram[] = R"(
func.func @main(%p: tuple<tensor<2xf32>, tuple<tensor<i32>>>, %k: !stablehlo.token) -> (tuple<tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>>, !stablehlo.token) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>, tuple<tensor<i32>>>) -> tensor<2xf32>
  %inner = stablehlo.get_tuple_element %p[1] : (tuple<tensor<2xf32>, tuple<tensor<i32>>>) -> tuple<tensor<i32>>
  %b = stablehlo.get_tuple_element %inner[0] : (tuple<tensor<i32>>) -> tensor<i32>
  %n = stablehlo.negate %a : tensor<2xf32>
  %c = stablehlo.add %b, %b : tensor<i32>
  %k2 = "stablehlo.outfeed"(%n, %k) {outfeed_config = ""} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %t1 = stablehlo.tuple %c, %k2 : tuple<tensor<i32>, !stablehlo.token>
  %t = stablehlo.tuple %n, %t1 : tuple<tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>>
  return %t, %k2 : tuple<tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>>, !stablehlo.token
}
)";

class ClientTuplesTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    daemon_ = testing::TestDaemon::Start("client_tuples_test");
    ASSERT_NE(daemon_, nullptr);
    socket_ = daemon_->socket();
  }

  std::unique_ptr<testing::TestDaemon> daemon_;
  std::string socket_;
};

const client::TensorShape kF32x2{wire::ElementType_F32, {2}};
const client::TensorShape kS32{wire::ElementType_S32, {}};

TEST_P(ClientTuplesTest, LeavesAndStructuresRoundTrip) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  client::CompileOptions options;
  options.device = GetParam();
  auto exe = (*client)->Compile(kProgram, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(exe->argument_structure, "(t(t))k");
  EXPECT_EQ(exe->result_structure, "(t(tk))k");
  ASSERT_EQ(exe->arguments.size(), 2u);
  EXPECT_EQ(exe->arguments[0].ToString(), kF32x2.ToString());
  EXPECT_EQ(exe->arguments[1].ToString(), kS32.ToString());
  ASSERT_EQ(exe->results.size(), 2u);
  EXPECT_EQ(exe->results[0].ToString(), kF32x2.ToString());
  EXPECT_EQ(exe->results[1].ToString(), kS32.ToString());

  auto a = (*client)->AllocateBuffer(kF32x2);
  auto b = (*client)->AllocateBuffer(kS32);
  auto out_a = (*client)->AllocateBuffer(kF32x2);
  auto out_b = (*client)->AllocateBuffer(kS32);
  ASSERT_TRUE(a.ok() && b.ok() && out_a.ok() && out_b.ok());
  const float av[2] = {1.5f, -4.0f};
  const int32_t bv = 21;
  std::memcpy(a->data.data(), av, sizeof(av));
  std::memcpy(b->data.data(), &bv, sizeof(bv));
  const uint64_t args[] = {a->handle, b->handle};
  const uint64_t results[] = {out_a->handle, out_b->handle};
  auto timing = (*client)->Execute(exe->handle, args, results);
  ASSERT_TRUE(timing.ok()) << timing.status().ToString();
  float got_a[2];
  int32_t got_b;
  std::memcpy(got_a, out_a->data.data(), sizeof(got_a));
  std::memcpy(&got_b, out_b->data.data(), sizeof(got_b));
  EXPECT_EQ(got_a[0], -1.5f);
  EXPECT_EQ(got_a[1], 4.0f);
  EXPECT_EQ(got_b, 42);
  float fed[2] = {0, 0};
  Status outfeed = (*client)->TransferFromOutfeed(
      GetParam(), kF32x2, std::span<uint8_t>(reinterpret_cast<uint8_t*>(fed), sizeof(fed)),
      std::chrono::milliseconds(20000));
  ASSERT_TRUE(outfeed.ok()) << outfeed.ToString();
  EXPECT_EQ(fed[0], -1.5f);
  EXPECT_EQ(fed[1], 4.0f);

  // Library-allocated results: one block per leaf.
  std::vector<client::Buffer> allocated;
  auto again = (*client)->ExecuteAllocatingResults(exe->handle, args, exe->results, {},
                                                   &allocated);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(allocated.size(), 2u);
  std::memcpy(&got_b, allocated[1].data.data(), sizeof(got_b));
  EXPECT_EQ(got_b, 42);

  // The leaf count and types are checked like any execute's.
  const uint64_t one_arg[] = {a->handle};
  auto short_args = (*client)->Execute(exe->handle, one_arg, results);
  ASSERT_FALSE(short_args.ok());
  EXPECT_NE(short_args.status().message().find("takes 2 argument(s), the request names 1"),
            std::string::npos)
      << short_args.status().ToString();
  const uint64_t swapped[] = {b->handle, a->handle};
  auto wrong = (*client)->Execute(exe->handle, swapped, results);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("argument 0 must be tensor<2xf32>"), std::string::npos)
      << wrong.status().ToString();
}

TEST_P(ClientTuplesTest, ATokenRootHasNoResultBuffers) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok());
  client::CompileOptions options;
  options.device = GetParam();
  auto exe = (*client)->Compile(R"(
func.func @main(%a: tensor<2xf32>) -> !stablehlo.token {
  %t = stablehlo.create_token : !stablehlo.token
  %t2 = "stablehlo.outfeed"(%a, %t) {outfeed_config = ""} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %t2 : !stablehlo.token
}
)",
                                options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(exe->argument_structure, "");  // plain tensors: as before
  EXPECT_EQ(exe->result_structure, "k");
  EXPECT_TRUE(exe->results.empty());
  auto a = (*client)->AllocateBuffer(kF32x2);
  ASSERT_TRUE(a.ok());
  const float av[2] = {7.0f, 8.0f};
  std::memcpy(a->data.data(), av, sizeof(av));
  const uint64_t args[] = {a->handle};
  auto timing = (*client)->Execute(exe->handle, args, {});
  ASSERT_TRUE(timing.ok()) << timing.status().ToString();
  float fed[2] = {0, 0};
  ASSERT_TRUE((*client)
                  ->TransferFromOutfeed(GetParam(), kF32x2,
                                        std::span<uint8_t>(reinterpret_cast<uint8_t*>(fed),
                                                           sizeof(fed)),
                                        std::chrono::milliseconds(20000))
                  .ok());
  EXPECT_EQ(fed[1], 8.0f);
}

TEST_P(ClientTuplesTest, ReplicatedTupleProgramsRun) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok());
  client::CompileOptions options;
  options.device = GetParam();
  options.num_replicas = 2;
  // Each process adds its replica id to its tuple's leaf.
  auto exe = (*client)->Compile(R"(
func.func @main(%p: tuple<tensor<2xf32>>, %k: !stablehlo.token) -> (tuple<tensor<2xf32>>, !stablehlo.token) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>>) -> tensor<2xf32>
  %r = stablehlo.replica_id : tensor<ui32>
  %f = stablehlo.convert %r : (tensor<ui32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %s = stablehlo.add %a, %b : tensor<2xf32>
  %t = stablehlo.tuple %s : tuple<tensor<2xf32>>
  return %t, %k : tuple<tensor<2xf32>>, !stablehlo.token
}
)",
                                options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(exe->argument_structure, "(t)k");
  EXPECT_EQ(exe->result_structure, "(t)k");
  std::vector<std::vector<uint64_t>> args(2), results(2);
  std::vector<client::Buffer> outs;
  for (int p = 0; p < 2; ++p) {
    auto x = (*client)->AllocateBuffer(kF32x2);
    auto out = (*client)->AllocateBuffer(kF32x2);
    ASSERT_TRUE(x.ok() && out.ok());
    const float xv[2] = {10.0f * static_cast<float>(p + 1), 0.5f};
    std::memcpy(x->data.data(), xv, sizeof(xv));
    args[p].push_back(x->handle);
    results[p].push_back(out->handle);
    outs.push_back(*out);
  }
  auto run = (*client)->ExecutePerReplica(exe->handle, 2, args, results);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  for (int p = 0; p < 2; ++p) {
    float got[2];
    std::memcpy(got, outs[p].data.data(), sizeof(got));
    EXPECT_EQ(got[0], 10.0f * static_cast<float>(p + 1) + static_cast<float>(p)) << "process " << p;
    EXPECT_EQ(got[1], 0.5f + static_cast<float>(p)) << "process " << p;
  }
}

// A tuple program compiles with a flat signature (the leaves), so it runs
// on the buffer path as any other: on cpu, the compiled code on raw
// buffers (Executable::Run), no op left to the fallback interpreter.
TEST_P(ClientTuplesTest, TupleProgramsCompileToFlatSignatures) {
  CompileSpec spec;
  spec.device = GetParam();
  auto outcome = daemon_->instance().Compile(R"(
func.func @main(%p: tuple<tensor<2xf32>, tensor<2xf32>>, %k: !stablehlo.token) -> (!stablehlo.token, tuple<tensor<2xf32>, tuple<>>) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>, tensor<2xf32>>) -> tensor<2xf32>
  %b = stablehlo.get_tuple_element %p[1] : (tuple<tensor<2xf32>, tensor<2xf32>>) -> tensor<2xf32>
  %s = stablehlo.add %a, %b : tensor<2xf32>
  %e = stablehlo.tuple : tuple<>
  %t = stablehlo.tuple %s, %e : tuple<tensor<2xf32>, tuple<>>
  return %k, %t : !stablehlo.token, tuple<tensor<2xf32>, tuple<>>
}
)",
                                    spec);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  const CompiledProgram& program = *outcome->program;
  const ir::Type f32x2 = ir::Type::Tensor(ir::DType::kF32, {2});
  EXPECT_EQ(program.argument_types, (std::vector<ir::Type>{f32x2, f32x2}));
  EXPECT_EQ(program.result_types, (std::vector<ir::Type>{f32x2}));
  EXPECT_EQ(program.executable->argument_types(), program.argument_types);
  EXPECT_EQ(program.executable->result_types(), program.result_types);
  EXPECT_EQ(program.argument_structure, "(tt)k");
  EXPECT_EQ(program.result_structure, "k(t())");
  if (std::string(GetParam()) == "cpu") {
    EXPECT_TRUE(program.executable->runs_on_buffers());
    const auto* cpu = dynamic_cast<const cpu::CpuExecutable*>(program.executable.get());
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->stats().fallback_ops, 0);
    EXPECT_GE(cpu->stats().kernels, 1);
    float a[2] = {1, 2}, b[2] = {10, 20}, out[2] = {0, 0};
    const void* in[] = {a, b};
    void* res[] = {out};
    ASSERT_TRUE(program.executable->Run(in, res, {}).ok());
    EXPECT_EQ(out[0], 11.0f);
    EXPECT_EQ(out[1], 22.0f);
  }
}

// A tuple program's executable loaded from the disk cache keeps its
// structures (stored in front of the device's blob).
TEST_P(ClientTuplesTest, StructuresSurviveTheDiskCache) {
  const std::string cache_dir = daemon_->dir() + "/cache";
  InstanceOptions options;
  options.disk_cache_dir = cache_dir;
  options.disk_cache_fsync = false;
  CompileSpec spec;
  spec.device = GetParam();
  for (const char* want_source : {"compiled", "disk"}) {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    auto outcome = (*instance)->Compile(kProgram, spec);
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    EXPECT_EQ(outcome->source, want_source);
    const CompiledProgram& program = *outcome->program;
    EXPECT_EQ(program.argument_structure, "(t(t))k");
    EXPECT_EQ(program.result_structure, "(t(tk))k");
    EXPECT_EQ(program.argument_types.size(), 2u);
    EXPECT_EQ(program.result_types.size(), 2u);
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, ClientTuplesTest, ::testing::Values("interpreter", "cpu"));

}  // namespace
}  // namespace jitd::daemon
