#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::RunAndCompare;
using testing::Tensor;

TEST(FoldConstantsTest, FoldsChainsAndRegionOps) {
  auto m = RunAndCompare(R"(module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<f32>, tensor<3xf32>) {
    %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %b = stablehlo.constant dense<[0.5, -4.0, 1.0e30]> : tensor<3xf32>
    %0 = stablehlo.multiply %a, %b : tensor<3xf32>
    %1 = stablehlo.exponential %0 : tensor<3xf32>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %2 = stablehlo.reduce(%1 init: %z) across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
     reducer(%p: tensor<f32>, %q: tensor<f32>) {
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %3 = stablehlo.add %x, %1 : tensor<3xf32>
    return %1, %2, %3 : tensor<3xf32>, tensor<f32>, tensor<3xf32>
  }
}
)", "fold-constants,dce", {Tensor(ir::Type::Tensor(ir::DType::kF32, {3}), {1, 2, 3})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.multiply"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.exponential"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.reduce"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.add"), 1);  // uses the argument
}

TEST(FoldConstantsTest, RespectsTheSizeLimit) {
  const char* text = R"(module {
  func.func @main() -> tensor<64xi32> {
    %a = stablehlo.constant dense<3> : tensor<64xi32>
    %b = stablehlo.constant dense<4> : tensor<64xi32>
    %0 = stablehlo.add %a, %b : tensor<64xi32>
    return %0 : tensor<64xi32>
  }
}
)";
  PipelineOptions small;
  small.max_folded_bytes = 255;  // the result is 256 bytes
  auto kept = RunAndCompare(text, "fold-constants", {}, small);
  ASSERT_TRUE(kept);
  EXPECT_EQ(CountOpsNamed(*kept, "stablehlo.add"), 1);
  PipelineOptions enough;
  enough.max_folded_bytes = 256;
  auto folded = RunAndCompare(text, "fold-constants,dce", {}, enough);
  ASSERT_TRUE(folded);
  EXPECT_EQ(CountOpsNamed(*folded, "stablehlo.add"), 0);
  EXPECT_NE(ir::PrintModule(*folded).find("dense<7> : tensor<64xi32>"), std::string::npos);
}

TEST(FoldConstantsTest, LeavesEffectsRuntimeValuesAndFailuresAlone) {
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main() -> (tensor<2xf32>, tensor<ui32>, tensor<4xi32>, tensor<2xf32>, tensor<3xf32>, tensor<i32>) {
    %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %0 = stablehlo.custom_call @f(%a) {has_side_effect = false} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = "stablehlo.replica_id"() : () -> tensor<ui32>
    %2 = stablehlo.iota dim = 0 : tensor<4xi32>
    %lo = stablehlo.constant dense<0.0> : tensor<f32>
    %hi = stablehlo.constant dense<1.0> : tensor<f32>
    %shape = stablehlo.constant dense<2> : tensor<1xi64>
    %3 = stablehlo.rng %lo, %hi, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<2xf32>
    %w = stablehlo.constant dense_resource<__elided__> : tensor<3xf32>
    %4 = stablehlo.negate %w : tensor<3xf32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.while(%i = %c0) : tensor<i32>
     cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      stablehlo.return %i : tensor<i32>
    }
    return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<ui32>, tensor<4xi32>, tensor<2xf32>, tensor<3xf32>, tensor<i32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "fold-constants");
  for (const char* op : {"stablehlo.custom_call", "stablehlo.replica_id", "stablehlo.iota",
                         "stablehlo.rng", "stablehlo.negate", "stablehlo.while"}) {
    EXPECT_EQ(CountOpsNamed(*m, op), 1) << op;
  }
}

}  // namespace
}  // namespace jitd::passes
