#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::RunAndCompare;
using testing::Tensor;

const ir::Type kI32x2 = ir::Type::Tensor(ir::DType::kS32, {2});

TEST(InlineTest, InlinesCallChainsAndRemovesUnusedPrivateFunctions) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
    %0 = call @outer(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
    %1:2 = call @pair(%0) : (tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>)
    %2 = stablehlo.add %1#0, %1#1 : tensor<2xi32>
    return %2, %0 : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @outer(%x: tensor<2xi32>, %y: tensor<2xi32>) -> tensor<2xi32> {
    %0 = call @inner(%x) : (tensor<2xi32>) -> tensor<2xi32>
    %1 = stablehlo.multiply %0, %y : tensor<2xi32>
    return %1 : tensor<2xi32>
  }
  func.func private @inner(%x: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.add %x, %x : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func private @pair(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
    %c = stablehlo.constant dense<[5, 6]> : tensor<2xi32>
    return %c, %x : tensor<2xi32>, tensor<2xi32>
  }
  func.func private @never_called(%x: tensor<2xi32>) -> tensor<2xi32> {
    return %x : tensor<2xi32>
  }
}
)", "inline", {Tensor(kI32x2, {1, 2}), Tensor(kI32x2, {3, 4})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 0);
  ASSERT_EQ(m->functions().size(), 1u);
  EXPECT_EQ(m->functions()[0]->name(), "main");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 2);  // inner's and main's
}

TEST(InlineTest, InlinesCallsInsideRegionsAndKeepsPublicFunctions) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%p: tensor<i1>, %a: tensor<2xi32>) -> tensor<2xi32> {
    %0 = "stablehlo.if"(%p) ({
      %1 = func.call @double(%a) : (tensor<2xi32>) -> tensor<2xi32>
      stablehlo.return %1 : tensor<2xi32>
    }, {
      stablehlo.return %a : tensor<2xi32>
    }) : (tensor<i1>) -> tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func private @double(%x: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.add %x, %x : tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func public @exported(%x: tensor<2xi32>) -> tensor<2xi32> {
    return %x : tensor<2xi32>
  }
}
)", "inline", {Tensor(ir::Type::Scalar(ir::DType::kPred), {1}), Tensor(kI32x2, {7, -3})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 0);
  EXPECT_EQ(m->FindFunction("double"), nullptr);
  EXPECT_NE(m->FindFunction("exported"), nullptr);  // public: part of the interface
}

TEST(InlineTest, LeavesRecursiveCallsAlone) {
  // The verifier allows recursion (the evaluator bounds its depth); the
  // pass must not loop, and keeps the recursive functions.
  auto m = testing::ParseVerified(R"(module {
  func.func @main(%a: tensor<i32>) -> tensor<i32> {
    %0 = call @ping(%a) : (tensor<i32>) -> tensor<i32>
    %1 = call @leaf(%0) : (tensor<i32>) -> tensor<i32>
    return %1 : tensor<i32>
  }
  func.func private @ping(%x: tensor<i32>) -> tensor<i32> {
    %0 = call @pong(%x) : (tensor<i32>) -> tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @pong(%x: tensor<i32>) -> tensor<i32> {
    %0 = call @ping(%x) : (tensor<i32>) -> tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @leaf(%x: tensor<i32>) -> tensor<i32> {
    return %x : tensor<i32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "inline");
  EXPECT_NE(m->FindFunction("ping"), nullptr);
  EXPECT_NE(m->FindFunction("pong"), nullptr);
  EXPECT_EQ(m->FindFunction("leaf"), nullptr);
  EXPECT_EQ(CountOpsNamed(*m, "func.call"), 3);  // main->ping, ping->pong, pong->ping
}

}  // namespace
}  // namespace jitd::passes
