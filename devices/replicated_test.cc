#include "devices/replicated.h"

#include <gtest/gtest.h>

#include "devices/compile.h"
#include "jit/frontend/parser.h"

namespace jitd::devices {
namespace {

using Clock = std::chrono::steady_clock;

ProcessGrid Grid(int64_t replicas, int64_t partitions) {
  ProcessGrid g;
  g.num_replicas = replicas;
  g.num_partitions = partitions;
  return g;
}

std::unique_ptr<Executable> Compile(const std::string& device_name, std::string_view text) {
  auto device = CreateDevice(device_name);
  EXPECT_TRUE(device.ok()) << device.status().ToString();
  auto m = frontend::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  auto exe = CompileProgram(**device, std::shared_ptr<ir::Module>(std::move(m).value()));
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  return exe.ok() ? std::move(exe).value() : nullptr;
}

ir::Literal F32s(std::vector<int64_t> dims, std::vector<double> values) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, std::move(dims)));
  for (size_t i = 0; i < values.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), values[i]);
  return lit;
}

std::vector<std::vector<eval::RuntimeValue>> PerProcess(int64_t n, const std::function<ir::Literal(int64_t)>& f) {
  std::vector<std::vector<eval::RuntimeValue>> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)].emplace_back(f(i));
  return out;
}

ProcessOptionsFn WithDeadline(std::chrono::milliseconds d) {
  const auto deadline = Clock::now() + d;
  return [deadline](int64_t) {
    ExecuteOptions o;
    o.deadline = deadline;
    return o;
  };
}

class ReplicatedTest : public ::testing::TestWithParam<std::string> {};

constexpr std::string_view kAllReduceThenScale = R"(
module attributes {mhlo.num_replicas = 2 : i32, mhlo.num_partitions = 1 : i32} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %s = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %t = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %t : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
    %id = stablehlo.replica_id : tensor<ui32>
    %f = stablehlo.convert %id : (tensor<ui32>) -> tensor<f32>
    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %r = stablehlo.add %s, %b : tensor<4xf32>
    return %r : tensor<4xf32>
  }
})";

TEST_P(ReplicatedTest, AllReduceOnTwoReplicas) {
  auto exe = Compile(GetParam(), kAllReduceThenScale);
  ASSERT_TRUE(exe);
  auto m = frontend::ParseModule(kAllReduceThenScale);
  ASSERT_TRUE(m.ok());
  auto grid = ModuleProcessGrid(**m);
  ASSERT_TRUE(grid.ok()) << grid.status().ToString();
  EXPECT_EQ(grid->num_replicas, 2);
  EXPECT_EQ(grid->num_partitions, 1);
  auto args = PerProcess(2, [](int64_t i) { return F32s({4}, {1.0 + i, 2, 3, 4 * (i + 1.0)}); });
  auto out = ExecuteReplicated(*exe, *grid, args, WithDeadline(std::chrono::seconds(20)));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 2u);
  // Sums [3, 4, 6, 12], plus the replica id.
  for (int r = 0; r < 2; ++r) {
    const ir::Literal& x = (*out)[r][0].literal();
    EXPECT_EQ(x.GetDouble(0), 3.0 + r);
    EXPECT_EQ(x.GetDouble(1), 4.0 + r);
    EXPECT_EQ(x.GetDouble(2), 6.0 + r);
    EXPECT_EQ(x.GetDouble(3), 12.0 + r);
  }
}

TEST_P(ReplicatedTest, OneProcessIsAPlainExecute) {
  auto exe = Compile(GetParam(), R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %id = stablehlo.replica_id : tensor<ui32>
  %f = stablehlo.convert %id : (tensor<ui32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %r = stablehlo.add %x, %b : tensor<2xf32>
  return %r : tensor<2xf32>
})");
  ASSERT_TRUE(exe);
  auto args = PerProcess(1, [](int64_t) { return F32s({2}, {5, 6}); });
  auto out = ExecuteReplicated(*exe, Grid(1, 1), args, nullptr);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0][0].literal(), F32s({2}, {5, 6}));
  // Wrong argument counts are named.
  auto bad = ExecuteReplicated(*exe, Grid(2, 1), args, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("one per process"), std::string::npos) << bad.status().message();
}

TEST_P(ReplicatedTest, AReplicaThatNeverArrivesEndsAtTheDeadline) {
  // Replica 1 spins in a loop that never ends; replica 0 waits in the
  // all_reduce. Both end with DEADLINE_EXCEEDED shortly after the deadline.
  auto exe = Compile(GetParam(), R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %id = stablehlo.replica_id : tensor<ui32>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %is1 = stablehlo.compare NE, %id, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  %spun:2 = stablehlo.while(%c = %is1, %v = %x) : tensor<i1>, tensor<4xf32>
    cond {
      stablehlo.return %c : tensor<i1>
    } do {
      %w = stablehlo.add %v, %v : tensor<4xf32>
      stablehlo.return %c, %w : tensor<i1>, tensor<4xf32>
    }
  %s = "stablehlo.all_reduce"(%spun#1) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %s : tensor<4xf32>
})");
  ASSERT_TRUE(exe);
  auto args = PerProcess(2, [](int64_t i) { return F32s({4}, {1, 2, 3, 4}); });
  const auto start = Clock::now();
  auto out = ExecuteReplicated(*exe, Grid(2, 1), args, WithDeadline(std::chrono::milliseconds(300)));
  const auto took = Clock::now() - start;
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kDeadlineExceeded) << out.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST_P(ReplicatedTest, AProcessFailureEndsItsPeers) {
  // Replica 1 fails at an infeed (it has no hook); replica 0, waiting in
  // the all_gather, ends with replica 1's error instead of waiting.
  auto exe = Compile(GetParam(), R"(
func.func @main(%x: tensor<2xf32>) -> tensor<4xf32> {
  %id = stablehlo.replica_id : tensor<ui32>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %is1 = stablehlo.compare NE, %id, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  %y = "stablehlo.if"(%is1) ({
    %t = stablehlo.create_token : !stablehlo.token
    %v, %t2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
    stablehlo.return %v : tensor<2xf32>
  }, {
    stablehlo.return %x : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  %g = "stablehlo.all_gather"(%y) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
})");
  ASSERT_TRUE(exe);
  auto args = PerProcess(2, [](int64_t i) { return F32s({2}, {1, 2}); });
  const auto start = Clock::now();
  auto out = ExecuteReplicated(*exe, Grid(2, 1), args, WithDeadline(std::chrono::seconds(30)));
  ASSERT_FALSE(out.ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(out.status().message().find("process 1 (replica 1, partition 0)"), std::string::npos)
      << out.status().ToString();
}

TEST_P(ReplicatedTest, PerProcessInfeed) {
  // Each replica reads its own infeed (options_for gives each its hook),
  // then they all_gather.
  auto exe = Compile(GetParam(), R"(
func.func @main() -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v, %t2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<1xf32>, !stablehlo.token)
  %g = "stablehlo.all_gather"(%v) {all_gather_dim = 0 : i64, replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>} : (tensor<1xf32>) -> tensor<2xf32>
  return %g : tensor<2xf32>
})");
  ASSERT_TRUE(exe);
  std::vector<std::vector<eval::RuntimeValue>> args(2);
  auto out = ExecuteReplicated(*exe, Grid(2, 1), args, [](int64_t process) {
    ExecuteOptions o;
    o.deadline = Clock::now() + std::chrono::seconds(20);
    o.infeed = [process](const std::vector<ir::Type>& types, auto) -> StatusOr<std::vector<ir::Literal>> {
      std::vector<ir::Literal> v;
      v.push_back(F32s({1}, {10.0 * (process + 1)}));
      return v;
    };
    return o;
  });
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (int r = 0; r < 2; ++r) EXPECT_EQ((*out)[r][0].literal(), F32s({2}, {20, 10}));
}

std::string AllReduceWithGroups(std::string_view groups) {
  return std::string(R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %t = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {replica_groups = dense<)") + std::string(groups) + R"(> : tensor<2x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %s : tensor<2xf32>
})";
}

TEST_P(ReplicatedTest, DisagreeingGroupsFailAtOnce) {
  // Three programs (MPMD) whose groups disagree: process 0 waits for 1, 1
  // for 2, 2 for 0. Every process ends with INVALID_ARGUMENT long before
  // the deadline. (-1 pads the group of one.)
  auto a = Compile(GetParam(), AllReduceWithGroups("[[0, 1], [2, -1]]"));
  auto b = Compile(GetParam(), AllReduceWithGroups("[[1, 2], [0, -1]]"));
  auto c = Compile(GetParam(), AllReduceWithGroups("[[2, 0], [1, -1]]"));
  ASSERT_TRUE(a && b && c);
  const Executable* programs[] = {a.get(), b.get(), c.get()};
  auto args = PerProcess(3, [](int64_t i) { return F32s({2}, {1, 2}); });
  const auto start = Clock::now();
  auto out = ExecuteProcesses(programs, Grid(3, 1), args, WithDeadline(std::chrono::seconds(30)));
  ASSERT_FALSE(out.ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument) << out.status().ToString();
  EXPECT_NE(out.status().message().find("groups disagree"), std::string::npos) << out.status().ToString();
  EXPECT_NE(out.status().message().find("'stablehlo.all_reduce' at 3:3"), std::string::npos)
      << out.status().ToString();
}

TEST(ModuleProcessGridTest, ReadsAndChecksTheAttributes) {
  auto plain = frontend::ParseModule("func.func @main() { return }");
  ASSERT_TRUE(plain.ok());
  auto g = ModuleProcessGrid(**plain);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->num_processes(), 1);
  auto bad = frontend::ParseModule(
      "module attributes {mhlo.num_partitions = 0 : i32} {\n func.func @main() { return }\n}");
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  auto e = ModuleProcessGrid(**bad);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("mhlo.num_partitions"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Devices, ReplicatedTest, ::testing::Values("interpreter", "cpu"));

}  // namespace
}  // namespace jitd::devices
