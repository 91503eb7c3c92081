// Futures in the evaluator: async_start runs its body's op and the future
// holds the values; async_done yields them, wherever the future went.
#include <gtest/gtest.h>

#include <string>

#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::EvalText;

constexpr std::string_view kStartAndPass = R"(
func.func @main(%a: tensor<4xi32>, %i: tensor<i32>) -> (!stablehlo.future<tensor<2xi32>>, tensor<2xi32>) {
  %f = "stablehlo.async_start"(%a, %i) ({
    %s = "stablehlo.dynamic_slice"(%a, %i) {slice_sizes = array<i64: 2>}
        : (tensor<4xi32>, tensor<i32>) -> tensor<2xi32>
    "stablehlo.return"(%s) : (tensor<2xi32>) -> ()
  }) : (tensor<4xi32>, tensor<i32>) -> !stablehlo.future<tensor<2xi32>>
  %r = func.call @wait(%f) : (!stablehlo.future<tensor<2xi32>>) -> tensor<2xi32>
  return %f, %r : !stablehlo.future<tensor<2xi32>>, tensor<2xi32>
}
func.func private @wait(%f: !stablehlo.future<tensor<2xi32>>) -> tensor<2xi32> {
  %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xi32>>) -> tensor<2xi32>
  return %r : tensor<2xi32>
}
)";

RuntimeValue I32s(std::vector<int64_t> values) {
  ir::Literal lit = *ir::Literal::Create(
      ir::Type::Tensor(ir::DType::kS32, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) lit.SetInt(static_cast<int64_t>(i), values[i]);
  return RuntimeValue(std::move(lit));
}

RuntimeValue I32(int64_t v) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
  lit.SetInt(0, v);
  return RuntimeValue(std::move(lit));
}

TEST(FutureEvalTest, FuturesAreValuesThatCrossCallsAndReturns) {
  auto r = EvalText(kStartAndPass, {I32s({10, 20, 30, 40}), I32(1)});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  const RuntimeValue& future = (*r)[0];
  ASSERT_TRUE(future.is_future());
  EXPECT_FALSE(future.is_tensor() || future.is_tuple() || future.is_token());
  EXPECT_EQ(future.type().ToString(), "!stablehlo.future<tensor<2xi32>>");
  ASSERT_EQ(future.future_values().size(), 1u);
  EXPECT_EQ(future.future_values()[0].literal().GetInt(0), 20);
  EXPECT_EQ(future.future_values()[0].literal().GetInt(1), 30);
  ASSERT_TRUE((*r)[1].is_tensor());
  EXPECT_TRUE((*r)[1].literal() == future.future_values()[0].literal());
  // dynamic_slice clamps its start: 3 reads from 2.
  auto clamped = EvalText(kStartAndPass, {I32s({10, 20, 30, 40}), I32(3)});
  ASSERT_TRUE(clamped.ok()) << clamped.status().ToString();
  EXPECT_EQ((*clamped)[1].literal().GetInt(0), 30);
  EXPECT_EQ((*clamped)[1].literal().GetInt(1), 40);
}

TEST(FutureEvalTest, AsyncDoneOfSomethingElseIsAnError) {
  // Verified IR never does this; a detached evaluation (constant folding's
  // entry) checks the values it is handed against the op's operand types.
  auto m = frontend::ParseModule(R"(
func.func @main(%f: !stablehlo.future<tensor<2xi32>>) -> tensor<2xi32> {
  %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xi32>>) -> tensor<2xi32>
  return %r : tensor<2xi32>
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Op& done = *(*m)->EntryFunction()->entry()->ops()[0];
  auto r = EvaluateDetachedOp(**m, done, {I32s({1, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be !stablehlo.future<tensor<2xi32>>, got tensor<2xi32>"),
            std::string::npos) << r.status().ToString();
  auto ok = EvaluateDetachedOp(**m, done, {RuntimeValue::Future({I32s({1, 2})})});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0].literal().GetInt(1), 2);
}

}  // namespace
}  // namespace jitd::eval
