#include "jit/eval/collectives.h"

#include <gtest/gtest.h>

#include <thread>

#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using Clock = std::chrono::steady_clock;
using Groups = std::vector<std::vector<int64_t>>;

ProcessGrid Grid(int64_t replicas, int64_t partitions) {
  ProcessGrid g;
  g.num_replicas = replicas;
  g.num_partitions = partitions;
  return g;
}

// ---- ProcessGroups: the spec's four strategies, with its examples ----------

TEST(ProcessGroupsTest, CrossReplica) {
  auto g = ProcessGroups(GroupMode::kCrossReplica, {{0, 1}, {2, 3}}, Grid(4, 2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  // [[(0,0),(1,0)], [(0,1),(1,1)], [(2,0),(3,0)], [(2,1),(3,1)]] as indices.
  EXPECT_EQ(*g, (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
}

TEST(ProcessGroupsTest, CrossPartition) {
  auto g = ProcessGroups(GroupMode::kCrossPartition, {{0, 1}}, Grid(4, 2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(*g, (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(ProcessGroupsTest, CrossReplicaAndPartition) {
  auto g = ProcessGroups(GroupMode::kCrossReplicaAndPartition, {{0, 1}, {2, 3}}, Grid(4, 2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  // [[(0,0),(1,0),(0,1),(1,1)], [(2,0),(3,0),(2,1),(3,1)]].
  EXPECT_EQ(*g, (Groups{{0, 2, 1, 3}, {4, 6, 5, 7}}));
}

TEST(ProcessGroupsTest, FlattenedIds) {
  auto g = ProcessGroups(GroupMode::kFlattenedIds, {{0, 1, 2, 3}, {4, 5, 6, 7}}, Grid(4, 2));
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(*g, (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(ProcessGroupsTest, NoRowsIsOneGroupOfAll) {
  auto g = ProcessGroups(GroupMode::kCrossReplica, {}, Grid(3, 1));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, (Groups{{0, 1, 2}}));
}

TEST(ProcessGroupsTest, BadGroupsAreNamed) {
  auto out_of_range = ProcessGroups(GroupMode::kCrossReplica, {{0, 2}}, Grid(2, 1));
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("replica id 2"), std::string::npos)
      << out_of_range.status().message();
  auto repeated = ProcessGroups(GroupMode::kCrossPartition, {{0, 1}, {1, 0}}, Grid(1, 2));
  ASSERT_FALSE(repeated.ok());
  EXPECT_NE(repeated.status().message().find("twice"), std::string::npos);
  auto uncovered = ProcessGroups(GroupMode::kFlattenedIds, {{0, 1}}, Grid(2, 2));
  ASSERT_FALSE(uncovered.ok());
  EXPECT_NE(uncovered.status().message().find("leave out"), std::string::npos);
  EXPECT_TRUE(ProcessGroups(GroupMode::kFlattenedIds, {{0, 1}}, Grid(2, 2), false).ok());
}

TEST(ProcessGridTest, Validate) {
  EXPECT_TRUE(ValidateProcessGrid(Grid(2, 3)).ok());
  EXPECT_FALSE(ValidateProcessGrid(Grid(0, 1)).ok());
  EXPECT_FALSE(ValidateProcessGrid(ProcessGrid{2, 1, {0}}).ok());
  EXPECT_FALSE(ValidateProcessGrid(ProcessGrid{2, 1, {3, 3}}).ok());
  EXPECT_TRUE(ValidateProcessGrid(ProcessGrid{2, 1, {5, 3}}).ok());
}

// ---- the exchange ------------------------------------------------------------

TEST(CollectiveExchangeTest, MembersSeeEachOtherInGroupOrder) {
  CollectiveExchange ex(Grid(3, 1));
  const std::vector<int64_t> group = {2, 0, 1};
  std::vector<int> values = {10, 11, 12};
  std::vector<std::vector<int>> seen(3);
  std::vector<Status> status(3);
  std::vector<std::thread> threads;
  for (int64_t p = 0; p < 3; ++p) {
    threads.emplace_back([&, p] {
      status[p] = ex.Meet({0, "k", "op"}, p, group, &values[p], [&](std::span<void* const> peers, size_t self) {
        EXPECT_EQ(group[self], p);
        for (void* v : peers) seen[p].push_back(*static_cast<int*>(v));
        return Status::Ok();
      }, {Clock::now() + std::chrono::seconds(5), nullptr});
    });
  }
  for (auto& t : threads) t.join();
  for (int p = 0; p < 3; ++p) {
    EXPECT_TRUE(status[p].ok()) << status[p].ToString();
    EXPECT_EQ(seen[p], (std::vector<int>{12, 10, 11}));
  }
}

// Groups that disagree (each process waits for one that waits elsewhere)
// fail every process at once, long before the deadline.
void ExpectDisagreement(const std::vector<std::vector<int64_t>>& groups) {
  const int64_t n = static_cast<int64_t>(groups.size());
  CollectiveExchange ex(Grid(n, 1));
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  std::vector<Status> status(groups.size());
  std::vector<std::thread> threads;
  for (int64_t p = 0; p < n; ++p) {
    threads.emplace_back([&, p] {
      status[p] = ex.Meet({0, "k", "'all_reduce' at 1:1"}, p, groups[p], nullptr,
                          [](std::span<void* const>, size_t) { return Status::Ok(); }, {deadline, nullptr});
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LT(Clock::now(), deadline - std::chrono::seconds(10));
  for (int64_t p = 0; p < n; ++p) {
    ASSERT_EQ(status[p].code(), StatusCode::kInvalidArgument) << status[p].ToString();
    EXPECT_EQ(status[p].ToString(), status[0].ToString());
  }
  EXPECT_NE(status[0].message().find("groups disagree"), std::string::npos) << status[0].message();
}

TEST(CollectiveExchangeTest, DisagreeingGroupsFailWithoutWaiting) {
  ExpectDisagreement({{0, 1}, {1, 0}});             // the same members, another order
  ExpectDisagreement({{0, 1}, {1, 2}, {2, 0}});     // a cycle of three
}

TEST(CollectiveExchangeTest, DifferentCollectivesFail) {
  CollectiveExchange ex(Grid(2, 1));
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  Status s0, s1;
  auto noop = [](std::span<void* const>, size_t) { return Status::Ok(); };
  const std::vector<int64_t> g = {0, 1};
  std::thread t0([&] { s0 = ex.Meet({0, "stablehlo.all_reduce", "a"}, 0, g, nullptr, noop, {deadline, nullptr}); });
  std::thread t1([&] { s1 = ex.Meet({0, "stablehlo.all_gather", "b"}, 1, g, nullptr, noop, {deadline, nullptr}); });
  t0.join();
  t1.join();
  EXPECT_EQ(s0.code(), StatusCode::kInvalidArgument) << s0.ToString();
  EXPECT_EQ(s1.code(), StatusCode::kInvalidArgument) << s1.ToString();
}

TEST(CollectiveExchangeTest, MissingMemberEndsAtTheDeadline) {
  CollectiveExchange ex(Grid(2, 1));
  const auto start = Clock::now();
  Status s = ex.Meet({0, "k", "'stablehlo.all_reduce' at 3:7"}, 0, std::vector<int64_t>{0, 1}, nullptr,
                     [](std::span<void* const>, size_t) { return Status::Ok(); },
                     {start + std::chrono::milliseconds(100), nullptr});
  const auto took = Clock::now() - start;
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_NE(s.message().find("3:7"), std::string::npos);
  EXPECT_NE(s.message().find("process 0 (replica 0, partition 0)"), std::string::npos) << s.message();
  EXPECT_GE(took, std::chrono::milliseconds(100));
  EXPECT_LT(took, std::chrono::seconds(2));
  // Later arrivals get the same failure at once.
  Status later = ex.Meet({0, "k", "x"}, 1, std::vector<int64_t>{0, 1}, nullptr,
                         [](std::span<void* const>, size_t) { return Status::Ok(); }, {});
  EXPECT_EQ(later.ToString(), s.ToString());
}

TEST(CollectiveExchangeTest, FinishedMemberAndCancelEndTheWait) {
  {
    CollectiveExchange ex(Grid(2, 1));
    ex.ProcessFinished(1);
    Status s = ex.Meet({0, "k", "op"}, 0, std::vector<int64_t>{0, 1}, nullptr,
                       [](std::span<void* const>, size_t) { return Status::Ok(); }, {});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("ended without joining"), std::string::npos);
  }
  {
    CollectiveExchange ex(Grid(2, 1));
    std::atomic<bool> cancel{false};
    std::thread t([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      cancel = true;
    });
    Status s = ex.Meet({0, "k", "op"}, 0, std::vector<int64_t>{0, 1}, nullptr,
                       [](std::span<void* const>, size_t) { return Status::Ok(); }, {std::nullopt, &cancel});
    t.join();
    EXPECT_EQ(s.ToString(), CancelledStatus().ToString());
  }
}

// ---- the kernels, evaluated on one thread per process -------------------------

ir::Literal I64s(std::vector<int64_t> dims, std::vector<int64_t> values, ir::DType t = ir::DType::kS64) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(t, std::move(dims)));
  for (size_t i = 0; i < values.size(); ++i) lit.SetInt(static_cast<int64_t>(i), values[i]);
  return lit;
}

std::vector<int64_t> Ints(const RuntimeValue& v) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < v.literal().num_elements(); ++i) out.push_back(v.literal().GetInt(i));
  return out;
}

// Evaluates `text`'s entry function as every process of `grid`, process i on
// args(i), each on its own thread (as devices/replicated.cc runs them).
struct GridRun {
  Status status;  // the first failure
  std::vector<std::vector<RuntimeValue>> results;
};
GridRun RunGrid(std::string_view text, ProcessGrid grid,
                const std::function<std::vector<RuntimeValue>(int64_t)>& args,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  GridRun out;
  auto m = frontend::ParseModule(text);
  if (!m.ok()) return {m.status(), {}};
  if (Status s = ir::VerifyModule(**m); !s.ok()) return {s, {}};
  const int64_t n = grid.num_processes();
  auto exchange = std::make_shared<CollectiveExchange>(grid);
  std::vector<ProcessContext> contexts;
  for (int64_t i = 0; i < n; ++i) contexts.push_back({i / grid.num_partitions, i % grid.num_partitions, exchange});
  std::vector<StatusOr<std::vector<RuntimeValue>>> results(static_cast<size_t>(n), Status(StatusCode::kInternal, "not run"));
  std::vector<std::thread> threads;
  const auto deadline = Clock::now() + timeout;
  for (int64_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      EvalOptions options;
      options.deadline = deadline;
      options.process = &contexts[static_cast<size_t>(i)];
      results[static_cast<size_t>(i)] = EvaluateFunction(**m, *(*m)->EntryFunction(), args(i), options);
      if (!results[static_cast<size_t>(i)].ok()) exchange->Abort(results[static_cast<size_t>(i)].status());
      exchange->ProcessFinished(i);
    });
  }
  for (auto& t : threads) t.join();
  out.status = exchange->aborted();
  for (auto& r : results) out.results.push_back(r.ok() ? *r : std::vector<RuntimeValue>{});
  return out;
}

std::vector<RuntimeValue> One(ir::Literal lit) {
  std::vector<RuntimeValue> v;
  v.emplace_back(std::move(lit));
  return v;
}

TEST(CollectiveKernelsTest, ReplicaAndPartitionIds) {
  GridRun r = RunGrid(R"(
func.func @main() -> (tensor<ui32>, tensor<ui32>) {
  %r = stablehlo.replica_id : tensor<ui32>
  %p = stablehlo.partition_id : tensor<ui32>
  return %r, %p : tensor<ui32>, tensor<ui32>
})", Grid(2, 3), [](int64_t) { return std::vector<RuntimeValue>{}; });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(Ints(r.results[i][0]), std::vector<int64_t>{i / 3});
    EXPECT_EQ(Ints(r.results[i][1]), std::vector<int64_t>{i % 3});
  }
}

constexpr std::string_view kAllReduceSum = R"(
func.func @main(%x: tensor<4xi64>) -> tensor<4xi64> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {replica_groups = dense<GROUPS> : tensor<SHAPExi64>, CHANNEL} : (tensor<4xi64>) -> tensor<4xi64>
  return %r : tensor<4xi64>
})";

std::string AllReduce(std::string groups, std::string shape, std::string channel) {
  std::string t(kAllReduceSum);
  t.replace(t.find("GROUPS"), 6, groups);
  t.replace(t.find("SHAPE"), 5, shape);
  t.replace(t.find("CHANNEL"), 7, channel);
  return t;
}

// Process i contributes [i, 10 i, 100 i, 1000 i].
std::vector<RuntimeValue> Scaled(int64_t i) { return One(I64s({4}, {i, 10 * i, 100 * i, 1000 * i})); }

TEST(CollectiveKernelsTest, AllReduceModes) {
  const ProcessGrid grid = Grid(2, 2);  // processes 0=(0,0) 1=(0,1) 2=(1,0) 3=(1,1)
  // cross_replica: {0, 2} and {1, 3}.
  GridRun r = RunGrid(AllReduce("[[0, 1]]", "1x2", "channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>"),
                      grid, Scaled);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Ints(r.results[0][0]), (std::vector<int64_t>{2, 20, 200, 2000}));
  EXPECT_EQ(Ints(r.results[3][0]), (std::vector<int64_t>{4, 40, 400, 4000}));
  // cross_replica_and_partition (channel > 0): all four.
  r = RunGrid(AllReduce("[[0, 1]]", "1x2", "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>"),
              grid, Scaled);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (int p = 0; p < 4; ++p) EXPECT_EQ(Ints(r.results[p][0]), (std::vector<int64_t>{6, 60, 600, 6000}));
  // flattened_ids: {0, 3} and {1, 2}.
  r = RunGrid(AllReduce("[[0, 3], [1, 2]]", "2x2",
                        "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, use_global_device_ids"),
              grid, Scaled);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Ints(r.results[0][0]), (std::vector<int64_t>{3, 30, 300, 3000}));
  EXPECT_EQ(Ints(r.results[2][0]), (std::vector<int64_t>{3, 30, 300, 3000}));
}

TEST(CollectiveKernelsTest, AllReduceWithARegionFoldsLeftInGroupOrder) {
  // a - b is not associative: the order is visible. Groups [[2, 0, 1]].
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.subtract %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[2, 0, 1]]> : tensor<1x3xi64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
})", Grid(3, 1), [](int64_t i) {
    ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2}));
    x.SetDouble(0, static_cast<double>(1 + i));
    x.SetDouble(1, static_cast<double>(10 * (1 + i)));
    return One(std::move(x));
  });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(r.results[p][0].literal().GetDouble(0), 3.0 - 1.0 - 2.0);
    EXPECT_EQ(r.results[p][0].literal().GetDouble(1), 30.0 - 10.0 - 20.0);
  }
}

TEST(CollectiveKernelsTest, AllReduceInALoopMeetsEachIteration) {
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<i64>) -> tensor<i64> {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %three = stablehlo.constant dense<3> : tensor<i64>
  %r:2 = stablehlo.while(%i = %zero, %v = %x) : tensor<i64>, tensor<i64>
    cond {
      %c = stablehlo.compare LT, %i, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %s = "stablehlo.all_reduce"(%v) ({
        ^bb0(%a: tensor<i64>, %b: tensor<i64>):
          %t = stablehlo.add %a, %b : tensor<i64>
          stablehlo.return %t : tensor<i64>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<i64>) -> tensor<i64>
      %j = stablehlo.add %i, %one : tensor<i64>
      stablehlo.return %j, %s : tensor<i64>, tensor<i64>
    }
  return %r#1 : tensor<i64>
})", Grid(2, 1), [](int64_t i) { return One(I64s({}, {1 + i})); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  // 1 + 2 = 3, then 6, then 12.
  EXPECT_EQ(Ints(r.results[0][0]), std::vector<int64_t>{12});
  EXPECT_EQ(Ints(r.results[1][0]), std::vector<int64_t>{12});
}

TEST(CollectiveKernelsTest, AllGatherAcrossPartitions) {
  // channel > 0, no global ids: cross_replica_and_partition of [[0]] on 1x2.
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<2x1xi64>) -> tensor<2x2xi64> {
  %r = "stablehlo.all_gather"(%x) {all_gather_dim = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>} : (tensor<2x1xi64>) -> tensor<2x2xi64>
  return %r : tensor<2x2xi64>
})", Grid(1, 2), [](int64_t i) { return One(I64s({2, 1}, {1 + i, 10 + i})); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Ints(r.results[0][0]), (std::vector<int64_t>{1, 2, 10, 11}));
  EXPECT_EQ(Ints(r.results[1][0]), (std::vector<int64_t>{1, 2, 10, 11}));
}

TEST(CollectiveKernelsTest, ReduceScatterAndAllToAll) {
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<2x4xi64>) -> (tensor<2x2xi64>, tensor<4x2xi64>) {
  %r = "stablehlo.reduce_scatter"(%x) ({
    ^bb0(%a: tensor<i64>, %b: tensor<i64>):
      %s = stablehlo.add %a, %b : tensor<i64>
      stablehlo.return %s : tensor<i64>
  }) {scatter_dimension = 1 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x4xi64>) -> tensor<2x2xi64>
  %t = "stablehlo.all_to_all"(%x) {split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64,
    replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2x4xi64>) -> tensor<4x2xi64>
  return %r, %t : tensor<2x2xi64>, tensor<4x2xi64>
})", Grid(2, 1), [](int64_t i) {
    std::vector<int64_t> v;
    for (int64_t k = 1; k <= 8; ++k) v.push_back(k + 8 * i);
    return One(I64s({2, 4}, v));
  });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  // The spec's examples.
  EXPECT_EQ(Ints(r.results[0][0]), (std::vector<int64_t>{10, 12, 18, 20}));
  EXPECT_EQ(Ints(r.results[1][0]), (std::vector<int64_t>{14, 16, 22, 24}));
  EXPECT_EQ(Ints(r.results[0][1]), (std::vector<int64_t>{1, 2, 5, 6, 9, 10, 13, 14}));
  EXPECT_EQ(Ints(r.results[1][1]), (std::vector<int64_t>{3, 4, 7, 8, 11, 12, 15, 16}));
}

TEST(CollectiveKernelsTest, CollectivePermuteAcrossPartitions) {
  // channel > 0: cross_partition; pairs 0->1, 1->2 within each replica.
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<i64>) -> tensor<i64> {
  %r = "stablehlo.collective_permute"(%x) {source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>} : (tensor<i64>) -> tensor<i64>
  return %r : tensor<i64>
})", Grid(2, 3), [](int64_t i) { return One(I64s({}, {100 + i})); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  const std::vector<int64_t> want = {0, 100, 101, 0, 103, 104};
  for (int p = 0; p < 6; ++p) EXPECT_EQ(Ints(r.results[p][0]), std::vector<int64_t>{want[p]}) << p;
}

TEST(CollectiveKernelsTest, CollectiveBroadcast) {
  // The spec's example: group [[2, 1]] of 4 replicas; 0 and 3 are in none.
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<1x2xi64>) -> tensor<1x2xi64> {
  %b = "stablehlo.collective_broadcast"(%x) {replica_groups = dense<[[2, 1]]> : tensor<1x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>} : (tensor<1x2xi64>) -> tensor<1x2xi64>
  return %b : tensor<1x2xi64>
})", Grid(4, 1), [](int64_t i) { return One(I64s({1, 2}, {2 * i + 1, 2 * i + 2})); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Ints(r.results[0][0]), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Ints(r.results[1][0]), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(Ints(r.results[2][0]), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(Ints(r.results[3][0]), (std::vector<int64_t>{0, 0}));
}

TEST(CollectiveKernelsTest, SendRecvRing) {
  // Every replica sends before it receives: sends do not wait for their
  // receiver, so a ring does not deadlock.
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<2xi64>) -> tensor<2xi64> {
  %t = stablehlo.create_token : !stablehlo.token
  %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>,
    is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
  %v, %t2 = "stablehlo.recv"(%s) {channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>,
    is_host_transfer = false, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  return %v : tensor<2xi64>
})", Grid(4, 1), [](int64_t i) { return One(I64s({2}, {i, 10 * i})); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (int64_t p = 0; p < 4; ++p) {
    const int64_t from = (p + 3) % 4;
    EXPECT_EQ(Ints(r.results[p][0]), (std::vector<int64_t>{from, 10 * from}));
  }
}

TEST(CollectiveKernelsTest, SendRecvChain) {
  // MPMD in one function: replica 0 sends to 1, 1 receives then sends to 2.
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<2xi64>) -> tensor<2xi64> {
  %t = stablehlo.create_token : !stablehlo.token
  %id = stablehlo.replica_id : tensor<ui32>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %is0 = stablehlo.compare EQ, %id, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  %r = "stablehlo.if"(%is0) ({
    %s = "stablehlo.send"(%x, %t) {channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>,
      is_host_transfer = false, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    stablehlo.return %x : tensor<2xi64>
  }, {
    %v, %t2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 0, type = 1>,
      is_host_transfer = false, source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>} : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    stablehlo.return %v : tensor<2xi64>
  }) : (tensor<i1>) -> tensor<2xi64>
  return %r : tensor<2xi64>
})", Grid(2, 1), [](int64_t i) { return One(I64s({2}, {7 + i, 70 + i})); });
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(Ints(r.results[1][0]), (std::vector<int64_t>{7, 70}));
}

TEST(CollectiveKernelsTest, ACollectiveOnlySomeProcessesRunFailsCleanly) {
  // Replica 1 skips the all_reduce: replica 0 fails naming the op and the
  // process instead of waiting.
  const auto start = Clock::now();
  GridRun r = RunGrid(R"(
func.func @main(%x: tensor<i64>) -> tensor<i64> {
  %id = stablehlo.replica_id : tensor<ui32>
  %zero = stablehlo.constant dense<0> : tensor<ui32>
  %is0 = stablehlo.compare EQ, %id, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  %r = "stablehlo.if"(%is0) ({
    %s = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %t = stablehlo.add %a, %b : tensor<i64>
        stablehlo.return %t : tensor<i64>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<i64>) -> tensor<i64>
    stablehlo.return %s : tensor<i64>
  }, {
    stablehlo.return %x : tensor<i64>
  }) : (tensor<i1>) -> tensor<i64>
  return %r : tensor<i64>
})", Grid(2, 1), [](int64_t i) { return One(I64s({}, {i})); }, std::chrono::seconds(20));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  ASSERT_EQ(r.status.code(), StatusCode::kInvalidArgument) << r.status.ToString();
  EXPECT_NE(r.status.message().find("all_reduce"), std::string::npos) << r.status.message();
  EXPECT_NE(r.status.message().find("process 1 (replica 1, partition 0) ended without joining"),
            std::string::npos)
      << r.status.message();
}

TEST(CollectiveKernelsTest, OneProcessRunsGroupsOfOneAndRefusesMore) {
  auto one = testing::EvalText(AllReduce("[[0]]", "1x1", "channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>"),
                               Scaled(3));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(Ints((*one)[0]), (std::vector<int64_t>{3, 30, 300, 3000}));
  auto two = testing::EvalText(AllReduce("[[0, 1]]", "1x2", "channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>"),
                               Scaled(3));
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("replica id 1"), std::string::npos) << two.status().message();
}

}  // namespace
}  // namespace jitd::eval
