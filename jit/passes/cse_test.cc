#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::F32;
using testing::RunAndCompare;
using testing::Tensor;


TEST(CseTest, MergesEqualOpsAndKeepsDifferentOnes) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>) {
    %c1 = stablehlo.constant dense<2.0> : tensor<4xf32>
    %c2 = stablehlo.constant dense<2.0> : tensor<4xf32>
    %c3 = stablehlo.constant dense<3.0> : tensor<4xf32>
    %0 = stablehlo.add %a, %c1 : tensor<4xf32>
    %1 = stablehlo.add %a, %c2 : tensor<4xf32>
    %2 = stablehlo.add %b, %a : tensor<4xf32>
    %3 = stablehlo.multiply %0, %1 : tensor<4xf32>
    %4 = stablehlo.multiply %3, %2 : tensor<4xf32>
    %5 = stablehlo.add %4, %c3 : tensor<4xf32>
    %g = stablehlo.compare GT, %a, %b, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %l = stablehlo.compare LT, %a, %b, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %g2 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %s = stablehlo.select %g2, %5, %1 : tensor<4xi1>, tensor<4xf32>
    return %5, %g, %l, %s : tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>
  }
}
)", "cse", {Tensor(F32({4}), {1, -2, 3, 0.5}), Tensor(F32({4}), {0, 4, -1, 0.5})});
  ASSERT_TRUE(m);
  // Two of the three constants, %0/%1 merged; %2 (other operands) and %5
  // (other constant) stay.
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.constant"), 2);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 3);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.compare"), 2);  // GT twice -> once; LT differs
}

TEST(CseTest, ComparesRegionsStructurally) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%a: tensor<4xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%a init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
     reducer(%p: tensor<f32>, %q: tensor<f32>) {
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %1 = stablehlo.reduce(%a init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
     reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %s = stablehlo.add %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %2 = stablehlo.reduce(%a init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
     reducer(%x: tensor<f32>, %y: tensor<f32>) {
      %s = stablehlo.maximum %x, %y : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<f32>
  }
}
)", "cse", {Tensor(F32({4}), {1, -2, 3, 0.5})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.reduce"), 2);  // add twice -> once; max differs
}

TEST(CseTest, KeepsElidedResourceConstantsApart) {
  // Both print as dense_resource<__elided__>, but hold different weights.
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main() -> (tensor<2xf32>, tensor<2xf32>) {
    %0 = stablehlo.constant dense_resource<__elided__> : tensor<2xf32>
    %1 = stablehlo.constant dense_resource<__elided__> : tensor<2xf32>
    return %0, %1 : tensor<2xf32>, tensor<2xf32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "cse");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.constant"), 2);
}

TEST(CseTest, NeverMergesSideEffects) {
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
    %0 = stablehlo.custom_call @f(%a) {has_side_effect = true} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = stablehlo.custom_call @f(%a) {has_side_effect = true} : (tensor<2xf32>) -> tensor<2xf32>
    return %0, %1 : tensor<2xf32>, tensor<2xf32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "cse");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.custom_call"), 2);
}

TEST(CseTest, ReusesOuterValuesInsideControlFlowOnly) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%p: tensor<i1>, %a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.exponential %a : tensor<4xf32>
    %1 = "stablehlo.if"(%p) ({
      %2 = stablehlo.exponential %a : tensor<4xf32>
      stablehlo.return %2 : tensor<4xf32>
    }, {
      stablehlo.return %0 : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    %3 = stablehlo.add %1, %0 : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
}
)", "cse", {Tensor(ir::Type::Scalar(ir::DType::kPred), {1}), Tensor(F32({4}), {1, -2, 3, 0.5})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.exponential"), 1);
}

}  // namespace
}  // namespace jitd::passes
