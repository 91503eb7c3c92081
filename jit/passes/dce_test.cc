#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::RunAndCompare;
using testing::Tensor;

TEST(DceTest, RemovesDeadChainsAndDeadOpsInRegions) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
    %0 = stablehlo.exponential %a : tensor<4xf32>
    %1 = stablehlo.multiply %0, %0 : tensor<4xf32>
    %2 = stablehlo.negate %1 : tensor<4xf32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %3:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<4xf32>
     cond {
      %4 = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %dead = stablehlo.sine %x : tensor<4xf32>
      %5 = stablehlo.add %i, %c1 : tensor<i32>
      %6 = stablehlo.add %x, %x : tensor<4xf32>
      stablehlo.return %5, %6 : tensor<i32>, tensor<4xf32>
    }
    return %3#1 : tensor<4xf32>
  }
}
)", "dce", {Tensor(ir::Type::Tensor(ir::DType::kF32, {4}), {1, 2, 3, 4}),
             Tensor(ir::Type::Scalar(ir::DType::kS32), {3})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.exponential"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.multiply"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.negate"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.sine"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.while"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 2);
}

TEST(DceTest, KeepsSideEffectsAndWhatTheyUse) {
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.abs %a : tensor<2xf32>
    %1 = stablehlo.custom_call @effect(%0) {has_side_effect = true} : (tensor<2xf32>) -> tensor<2xf32>
    %t = "stablehlo.create_token"() : () -> !stablehlo.token
    %2 = "stablehlo.outfeed"(%a, %t) <{outfeed_config = ""}> : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
    %dead = "stablehlo.create_token"() : () -> !stablehlo.token
    return %a : tensor<2xf32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "dce");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.custom_call"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.abs"), 1);  // used by the custom_call
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.outfeed"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.create_token"), 1);  // the outfeed's
}

}  // namespace
}  // namespace jitd::passes
