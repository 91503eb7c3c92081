// Shape kernels against hand-computed expectations: each test runs a small
// StableHLO program through the parser, the verifier and the evaluator.
#include <gtest/gtest.h>

#include <complex>
#include <memory>
#include <string_view>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::Doubles;
using testing::First;
using testing::Ints;

using V = std::vector<int64_t>;
using D = std::vector<double>;

TEST(ShapeOpsTest, IotaCountsAlongItsDimensionInEveryType) {
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x3xi32> {
  %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
})")),
            (V{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<3x2xui64> {
  %0 = stablehlo.iota dim = 0 : tensor<3x2xui64>
  return %0 : tensor<3x2xui64>
})")),
            (V{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(Doubles(First(R"(
func.func @main() -> tensor<4xbf16> {
  %0 = stablehlo.iota dim = 0 : tensor<4xbf16>
  return %0 : tensor<4xbf16>
})")),
            (D{0, 1, 2, 3}));
  ir::Literal c = First(R"(
func.func @main() -> tensor<3xcomplex<f64>> {
  %0 = stablehlo.iota dim = 0 : tensor<3xcomplex<f64>>
  return %0 : tensor<3xcomplex<f64>>
})");
  EXPECT_EQ(c.GetComplex(2), std::complex<double>(2, 0));
  // Wraps in narrow types: 256 elements of ui8 end at 255; a 300-long i8 wraps.
  ir::Literal w = First(R"(
func.func @main() -> tensor<300xi8> {
  %0 = stablehlo.iota dim = 0 : tensor<300xi8>
  return %0 : tensor<300xi8>
})");
  EXPECT_EQ(w.GetInt(127), 127);
  EXPECT_EQ(w.GetInt(128), -128);
  EXPECT_EQ(w.GetInt(299), 43);
}

TEST(ShapeOpsTest, BroadcastInDimExpandsSizeOneDimensions) {
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x3x2xi32> {
  %c = stablehlo.constant dense<[[1], [2], [3]]> : tensor<3x1xi32>
  %0 = stablehlo.broadcast_in_dim %c, dims = [1, 2] : (tensor<3x1xi32>) -> tensor<2x3x2xi32>
  return %0 : tensor<2x3x2xi32>
})")),
            (V{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  // Dimensions may also be permuted by broadcast_dimensions.
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<3x2xi32> {
  %c = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = stablehlo.broadcast_in_dim %c, dims = [1, 0] : (tensor<2x3xi32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
})")),
            (V{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Doubles(First(R"(
func.func @main() -> tensor<2x2xf16> {
  %c = stablehlo.constant dense<1.5> : tensor<f16>
  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f16>) -> tensor<2x2xf16>
  return %0 : tensor<2x2xf16>
})")),
            (D{1.5, 1.5, 1.5, 1.5}));
}

TEST(ShapeOpsTest, LegacyBroadcastPrependsDimensions) {
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x3xi16> {
  %c = stablehlo.constant dense<[7, 8, 9]> : tensor<3xi16>
  %0 = "stablehlo.broadcast"(%c) {broadcast_sizes = array<i64: 2>} : (tensor<3xi16>) -> tensor<2x3xi16>
  return %0 : tensor<2x3xi16>
})")),
            (V{7, 8, 9, 7, 8, 9}));
}

TEST(ShapeOpsTest, ReshapeKeepsRowMajorOrder) {
  ir::Literal r = First(R"(
func.func @main() -> tensor<3x2xcomplex<f32>> {
  %c = stablehlo.constant dense<[[(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)], [(7.0, 8.0), (9.0, 10.0), (11.0, 12.0)]]> : tensor<2x3xcomplex<f32>>
  %0 = stablehlo.reshape %c : (tensor<2x3xcomplex<f32>>) -> tensor<3x2xcomplex<f32>>
  return %0 : tensor<3x2xcomplex<f32>>
})");
  ASSERT_EQ(r.num_elements(), 6);
  EXPECT_EQ(r.GetComplex(3), std::complex<double>(7, 8));
  EXPECT_EQ(r.type().dim(0), 3);
}

TEST(ShapeOpsTest, TransposePermutesDimensions) {
  // result[i, j, k] = operand[j, i, k].
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<3x2x2xi64> {
  %c = stablehlo.constant dense<[[[0, 1], [2, 3], [4, 5]], [[6, 7], [8, 9], [10, 11]]]> : tensor<2x3x2xi64>
  %0 = stablehlo.transpose %c, dims = [1, 0, 2] : (tensor<2x3x2xi64>) -> tensor<3x2x2xi64>
  return %0 : tensor<3x2x2xi64>
})")),
            (V{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<3x2xui8> {
  %c = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xui8>
  %0 = stablehlo.transpose %c, dims = [1, 0] : (tensor<2x3xui8>) -> tensor<3x2xui8>
  return %0 : tensor<3x2xui8>
})")),
            (V{1, 4, 2, 5, 3, 6}));
}

TEST(ShapeOpsTest, ReverseFlipsOnlyTheListedDimensions) {
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x3xi32> {
  %c = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = stablehlo.reverse %c, dims = [1] : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
})")),
            (V{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x3xi32> {
  %c = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = stablehlo.reverse %c, dims = [0, 1] : tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
})")),
            (V{6, 5, 4, 3, 2, 1}));
}

TEST(ShapeOpsTest, SliceHonoursStartLimitAndStrides) {
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x2xi32> {
  %c = stablehlo.constant dense<[[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14]]> : tensor<3x5xi32>
  %0 = stablehlo.slice %c [0:3:2, 1:5:3] : (tensor<3x5xi32>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
})")),
            (V{1, 4, 11, 14}));
  // An empty slice.
  EXPECT_EQ(First(R"(
func.func @main() -> tensor<0x5xi32> {
  %c = stablehlo.constant dense<1> : tensor<3x5xi32>
  %0 = stablehlo.slice %c [2:2, 0:5] : (tensor<3x5xi32>) -> tensor<0x5xi32>
  return %0 : tensor<0x5xi32>
})")
                .num_elements(),
            0);
}

TEST(ShapeOpsTest, ConcatenateJoinsAlongADimension) {
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2x5xi32> {
  %a = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %b = stablehlo.constant dense<> : tensor<2x0xi32>
  %c = stablehlo.constant dense<[[5, 6, 7], [8, 9, 10]]> : tensor<2x3xi32>
  %0 = stablehlo.concatenate %a, %b, %c, dim = 1 : (tensor<2x2xi32>, tensor<2x0xi32>, tensor<2x3xi32>) -> tensor<2x5xi32>
  return %0 : tensor<2x5xi32>
})")),
            (V{1, 2, 5, 6, 7, 3, 4, 8, 9, 10}));
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<3x2xi1> {
  %a = stablehlo.constant dense<[[true, false]]> : tensor<1x2xi1>
  %b = stablehlo.constant dense<[[false, true], [true, true]]> : tensor<2x2xi1>
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<1x2xi1>, tensor<2x2xi1>) -> tensor<3x2xi1>
  return %0 : tensor<3x2xi1>
})")),
            (V{1, 0, 0, 1, 1, 1}));
}

TEST(ShapeOpsTest, PadWithInteriorAndNegativeEdges) {
  // Interior padding 1 then low -1, high 2: [1 p 2 p 3] -> [p 2 p 3 p p].
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<6xi32> {
  %c = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %p = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.pad %c, %p, low = [-1], high = [2], interior = [1] : (tensor<3xi32>, tensor<i32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
})")),
            (V{0, 2, 0, 3, 0, 0}));
  EXPECT_EQ(Doubles(First(R"(
func.func @main() -> tensor<3x2xf32> {
  %c = stablehlo.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %p = stablehlo.constant dense<-1.0> : tensor<f32>
  %0 = stablehlo.pad %c, %p, low = [1, -1], high = [0, 0], interior = [0, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
})")),
            (D{-1, -1, 2, 3, 5, 6}));
  // Everything cut away; the padding value only.
  EXPECT_EQ(Ints(First(R"(
func.func @main() -> tensor<2xi8> {
  %c = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi8>
  %p = stablehlo.constant dense<9> : tensor<i8>
  %0 = stablehlo.pad %c, %p, low = [-3], high = [2], interior = [0] : (tensor<3xi8>, tensor<i8>) -> tensor<2xi8>
  return %0 : tensor<2xi8>
})")),
            (V{9, 9}));
}

TEST(ShapeOpsTest, GetDimensionSizeIsAnI32) {
  ir::Literal r = First(R"(
func.func @main() -> tensor<i32> {
  %c = stablehlo.constant dense<0.0> : tensor<2x7xf32>
  %0 = stablehlo.get_dimension_size %c, dim = 1 : (tensor<2x7xf32>) -> tensor<i32>
  return %0 : tensor<i32>
})");
  EXPECT_EQ(r.dtype(), ir::DType::kS32);
  EXPECT_EQ(r.GetInt(0), 7);
}

}  // namespace
}  // namespace jitd::eval
