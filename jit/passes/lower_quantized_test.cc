// lower-quantized: every rewrite computes the evaluator's bits on quantized
// programs (RunAndCompare evaluates before and after), and leaves no
// quantized op but the reinterpreting bitcasts at function boundaries.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using ir::DType;
using ir::Type;
using testing::CountOpsNamed;
using testing::F32;
using testing::RunAndCompare;
using testing::Tensor;

// Ops that still have a quantized operand or result, bitcasts aside.
int QuantizedOps(const ir::Module& m) {
  int n = 0;
  for (const auto& fn : m.functions()) {
    ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const ir::Op& op) {
      n += ir::HasQuantizedTypes(op) && op.code() != ir::OpCode::kBitcastConvert &&
           op.code() != ir::OpCode::kFuncReturn;
    });
  }
  return n;
}

// The element type of operand `i` of the first op named `name`.
DType OperandDType(const ir::Module& m, std::string_view name, size_t i) {
  DType d = DType::kPred;
  bool found = false;
  ir::WalkOps(static_cast<const ir::Region&>(m.EntryFunction()->body()), [&](const ir::Op& op) {
    if (!found && op.name() == name) {
      d = op.operand(i)->type().dtype();
      found = true;
    }
  });
  EXPECT_TRUE(found) << name;
  return d;
}

TEST(LowerQuantizedTest, QuantizeTiesToEvenClampsAndMapsNaNToTheZeroPoint) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto m = RunAndCompare(R"(func.func @main(%x: tensor<12xf32>) -> (tensor<12x!quant.uniform<i8:f32, 1.0>>, tensor<12x!quant.uniform<i8<-100:100>:f32, 0.5:7>>, tensor<12x!quant.uniform<u8:f32, 0.25:128>>) {
  %a = stablehlo.uniform_quantize %x : (tensor<12xf32>) -> tensor<12x!quant.uniform<i8:f32, 1.0>>
  %b = stablehlo.uniform_quantize %x : (tensor<12xf32>) -> tensor<12x!quant.uniform<i8<-100:100>:f32, 0.5:7>>
  %c = stablehlo.uniform_quantize %x : (tensor<12xf32>) -> tensor<12x!quant.uniform<u8:f32, 0.25:128>>
  return %a, %b, %c : tensor<12x!quant.uniform<i8:f32, 1.0>>, tensor<12x!quant.uniform<i8<-100:100>:f32, 0.5:7>>, tensor<12x!quant.uniform<u8:f32, 0.25:128>>
})",
                         "lower-quantized",
                         {Tensor(F32({12}), {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 300, -300, nan, inf, -inf, 0.75})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.round_nearest_even"), 3);
}

TEST(LowerQuantizedTest, I32StorageClampsAtItsLimitsThoughF32RoundsThem) {
  auto m = RunAndCompare(R"(func.func @main(%x: tensor<5xf32>) -> tensor<5x!quant.uniform<i32:f32, 1.0>> {
  %q = stablehlo.uniform_quantize %x : (tensor<5xf32>) -> tensor<5x!quant.uniform<i32:f32, 1.0>>
  return %q : tensor<5x!quant.uniform<i32:f32, 1.0>>
})",
                         "lower-quantized", {Tensor(F32({5}), {3.0e9, -3.0e9, 2147483520.0, -2147483648.0, 1.5})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
}

TEST(LowerQuantizedTest, DequantizeAndRequantizePerAxis) {
  auto m = RunAndCompare(R"(func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3x!quant.uniform<i8:f32:1, {0.5:2,0.25:-4,2.0:0}>>) {
  %q = stablehlo.uniform_quantize %x : (tensor<2x3xf32>) -> tensor<2x3x!quant.uniform<i8:f32:1, {0.1:-30,0.5:-20,0.3:5}>>
  %d = stablehlo.uniform_dequantize %q : (tensor<2x3x!quant.uniform<i8:f32:1, {0.1:-30,0.5:-20,0.3:5}>>) -> tensor<2x3xf32>
  %r = stablehlo.uniform_quantize %q : (tensor<2x3x!quant.uniform<i8:f32:1, {0.1:-30,0.5:-20,0.3:5}>>) -> tensor<2x3x!quant.uniform<i8:f32:1, {0.5:2,0.25:-4,2.0:0}>>
  return %d, %r : tensor<2x3xf32>, tensor<2x3x!quant.uniform<i8:f32:1, {0.5:2,0.25:-4,2.0:0}>>
})",
                         "lower-quantized", {Tensor(F32({2, 3}), {1.0, 2.25, -3.5, 0.05, 7.0, 9.9})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_GE(CountOpsNamed(*m, "stablehlo.broadcast_in_dim"), 1);  // per-axis parameters
}

TEST(LowerQuantizedTest, ElementwiseOpsRunDequantized) {
  auto m = RunAndCompare(R"(func.func @main(%a: tensor<5x!quant.uniform<i8:f32, 0.5:-2>>, %b: tensor<5x!quant.uniform<i8:f32, 0.25:10>>) -> (tensor<5x!quant.uniform<i8:f32, 0.1:5>>, tensor<5x!quant.uniform<i8:f32, 0.5:-2>>) {
  %r = stablehlo.add %a, %b : (tensor<5x!quant.uniform<i8:f32, 0.5:-2>>, tensor<5x!quant.uniform<i8:f32, 0.25:10>>) -> tensor<5x!quant.uniform<i8:f32, 0.1:5>>
  %t = stablehlo.tanh %a : tensor<5x!quant.uniform<i8:f32, 0.5:-2>>
  return %r, %t : tensor<5x!quant.uniform<i8:f32, 0.1:5>>, tensor<5x!quant.uniform<i8:f32, 0.5:-2>>
})",
                         "lower-quantized,canonicalize,cse,dce",
                         {Tensor(Type::Quantized({.storage = DType::kS8, .storage_min = -128, .storage_max = 127,
                                                  .scales = {0.5}, .zero_points = {-2}},
                                                 {5}),
                                 {2, 4, -10, 127, -128}),
                          Tensor(Type::Quantized({.storage = DType::kS8, .storage_min = -128, .storage_max = 127,
                                                  .scales = {0.25}, .zero_points = {10}},
                                                 {5}),
                                 {14, 10, 2, 127, 8})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  // The function keeps its signature.
  EXPECT_TRUE(m->EntryFunction()->arg_types()[0].is_quantized());
  EXPECT_TRUE(m->EntryFunction()->result_types()[1].is_quantized());
}

TEST(LowerQuantizedTest, SymmetricI8DotBecomesAnI8GemmIntoI32) {
  auto m = RunAndCompare(R"(func.func @main() -> tensor<2x2x!quant.uniform<i32:f32:1, {0.125,0.25}>> {
  %a = stablehlo.constant dense<[[3, 5, -128], [127, -1, 9]]> : tensor<2x3x!quant.uniform<i8:f32, 0.5>>
  %b = stablehlo.constant dense<[[4, 2], [8, -6], [127, -128]]> : tensor<3x2x!quant.uniform<i8:f32:1, {0.25,0.5}>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x!quant.uniform<i8:f32:1, {0.25,0.5}>>) -> tensor<2x2x!quant.uniform<i32:f32:1, {0.125,0.25}>>
  return %r : tensor<2x2x!quant.uniform<i32:f32:1, {0.125,0.25}>>
})",
                         "lower-quantized");
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(OperandDType(*m, "stablehlo.dot_general", 0), DType::kS8);
  EXPECT_EQ(OperandDType(*m, "stablehlo.dot_general", 1), DType::kS8);
}

TEST(LowerQuantizedTest, ZeroPointsBecomeI32OffsetsAndAnI8ResultClamps) {
  auto m = RunAndCompare(R"(func.func @main(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.25:-1>> {
  %b = stablehlo.constant dense<[[4, 2], [8, -6], [127, -128]]> : tensor<3x2x!quant.uniform<i8:f32, 0.5:-2>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3x!quant.uniform<i8:f32, 0.5:3>>, tensor<3x2x!quant.uniform<i8:f32, 0.5:-2>>) -> tensor<2x2x!quant.uniform<i8:f32, 0.25:-1>>
  return %r : tensor<2x2x!quant.uniform<i8:f32, 0.25:-1>>
})",
                         "lower-quantized",
                         {Tensor(Type::Quantized({.storage = DType::kS8, .storage_min = -128, .storage_max = 127,
                                                  .scales = {0.5}, .zero_points = {3}},
                                                 {2, 3}),
                                 {1, 2, 3, -4, 5, 6})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(OperandDType(*m, "stablehlo.dot_general", 0), DType::kS32);
}

TEST(LowerQuantizedTest, AsymmetricLhsKeepsTheI8ProductAndCorrectsBySums) {
  // lhs zero point 5 (asymmetric activations), rhs per-axis with zero
  // points 0, batched with the contracting dimension first: a . b - 5 * sums.
  auto m = RunAndCompare(R"(func.func @main(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.5:5>>) -> tensor<2x4x2x!quant.uniform<i8:f32:2, {0.125,0.25}>> {
  %b = stablehlo.constant dense<[[[4, 2], [8, -6], [127, -128]], [[1, 1], [-128, 127], [0, -3]]]> : tensor<2x3x2x!quant.uniform<i8:f32:2, {0.25,0.5}>>
  %r = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<2x3x4x!quant.uniform<i8:f32, 0.5:5>>, tensor<2x3x2x!quant.uniform<i8:f32:2, {0.25,0.5}>>) -> tensor<2x4x2x!quant.uniform<i8:f32:2, {0.125,0.25}>>
  return %r : tensor<2x4x2x!quant.uniform<i8:f32:2, {0.125,0.25}>>
})",
                         "lower-quantized",
                         {Tensor(Type::Quantized({.storage = DType::kS8, .storage_min = -128, .storage_max = 127,
                                                  .scales = {0.5}, .zero_points = {5}},
                                                 {2, 3, 4}),
                                 {1, -2, 3, 127, -128, 6, 0, 9, -128, -128, 5, 5, 7, 7, -7, 100, 2, 3, 4, 5, -1, -2, -3, -4})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.dot_general"), 2);
  EXPECT_EQ(OperandDType(*m, "stablehlo.dot_general", 0), DType::kS8);
}

TEST(LowerQuantizedTest, DotWithOtherScalesRunsInFloat) {
  // 0.5 * 0.5 != 0.3: the result is no integer sum; dequantize -> dot -> quantize.
  auto m = RunAndCompare(R"(func.func @main() -> tensor<1x2x!quant.uniform<i8:f32, 0.3:1>> {
  %a = stablehlo.constant dense<[[3, 5]]> : tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>
  %b = stablehlo.constant dense<[[4, 2], [8, -6]]> : tensor<2x2x!quant.uniform<i8:f32, 0.5>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>, tensor<2x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x2x!quant.uniform<i8:f32, 0.3:1>>
  return %r : tensor<1x2x!quant.uniform<i8:f32, 0.3:1>>
})",
                         "lower-quantized");
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(OperandDType(*m, "stablehlo.dot_general", 0), DType::kF32);
}

TEST(LowerQuantizedTest, ConvolutionInIntegers) {
  auto m = RunAndCompare(R"(func.func @main(%a: tensor<1x4x2x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<1x4x3x!quant.uniform<i32:f32:2, {0.125,0.25,0.0625}>> {
  %b = stablehlo.constant dense<[[[4, -2, 1], [8, 3, -7]], [[1, 1, 1], [-128, 127, 0]]]> : tensor<2x2x3x!quant.uniform<i8:f32:2, {0.25,0.5,0.125}>>
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x2x!quant.uniform<i8:f32, 0.5:2>>, tensor<2x2x3x!quant.uniform<i8:f32:2, {0.25,0.5,0.125}>>) -> tensor<1x4x3x!quant.uniform<i32:f32:2, {0.125,0.25,0.0625}>>
  return %r : tensor<1x4x3x!quant.uniform<i32:f32:2, {0.125,0.25,0.0625}>>
})",
                         "lower-quantized",
                         {Tensor(Type::Quantized({.storage = DType::kS8, .storage_min = -128, .storage_max = 127,
                                                  .scales = {0.5}, .zero_points = {2}},
                                                 {1, 4, 2}),
                                 {1, -2, 3, 127, -128, 6, 0, 9})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(OperandDType(*m, "stablehlo.convolution", 0), DType::kS32);
}

TEST(LowerQuantizedTest, SymmetricI8ConvolutionStaysI8) {
  auto m = RunAndCompare(R"(func.func @main(%a: tensor<1x5x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x5x2x!quant.uniform<i32:f32, 0.125>> {
  %b = stablehlo.constant dense<[[[4, -2], [8, 3]], [[1, 1], [-128, 127]], [[-1, 0], [2, -3]]]> : tensor<3x2x2x!quant.uniform<i8:f32, 0.25>>
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x5x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x2x2x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x5x2x!quant.uniform<i32:f32, 0.125>>
  return %r : tensor<1x5x2x!quant.uniform<i32:f32, 0.125>>
})",
                         "lower-quantized",
                         {Tensor(Type::Quantized({.storage = DType::kS8, .storage_min = -128, .storage_max = 127,
                                                  .scales = {0.5}, .zero_points = {0}},
                                                 {1, 5, 2}),
                                 {1, -2, 3, 127, -128, 6, 0, 9, -128, -128})});
  ASSERT_TRUE(m);
  EXPECT_EQ(QuantizedOps(*m), 0);
  EXPECT_EQ(OperandDType(*m, "stablehlo.convolution", 0), DType::kS8);
}

TEST(LowerQuantizedTest, AFunctionWithQuantizedValuesInRegionsStaysAsWritten) {
  auto m = RunAndCompare(R"(func.func @main(%x: tensor<4xf32>, %p: tensor<i1>) -> tensor<4xf32> {
  %q = stablehlo.uniform_quantize %x : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5>>
  %r = "stablehlo.if"(%p) ({
    %d = stablehlo.uniform_dequantize %q : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4xf32>
    stablehlo.return %d : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %r : tensor<4xf32>
})",
                         "lower-quantized",
                         {Tensor(F32({4}), {1.2, 2.5, 3, 4}), Tensor(Type::Scalar(DType::kPred), {1})});
  ASSERT_TRUE(m);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.uniform_quantize"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.uniform_dequantize"), 1);
}

TEST(LowerQuantizedTest, ChecksSeeTheirOperandsQuantized) {
  auto m = testing::ParseVerifiedOrFail(R"(func.func @main() {
  %x = stablehlo.constant dense<[4.0, 15.0]> : tensor<2xf32>
  %q = stablehlo.uniform_quantize %x : (tensor<2xf32>) -> tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>
  check.expect_eq_const %q, dense<[10, 10]> : tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>
  return
})");
  ASSERT_TRUE(m);
  testing::RunPipeline(*m, "lower-quantized");
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.uniform_quantize"), 0);
  ir::WalkOps(static_cast<const ir::Region&>(m->EntryFunction()->body()), [&](const ir::Op& op) {
    if (op.code() == ir::OpCode::kCheckExpectEqConst) {
      EXPECT_TRUE(op.operand(0)->type().is_quantized()) << op.operand(0)->type().ToString();
    }
  });
}

TEST(LowerQuantizedTest, DevicePipelinesLowerWhenTheTargetAsks) {
  PipelineOptions options;
  options.lower_quantized = true;
  PassManager spelled;
  ASSERT_TRUE(AddPipeline(spelled, "inline,decompose-chlo,cse,dce", options).ok());
  EXPECT_EQ(spelled.PassNames(),
            (std::vector<std::string>{"inline", "decompose-chlo", "lower-quantized", "cse", "dce"}));
  PassManager standard;
  ASSERT_TRUE(AddPipeline(standard, "default", options).ok());
  EXPECT_EQ(standard.PassNames()[2], "lower-quantized");
  PassManager plain;
  ASSERT_TRUE(AddPipeline(plain, "cse", {}).ok());
  EXPECT_EQ(plain.PassNames(), (std::vector<std::string>{"cse"}));
}

}  // namespace
}  // namespace jitd::passes
