#include "jit/eval/eval.h"

#include <gtest/gtest.h>

#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::EvalText;

TEST(EvaluatorTest, ConstantsCallsAndTuples) {
  auto r = EvalText(R"(
func.func @main() -> (tensor<2xi32>, tensor<i32>) {
  %c = stablehlo.constant dense<[3, 4]> : tensor<2xi32>
  %0:2 = call @pair(%c) : (tensor<2xi32>) -> (tensor<2xi32>, tensor<i32>)
  %t = stablehlo.tuple %0#0, %0#1 : tuple<tensor<2xi32>, tensor<i32>>
  %e = stablehlo.get_tuple_element %t[1] : (tuple<tensor<2xi32>, tensor<i32>>) -> tensor<i32>
  return %0#0, %e : tensor<2xi32>, tensor<i32>
}
func.func private @pair(%a: tensor<2xi32>) -> (tensor<2xi32>, tensor<i32>) {
  %c = stablehlo.constant dense<7> : tensor<i32>
  return %a, %c : tensor<2xi32>, tensor<i32>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].literal().GetInt(1), 4);
  EXPECT_EQ((*r)[1].literal().GetInt(0), 7);
}

TEST(EvaluatorTest, CaseClampsItsIndexToTheLastBranch) {
  const char* text = R"(
func.func @main(%i: tensor<i32>) -> tensor<i32> {
  %0 = "stablehlo.case"(%i) ({
    %c = stablehlo.constant dense<10> : tensor<i32>
    stablehlo.return %c : tensor<i32>
  }, {
    %c = stablehlo.constant dense<20> : tensor<i32>
    stablehlo.return %c : tensor<i32>
  }) : (tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
})";
  for (auto [index, expected] : {std::pair{0, 10}, {1, 20}, {5, 20}, {-1, 20}}) {
    ir::Literal arg = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
    arg.SetInt(0, index);
    std::vector<RuntimeValue> args;
    args.emplace_back(std::move(arg));
    auto r = EvalText(text, std::move(args));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ((*r)[0].literal().GetInt(0), expected) << index;
  }
}

TEST(EvaluatorTest, ArgumentsAreChecked) {
  auto r = EvalText("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n return %a : tensor<2xf32>\n}");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("takes 1 arguments, got 0"), std::string::npos);
}

TEST(EvaluatorTest, ElidedResourcesNeedAFillSeed) {
  const char* text = R"(
func.func @main() -> tensor<3xf32> {
  %c = stablehlo.constant dense_resource<__elided__> : tensor<3xf32>
  return %c : tensor<3xf32>
})";
  auto r = EvalText(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no data"), std::string::npos);
  EvalOptions options;
  options.resource_fill_seed = 42;
  auto a = EvalText(text, {}, options);
  auto b = EvalText(text, {}, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].literal(), (*b)[0].literal());  // reproducible
  const double v = (*a)[0].literal().GetDouble(0);
  EXPECT_TRUE(v >= -1.0 && v < 1.0);
}

TEST(EvaluatorTest, DeadlineStopsInfiniteLoops) {
  EvalOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  auto r = EvalText(R"(
func.func @main() -> tensor<i1> {
  %t = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.while(%it = %t) : tensor<i1>
   cond {
    stablehlo.return %it : tensor<i1>
  } do {
    stablehlo.return %it : tensor<i1>
  }
  return %0 : tensor<i1>
})",
               {}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
}

TEST(EvaluatorTest, RecursionIsBounded) {
  auto r = EvalText(R"(
func.func @main() -> tensor<i32> {
  %0 = call @main() : () -> tensor<i32>
  return %0 : tensor<i32>
})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(EvaluatorTest, EvaluateDetachedOpRunsOneOpWithItsRegions) {
  auto m = frontend::ParseModule(R"(
func.func @main(%x: tensor<3xi32>, %init: tensor<i32>) -> tensor<i32> {
  %0 = stablehlo.reduce(%x init: %init) across dimensions = [0] : (tensor<3xi32>, tensor<i32>) -> tensor<i32>
   reducer(%p: tensor<i32>, %q: tensor<i32>) {
    %s = stablehlo.add %p, %q : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }
  return %0 : tensor<i32>
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Op& reduce = *(*m)->EntryFunction()->entry()->ops()[0];
  ir::Literal x = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kS32, {3}));
  for (int i = 0; i < 3; ++i) x.SetInt(i, i + 1);
  ir::Literal init = *ir::Literal::Create(ir::Type::Scalar(ir::DType::kS32));
  init.SetInt(0, 10);
  std::vector<RuntimeValue> operands;
  operands.emplace_back(x);
  operands.emplace_back(init);
  auto r = EvaluateDetachedOp(**m, reduce, operands);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].literal().GetInt(0), 16);
  // Wrong operand count or type: an error, not a crash.
  operands.pop_back();
  EXPECT_FALSE(EvaluateDetachedOp(**m, reduce, operands).ok());
  operands.emplace_back(x);
  EXPECT_FALSE(EvaluateDetachedOp(**m, reduce, operands).ok());
  // A terminator alone is refused.
  const ir::Op& ret = *(*m)->EntryFunction()->entry()->terminator();
  EXPECT_FALSE(EvaluateDetachedOp(**m, ret, {RuntimeValue(init)}).ok());
}

}  // namespace
}  // namespace jitd::eval
