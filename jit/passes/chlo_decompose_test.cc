#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using testing::CountOpsNamed;
using testing::kInf;
using testing::kNaN;
using testing::RunAndCompare;
using testing::Tensor;


int CountChlo(const ir::Module& m) {
  int n = 0;
  for (const auto& fn : m.functions()) {
    ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const ir::Op& op) {
      n += op.name().substr(0, 5) == "chlo.";
    });
  }
  return n;
}

TEST(DecomposeChloTest, ExactDecompositionsMatchTheEvaluatorBitForBit) {
  const std::vector<double> values = {0.0, -0.0, 1.5, -2.25, 1e30, -1e-30, kInf, -kInf, kNaN, 0.7};
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    const std::string t = std::string("tensor<10x") + dtype + ">";
    const std::string text = R"(module {
  func.func @main(%x: )" + t + R"() -> ()" + t + ", " + t + R"(, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, )" + t + R"() {
    %0 = chlo.tan %x : )" + t + " -> " + t + R"(
    %1 = chlo.square %x : )" + t + " -> " + t + R"(
    %2 = chlo.is_inf %x : )" + t + R"( -> tensor<10xi1>
    %3 = chlo.is_pos_inf %x : )" + t + R"( -> tensor<10xi1>
    %4 = chlo.is_neg_inf %x : )" + t + R"( -> tensor<10xi1>
    %5 = chlo.conj %x : )" + t + " -> " + t + R"(
    return %0, %1, %2, %3, %4, %5 : )" + t + ", " + t + R"(, tensor<10xi1>, tensor<10xi1>, tensor<10xi1>, )" + t + R"(
  }
}
)";
    const ir::DType d = *ir::ParseDTypeName(dtype);
    auto m = RunAndCompare(text, "decompose-chlo,dce", {Tensor(ir::Type::Tensor(d, {10}), values)});
    ASSERT_TRUE(m) << dtype;
    EXPECT_EQ(CountChlo(*m), 0) << dtype << "\n" << ir::PrintModule(*m);
  }
}

TEST(DecomposeChloTest, NextAfterStepsTheBitsLikeTheEvaluator) {
  const double max32 = std::numeric_limits<float>::max();
  const double den32 = std::numeric_limits<float>::denorm_min();
  // Pairs (x, y) covering: equal, signed zeros, NaN on either side,
  // infinities, toward and away from zero on both signs, subnormals.
  const std::vector<double> xs = {1.0, 0.0, -0.0, 0.0, kNaN, 1.0, -kInf, kInf, -1.5, -1.5,
                                  2.0, max32, den32, -den32, 3.0, 0.0};
  const std::vector<double> ys = {1.0, -0.0, 0.0, -1.0, 1.0, kNaN, 0.0, kInf, -2.0, 0.0,
                                  -kInf, kInf, 0.0, 0.0, 2.0, 5.0};
  for (const char* dtype : {"f32", "f64", "f16", "bf16"}) {
    const std::string t = std::string("tensor<16x") + dtype + ">";
    const std::string text = R"(module {
  func.func @main(%x: )" + t + ", %y: " + t + ") -> " + t + R"( {
    %0 = chlo.next_after %x, %y : )" + t + ", " + t + " -> " + t + R"(
    return %0 : )" + t + R"(
  }
}
)";
    const ir::DType d = *ir::ParseDTypeName(dtype);
    auto m = RunAndCompare(text, "decompose-chlo,dce",
                           {Tensor(ir::Type::Tensor(d, {16}), xs), Tensor(ir::Type::Tensor(d, {16}), ys)});
    ASSERT_TRUE(m) << dtype;
    EXPECT_EQ(CountChlo(*m), 0) << dtype;
  }
}

TEST(DecomposeChloTest, ComplexConjAndSquare) {
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main() -> (tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>) {
    %c = stablehlo.constant dense<[(1.0, 2.0), (-0.0, 0.0), (0x7FC00000, -3.5)]> : tensor<3xcomplex<f32>>
    %0 = chlo.conj %c : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
    %1 = chlo.square %c : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
    return %0, %1 : tensor<3xcomplex<f32>>, tensor<3xcomplex<f32>>
  }
}
)");
  ASSERT_TRUE(m);
  auto want = testing::Evaluate(*m, {});
  testing::RunPipeline(*m, "decompose-chlo");
  auto got = testing::Evaluate(*m, {});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(want[0].literal() == got[0].literal());
  EXPECT_TRUE(want[1].literal() == got[1].literal());
  EXPECT_EQ(CountOpsNamed(*m, "chlo.conj"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "chlo.square"), 1);  // complex square is not decomposed
}

TEST(DecomposeChloTest, TopKBecomesAStableSortAndSlices) {
  for (const char* dtype : {"f32", "i32", "ui8"}) {
    const std::string t = std::string("tensor<2x6x") + dtype + ">";
    const std::string k = std::string("tensor<2x3x") + dtype + ">";
    const std::string text = R"(module {
  func.func @main(%x: )" + t + R"() -> ()" + k + R"(, tensor<2x3xi32>) {
    %0:2 = chlo.top_k(%x, k = 3) : )" + t + " -> (" + k + R"(, tensor<2x3xi32>)
    return %0#0, %0#1 : )" + k + R"(, tensor<2x3xi32>
  }
}
)";
    const ir::DType d = *ir::ParseDTypeName(dtype);
    // Ties, signed zeros, NaN and infinities: the order must be the same.
    std::vector<double> values = {3, 1, 3, 0, 7, 3, 2, 2, 2, 9, 1, 2};
    if (ir::IsFloat(d)) values = {-0.0, 0.0, kNaN, 1, -kInf, 1, 5, -kNaN, kInf, 2, 2, -1};
    auto m = RunAndCompare(text, "decompose-chlo", {Tensor(ir::Type::Tensor(d, {2, 6}), values)});
    ASSERT_TRUE(m) << dtype;
    EXPECT_EQ(CountChlo(*m), 0) << dtype;
    EXPECT_EQ(CountOpsNamed(*m, "stablehlo.sort"), 1) << dtype;
  }
}

TEST(DecomposeChloTest, SpecialFunctionsStay) {
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %0 = chlo.erf %x : tensor<4xf32> -> tensor<4xf32>
    %1 = chlo.lgamma %x : tensor<4xf32> -> tensor<4xf32>
    %2 = chlo.sinh %x : tensor<4xf32> -> tensor<4xf32>
    return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "decompose-chlo");
  EXPECT_EQ(CountChlo(*m), 3);
}

TEST(DecomposeChloTest, BroadcastOpsBecomeBroadcastInDimAndTheElementwiseOp) {
  const std::string text = R"(module {
  func.func @main(%m: tensor<2x3xf32>, %row: tensor<3xf32>, %col: tensor<2xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>) {
    %0 = chlo.broadcast_add %m, %row : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %1 = chlo.broadcast_subtract %col, %m {broadcast_dimensions = array<i64: 0>} : (tensor<2xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = chlo.broadcast_compare %m, %row {comparison_direction = #chlo<comparison_direction GE>} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
    %3 = chlo.broadcast_select %2, %m, %row : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>
  }
}
)";
  auto m = RunAndCompare(text, "decompose-chlo,dce",
                         {Tensor(ir::Type::Tensor(ir::DType::kF32, {2, 3}), {1, 5, -2, 0.5, kNaN, 7}),
                          Tensor(ir::Type::Tensor(ir::DType::kF32, {3}), {1, 2, 3}),
                          Tensor(ir::Type::Tensor(ir::DType::kF32, {2}), {10, -10})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountChlo(*m), 0) << ir::PrintModule(*m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.broadcast_in_dim"), 4);
}

TEST(DecomposeChloTest, MulhiWidensBelow64BitsAndConstantsBecomeStablehlo) {
  for (const char* dtype : {"i8", "i16", "i32", "ui8", "ui16", "ui32"}) {
    const std::string t = std::string("tensor<6x") + dtype + ">";
    const std::string text = R"(module {
  func.func @main(%a: )" + t + R"() -> ()" + t + ", " + t + R"() {
    %0 = chlo.mulhi %a, %a : )" + t + ", " + t + " -> " + t + R"(
    %1 = "chlo.constant_like"(%a) {value = 3 : i32} : ()" + t + ") -> " + t + R"(
    %2 = chlo.mulhi %0, %1 : )" + t + ", " + t + " -> " + t + R"(
    return %0, %2 : )" + t + ", " + t + R"(
  }
}
)";
    const ir::DType d = *ir::ParseDTypeName(dtype);
    std::vector<double> values = {0, 1, -1, 100, -128, 127};
    if (ir::IsUnsignedInt(d)) values = {0, 1, 255, 100, 128, 17};
    if (ir::BitWidth(d) >= 16) values[4] = ir::IsUnsignedInt(d) ? 65535 : -32768;
    if (ir::BitWidth(d) == 32) values[5] = ir::IsUnsignedInt(d) ? 4294967295.0 : -2147483648.0;
    auto m = RunAndCompare(text, "decompose-chlo,dce", {Tensor(ir::Type::Tensor(d, {6}), values)});
    ASSERT_TRUE(m) << dtype;
    EXPECT_EQ(CountChlo(*m), 0) << dtype << "\n" << ir::PrintModule(*m);
  }
  // 64-bit mulhi has no wider type: it stays for the evaluator.
  auto m = testing::ParseVerifiedOrFail(R"(module {
  func.func @main(%a: tensor<2xi64>) -> tensor<2xi64> {
    %0 = chlo.mulhi %a, %a : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
    return %0 : tensor<2xi64>
  }
}
)");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "decompose-chlo");
  EXPECT_EQ(CountChlo(*m), 1);
}

}  // namespace
}  // namespace jitd::passes
