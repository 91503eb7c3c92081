// InlineAsyncOps (the inline pass's last step): async_start / async_done
// become the op they wrap, computing what the evaluator's futures compute.
#include <gtest/gtest.h>

#include <string>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::Evaluate;
using testing::F32;
using testing::ParseVerifiedOrFail;
using testing::RunAndCompare;
using testing::S32;
using testing::Tensor;


std::vector<double> Values(const eval::RuntimeValue& v) {
  std::vector<double> out;
  for (int64_t i = 0; i < v.literal().num_elements(); ++i) out.push_back(v.literal().GetDouble(i));
  return out;
}

TEST(InlineAsyncTest, FutureOfSeveralValuesAwaitedTwice) {
  // all_gather of two operands on one process (group {0}): a future of two
  // values, waited on by two async_done ops.
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4xf32>, %b: tensor<2xi32>) -> (tensor<4xf32>, tensor<2xi32>, tensor<2xi32>) {
    %f = "stablehlo.async_start"(%a, %b) ({
      %r:2 = "stablehlo.all_gather"(%a, %b) {all_gather_dim = 0 : i64,
                                              replica_groups = dense<[[0]]> : tensor<1x1xi64>}
          : (tensor<4xf32>, tensor<2xi32>) -> (tensor<4xf32>, tensor<2xi32>)
      "stablehlo.return"(%r#0, %r#1) : (tensor<4xf32>, tensor<2xi32>) -> ()
    }) : (tensor<4xf32>, tensor<2xi32>) -> !stablehlo.future<tensor<4xf32>, tensor<2xi32>>
    %d:2 = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<4xf32>, tensor<2xi32>>) -> (tensor<4xf32>, tensor<2xi32>)
    %e:2 = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<4xf32>, tensor<2xi32>>) -> (tensor<4xf32>, tensor<2xi32>)
    %m = stablehlo.multiply %e#1, %d#1 : tensor<2xi32>
    return %d#0, %e#1, %m : tensor<4xf32>, tensor<2xi32>, tensor<2xi32>
  }
}
)", "inline", {Tensor(F32({4}), {1, 2, 3, 4}), Tensor(S32({2}), {5, -6})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.async_start"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.async_done"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.all_gather"), 1);
  auto r = Evaluate(*m, {Tensor(F32({4}), {1, 2, 3, 4}), Tensor(S32({2}), {5, -6})});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(Values(r[0]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(Values(r[1]), (std::vector<double>{5, -6}));
  EXPECT_EQ(Values(r[2]), (std::vector<double>{25, 36}));
}

TEST(InlineAsyncTest, NestedRegionsAndBlockArgumentsAndUnwaitedStarts) {
  // A future made in @main and awaited inside an if branch; an async pair
  // inside a while body written with block arguments; an async_start that
  // nothing waits on (its op still runs, here a slice).
  auto m = RunAndCompare(R"(module {
  func.func @main(%p: tensor<i1>, %a: tensor<4xf32>) -> (tensor<2xf32>, tensor<4xf32>) {
    %f = "stablehlo.async_start"(%a) ({
      %s = "stablehlo.slice"(%a) {start_indices = array<i64: 2>, limit_indices = array<i64: 4>,
                                  strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
      "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
    }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
    %g = "stablehlo.async_start"(%a) ({
      %s = "stablehlo.slice"(%a) {start_indices = array<i64: 0>, limit_indices = array<i64: 1>,
                                  strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<1xf32>
      "stablehlo.return"(%s) : (tensor<1xf32>) -> ()
    }) : (tensor<4xf32>) -> !stablehlo.future<tensor<1xf32>>
    %r = "stablehlo.if"(%p) ({
      %d = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
      stablehlo.return %d : tensor<2xf32>
    }, {
      %z = stablehlo.constant dense<0.0> : tensor<2xf32>
      stablehlo.return %z : tensor<2xf32>
    }) : (tensor<i1>) -> tensor<2xf32>
    %i0 = stablehlo.constant dense<0> : tensor<i32>
    %w:2 = stablehlo.while(%i = %i0, %x = %a) : tensor<i32>, tensor<4xf32>
    cond {
      %three = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %u = stablehlo.constant dense<10.0> : tensor<1xf32>
      %h = "stablehlo.async_start"(%x, %u, %i) ({
      ^bb0(%xx: tensor<4xf32>, %uu: tensor<1xf32>, %ii: tensor<i32>):
        %s = "stablehlo.dynamic_update_slice"(%xx, %uu, %ii)
            : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> tensor<4xf32>
        "stablehlo.return"(%s) : (tensor<4xf32>) -> ()
      }) : (tensor<4xf32>, tensor<1xf32>, tensor<i32>) -> !stablehlo.future<tensor<4xf32>>
      %y = "stablehlo.async_done"(%h) : (!stablehlo.future<tensor<4xf32>>) -> tensor<4xf32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n, %y : tensor<i32>, tensor<4xf32>
    }
    return %r, %w#1 : tensor<2xf32>, tensor<4xf32>
  }
}
)", "inline", {Tensor(ir::Type::Scalar(ir::DType::kPred), {1}), Tensor(F32({4}), {1, 2, 3, 4})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.async_start"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.async_done"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.slice"), 2);  // the unwaited one stays
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.dynamic_update_slice"), 1);
  auto r = Evaluate(*m, {Tensor(ir::Type::Scalar(ir::DType::kPred), {1}), Tensor(F32({4}), {1, 2, 3, 4})});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Values(r[0]), (std::vector<double>{3, 4}));
  EXPECT_EQ(Values(r[1]), (std::vector<double>{10, 10, 10, 4}));
}

TEST(InlineAsyncTest, AsyncOpsInCalleesAreInlinedAfterTheCalls) {
  // The future crosses a call: after the calls are inlined, the pair meets.
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4xf32>) -> tensor<2xf32> {
    %f = func.call @start(%a) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
    %r = func.call @done(%f) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
  func.func private @start(%a: tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>> {
    %f = "stablehlo.async_start"(%a) ({
      %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                  strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
      "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
    }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
    return %f : !stablehlo.future<tensor<2xf32>>
  }
  func.func private @done(%f: !stablehlo.future<tensor<2xf32>>) -> tensor<2xf32> {
    %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
}
)", "inline", {Tensor(F32({4}), {1, 2, 3, 4})});
  ASSERT_TRUE(m);
  ASSERT_EQ(m->functions().size(), 1u);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.async_done"), 0);
}

TEST(InlineAsyncTest, RefusesFuturesItCannotFollow) {
  // A public function taking a future: nothing to pair it with.
  auto m = ParseVerifiedOrFail(R"(module {
  func.func @main(%f: !stablehlo.future<tensor<2xf32>>) -> tensor<2xf32> {
    %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
    return %r : tensor<2xf32>
  }
}
)");
  ASSERT_TRUE(m);
  PassManager manager;
  ASSERT_TRUE(AddPipeline(manager, "inline").ok());
  Status s = manager.Run(*m);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("@main"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("!stablehlo.future<tensor<2xf32>>"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace jitd::passes
