// The evaluator on quantized types: uniform_quantize / uniform_dequantize
// and ops run as dequantize -> op -> quantize, against values computed by
// hand from real_value = scale * (storage_value - zero_point).
#include <gtest/gtest.h>

#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::Doubles;
using testing::First;
using testing::Ints;

TEST(QuantizedEvalTest, QuantizeRoundsHalfToEvenAndClamps) {
  // scale 1, zero point 0: x rounds to nearest even, then clamps to i8.
  auto r = First(R"(func.func @main() -> tensor<7x!quant.uniform<i8:f32, 1.0>> {
  %x = stablehlo.constant dense<[0.5, 1.5, 2.5, -0.5, -1.5, 300.0, -300.0]> : tensor<7xf32>
  %q = stablehlo.uniform_quantize %x : (tensor<7xf32>) -> tensor<7x!quant.uniform<i8:f32, 1.0>>
  return %q : tensor<7x!quant.uniform<i8:f32, 1.0>>
})");
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{0, 2, 2, 0, -2, 127, -128}));
}

TEST(QuantizedEvalTest, StorageRangeNarrowsTheClamp) {
  auto r = First(R"(func.func @main() -> tensor<3x!quant.uniform<i8<-127:100>:f32, 0.5:10>> {
  %x = stablehlo.constant dense<[-300.0, 300.0, 2.0]> : tensor<3xf32>
  %q = stablehlo.uniform_quantize %x : (tensor<3xf32>) -> tensor<3x!quant.uniform<i8<-127:100>:f32, 0.5:10>>
  return %q : tensor<3x!quant.uniform<i8<-127:100>:f32, 0.5:10>>
})");
  // 2.0 / 0.5 + 10 = 14.
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{-127, 100, 14}));
}

TEST(QuantizedEvalTest, DequantizePerAxis) {
  // Axis 1 of a 2x2: column 0 has scale 0.5 zp 2, column 1 scale 0.25 zp -4.
  auto r = First(R"(func.func @main() -> tensor<2x2xf32> {
  %q = stablehlo.constant dense<[[4, 0], [-2, 8]]> : tensor<2x2x!quant.uniform<i8:f32:1, {0.5:2,0.25:-4}>>
  %x = stablehlo.uniform_dequantize %q : (tensor<2x2x!quant.uniform<i8:f32:1, {0.5:2,0.25:-4}>>) -> tensor<2x2xf32>
  return %x : tensor<2x2xf32>
})");
  EXPECT_EQ(Doubles(r), (std::vector<double>{1.0, 1.0, -2.0, 3.0}));
}

TEST(QuantizedEvalTest, AddWithDifferentParameters) {
  // lhs (q + 2) * 0.5 = [2, 3, -4, 64.5, 1]; rhs (q - 10) * 0.25 = [1, 0, -2, 29.25, -0.5]
  // sum [3, 3, -6, 93.75, 0.5] -> / 0.1 + 5 = [35, 35, -55, clamp 942.5 -> 127, 10].
  auto r = First(R"(func.func @main() -> tensor<5x!quant.uniform<i8:f32, 0.1:5>> {
  %a = stablehlo.constant dense<[2, 4, -10, 127, 0]> : tensor<5x!quant.uniform<i8:f32, 0.5:-2>>
  %b = stablehlo.constant dense<[14, 10, 2, 127, 8]> : tensor<5x!quant.uniform<i8:f32, 0.25:10>>
  %r = stablehlo.add %a, %b : (tensor<5x!quant.uniform<i8:f32, 0.5:-2>>, tensor<5x!quant.uniform<i8:f32, 0.25:10>>) -> tensor<5x!quant.uniform<i8:f32, 0.1:5>>
  return %r : tensor<5x!quant.uniform<i8:f32, 0.1:5>>
})");
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{35, 35, -55, 127, 10}));
}

TEST(QuantizedEvalTest, DotGeneralPerAxisIntoI32) {
  // lhs (q - 1) * 0.5 = [[1, 2]]; rhs per output column: scale 0.25 for
  // column 0 ([[1], [2]]), 0.5 for column 1 ([[1], [-3]]).
  // dot = [[5, -5]]; result per-axis i32: 5 / 0.125 = 40, -5 / 0.25 = -20.
  auto r = First(R"(func.func @main() -> tensor<1x2x!quant.uniform<i32:f32:1, {0.125,0.25}>> {
  %a = stablehlo.constant dense<[[3, 5]]> : tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>
  %b = stablehlo.constant dense<[[4, 2], [8, -6]]> : tensor<2x2x!quant.uniform<i8:f32:1, {0.25,0.5}>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x2x!quant.uniform<i8:f32, 0.5:1>>, tensor<2x2x!quant.uniform<i8:f32:1, {0.25,0.5}>>) -> tensor<1x2x!quant.uniform<i32:f32:1, {0.125,0.25}>>
  return %r : tensor<1x2x!quant.uniform<i32:f32:1, {0.125,0.25}>>
})");
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{40, -20}));
}

TEST(QuantizedEvalTest, ConvolutionPerTensorIntoI32) {
  // lhs 0.5 * q = [1, 2, 3], rhs 0.25 * q = [1, 2]: valid 1-D convolution
  // [1*1 + 2*2, 2*1 + 3*2] = [5, 8] -> / 0.125 = [40, 64].
  auto r = First(R"(func.func @main() -> tensor<1x2x1x!quant.uniform<i32:f32, 0.125>> {
  %a = stablehlo.constant dense<[[[2], [4], [6]]]> : tensor<1x3x1x!quant.uniform<i8:f32, 0.5>>
  %b = stablehlo.constant dense<[[[4]], [[8]]]> : tensor<2x1x1x!quant.uniform<i8:f32, 0.25>>
  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x1x!quant.uniform<i8:f32, 0.5>>, tensor<2x1x1x!quant.uniform<i8:f32, 0.25>>) -> tensor<1x2x1x!quant.uniform<i32:f32, 0.125>>
  return %r : tensor<1x2x1x!quant.uniform<i32:f32, 0.125>>
})");
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{40, 64}));
}

TEST(QuantizedEvalTest, RequantizePerAxis) {
  // The spec's example: dequantize [10, 10] with {0.1:-30, 0.5:-20} to
  // [4, 15], quantize with {0.1:-20, 0.2:-30} to [20, 45].
  auto r = First(R"(func.func @main() -> tensor<2x!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>> {
  %q = stablehlo.constant dense<[10, 10]> : tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>
  %r = stablehlo.uniform_quantize %q : (tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>) -> tensor<2x!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>>
  return %r : tensor<2x!quant.uniform<i8:f32:0, {0.1:-20,0.2:-30}>>
})");
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{20, 45}));
}

TEST(QuantizedEvalTest, DotIntoTheProductScaleIsExactInIntegers) {
  // 1100 products of 127 * 127: the sum 17741900 is beyond f32's 2^24, so
  // dequantize -> f32 dot -> quantize would round it; the integer form
  // (the result scale is lhs scale * rhs scale) gives it exactly.
  auto r = First(R"(func.func @main() -> tensor<1x1x!quant.uniform<i32:f32, 0.010000000000000002>> {
  %a = stablehlo.constant dense<127> : tensor<1x1100x!quant.uniform<i8:f32, 0.1>>
  %b = stablehlo.constant dense<127> : tensor<1100x1x!quant.uniform<i8:f32, 0.1>>
  %r = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x1100x!quant.uniform<i8:f32, 0.1>>, tensor<1100x1x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x1x!quant.uniform<i32:f32, 0.010000000000000002>>
  return %r : tensor<1x1x!quant.uniform<i32:f32, 0.010000000000000002>>
})");
  EXPECT_EQ(Ints(r), (std::vector<int64_t>{17741900}));
}

}  // namespace
}  // namespace jitd::eval
