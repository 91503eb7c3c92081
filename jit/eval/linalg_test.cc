// Linear-algebra kernels against hand-computed expectations: dot_general
// batching and wraparound in the result type, convolution dilations,
// padding, reversal and groups, the four FFT kinds (direct, radix-2 and
// Bluestein lengths), triangular_solve in all orientations, cholesky,
// batch norm, and XLA's Threefry/Philox bit streams.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <string>
#include <string_view>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::Doubles;
using testing::First;
using testing::Ints;
using testing::Results;
using testing::UInts;

std::vector<std::complex<double>> Complexes(const ir::Literal& lit) {
  std::vector<std::complex<double>> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetComplex(i));
  return out;
}

void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected,
                double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

void ExpectNear(const std::vector<std::complex<double>>& actual,
                const std::vector<std::complex<double>>& expected, double tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i].real(), expected[i].real(), tolerance) << "element " << i;
    EXPECT_NEAR(actual[i].imag(), expected[i].imag(), tolerance) << "element " << i;
  }
}

using V = std::vector<int64_t>;
using D = std::vector<double>;
using C = std::vector<std::complex<double>>;

// ---- dot_general, dot ------------------------------------------------------

TEST(LinalgTest, DotGeneralBatchingAndContracting) {
  // Batch 2 of (2x3) x (3x1).
  auto r = First(R"(
func.func @main() -> tensor<2x2x1xi32> {
  %a = stablehlo.constant dense<[[[1, 2, 3], [4, 5, 6]], [[1, 0, 0], [0, 0, 2]]]> : tensor<2x2x3xi32>
  %b = stablehlo.constant dense<[[[1], [1], [1]], [[7], [8], [9]]]> : tensor<2x3x1xi32>
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x2x3xi32>, tensor<2x3x1xi32>) -> tensor<2x2x1xi32>
  return %0 : tensor<2x2x1xi32>
})");
  EXPECT_EQ(Ints(r), (V{6, 15, 7, 18}));
}

TEST(LinalgTest, DotGeneralContractsNonAdjacentDimsAndOrdersFreeDims) {
  // lhs [k=2, m=1, j=2], rhs [j=2, n=3, k=2]: contract (k, j) pairs.
  auto r = First(R"(
func.func @main() -> tensor<1x3xi64> {
  %a = stablehlo.constant dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xi64>
  %b = stablehlo.constant dense<[[[1, 0], [0, 1], [1, 1]], [[2, 0], [0, 2], [1, 0]]]> : tensor<2x3x2xi64>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0, 2] x [2, 0] : (tensor<2x1x2xi64>, tensor<2x3x2xi64>) -> tensor<1x3xi64>
  return %0 : tensor<1x3xi64>
})");
  // out[n] = sum_{k,j} a[k,0,j] * b[j,n,k]
  // n=0: a00*b000 + a01*b100 + a10*b001 + a11*b101 = 1*1 + 2*2 + 3*0 + 4*0 = 5
  // n=1: 1*0 + 2*0 + 3*1 + 4*2 = 11;  n=2: 1*1 + 2*1 + 3*1 + 4*0 = 6
  EXPECT_EQ(Ints(r), (V{5, 11, 6}));
}

TEST(LinalgTest, DotGeneralBatchingInTheMiddleAndManyColumns) {
  // lhs [m=1, b=2, k=2], rhs [k=2, n=1, b=2]; then a 1x2 by 2x6 product
  // (more columns than one block of four).
  auto r = Results(R"(
func.func @main() -> (tensor<2x1x1xi32>, tensor<1x6xi32>) {
  %a = stablehlo.constant dense<[[[1, 2], [3, 4]]]> : tensor<1x2x2xi32>
  %b = stablehlo.constant dense<[[[5, 6]], [[7, 8]]]> : tensor<2x1x2xi32>
  %0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [2], contracting_dims = [2] x [0] : (tensor<1x2x2xi32>, tensor<2x1x2xi32>) -> tensor<2x1x1xi32>
  %c = stablehlo.constant dense<[[1, 10]]> : tensor<1x2xi32>
  %d = stablehlo.constant dense<[[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]> : tensor<2x6xi32>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<1x2xi32>, tensor<2x6xi32>) -> tensor<1x6xi32>
  return %0, %1 : tensor<2x1x1xi32>, tensor<1x6xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ints(r[0]), (V{1 * 5 + 2 * 7, 3 * 6 + 4 * 8}));
  EXPECT_EQ(Ints(r[1]), (V{71, 82, 93, 104, 115, 126}));
}

TEST(LinalgTest, DotGeneralIntegersWrapInTheResultType) {
  auto r = Results(R"(
func.func @main() -> (tensor<1x1xi8>, tensor<1x1xui8>) {
  %a = stablehlo.constant dense<[[100, 100]]> : tensor<1x2xi8>
  %b = stablehlo.constant dense<[[2], [1]]> : tensor<2x1xi8>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x2xi8>, tensor<2x1xi8>) -> tensor<1x1xi8>
  %c = stablehlo.constant dense<[[200, 200]]> : tensor<1x2xui8>
  %d = stablehlo.constant dense<[[2], [2]]> : tensor<2x1xui8>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<1x2xui8>, tensor<2x1xui8>) -> tensor<1x1xui8>
  return %0, %1 : tensor<1x1xi8>, tensor<1x1xui8>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ints(r[0]), (V{44}));  // 300 mod 256
  EXPECT_EQ(Ints(r[1]), (V{32}));  // 800 mod 256
}

TEST(LinalgTest, DotGeneralAccumulatesInAWiderResultType) {
  auto r = First(R"(
func.func @main() -> tensor<i32> {
  %a = stablehlo.constant dense<[127, 127, -128]> : tensor<3xi8>
  %0 = stablehlo.dot_general %a, %a, contracting_dims = [0] x [0] : (tensor<3xi8>, tensor<3xi8>) -> tensor<i32>
  return %0 : tensor<i32>
})");
  EXPECT_EQ(Ints(r), (V{127 * 127 * 2 + 128 * 128}));
}

TEST(LinalgTest, DotGeneralRoundsLikeTheResultType) {
  // f32: multiply, then add in index order, rounding each op in f32 as the
  // spec's decomposition does: 1 + 2^-24 rounds back to 1 (ties to even),
  // twice. f16: accumulated in f32 and rounded once, as XLA does:
  // 2048 + 1 + 1 = 2050 (step-by-step f16 sums would stay at 2048).
  auto r = Results(R"(
func.func @main() -> (tensor<f32>, tensor<f16>) {
  %a = stablehlo.constant dense<[1.0, 5.96046448e-08, 5.96046448e-08]> : tensor<3xf32>
  %b = stablehlo.constant dense<1.0> : tensor<3xf32>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  %c = stablehlo.constant dense<[2048.0, 1.0, 1.0]> : tensor<3xf16>
  %d = stablehlo.constant dense<1.0> : tensor<3xf16>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [0] x [0] : (tensor<3xf16>, tensor<3xf16>) -> tensor<f16>
  return %0, %1 : tensor<f32>, tensor<f16>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].GetDouble(0), 1.0);
  EXPECT_EQ(r[1].GetDouble(0), 2050.0);
}

TEST(LinalgTest, DotGeneralBooleansAreOrOfAnds) {
  auto r = First(R"(
func.func @main() -> tensor<2xi1> {
  %a = stablehlo.constant dense<[[true, false], [false, false]]> : tensor<2x2xi1>
  %b = stablehlo.constant dense<[true, true]> : tensor<2xi1>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
})");
  EXPECT_EQ(Ints(r), (V{1, 0}));
}

TEST(LinalgTest, DotGeneralComplex) {
  auto r = First(R"(
func.func @main() -> tensor<complex<f64>> {
  %a = stablehlo.constant dense<[(1.0, 2.0), (0.0, 1.0)]> : tensor<2xcomplex<f64>>
  %b = stablehlo.constant dense<[(3.0, -1.0), (0.0, 1.0)]> : tensor<2xcomplex<f64>>
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>) -> tensor<complex<f64>>
  return %0 : tensor<complex<f64>>
})");
  // (1+2i)(3-i) + i*i = (5+5i) - 1
  EXPECT_EQ(r.GetComplex(0), std::complex<double>(4, 5));
}

TEST(LinalgTest, LegacyDotMatrixVector) {
  auto r = First(R"(
func.func @main() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %b = stablehlo.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %0 = "stablehlo.dot"(%a, %b) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})");
  EXPECT_EQ(Doubles(r), (D{-1, -1}));
}

// ---- convolution -----------------------------------------------------------

TEST(LinalgTest, ConvolutionSpecExampleWithLhsDilationAndStrides) {
  auto r = First(R"(
func.func @main() -> tensor<1x2x2x1xi64> {
  %lhs = stablehlo.constant dense<[[[[1], [2], [5], [6]], [[3], [4], [7], [8]], [[10], [11], [14], [15]], [[12], [13], [16], [17]]]]> : tensor<1x4x4x1xi64>
  %rhs = stablehlo.constant dense<1> : tensor<3x3x1x1xi64>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [4, 4], lhs_dilate = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x4x4x1xi64>, tensor<3x3x1x1xi64>) -> tensor<1x2x2x1xi64>
  return %0 : tensor<1x2x2x1xi64>
})");
  EXPECT_EQ(Ints(r), (V{10, 26, 46, 62}));
}

TEST(LinalgTest, ConvolutionPaddingRhsDilationAndReversal) {
  // 1-D: lhs [1, 2, 3, 4], kernel [1, 10]. Padding (1, -1): the padded
  // input is [0, 1, 2, 3]. rhs_dilation 2: windows pair p and p + 2.
  auto r = Results(R"(
func.func @main() -> (tensor<1x1x2xi32>, tensor<1x1x2xi32>) {
  %lhs = stablehlo.constant dense<[[[1, 2, 3, 4]]]> : tensor<1x1x4xi32>
  %rhs = stablehlo.constant dense<[[[1, 10]]]> : tensor<1x1x2xi32>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = [[1, -1]], rhs_dilate = [2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x4xi32>, tensor<1x1x2xi32>) -> tensor<1x1x2xi32>
  %1 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = [[1, -1]], rhs_dilate = [2], reverse = [true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x4xi32>, tensor<1x1x2xi32>) -> tensor<1x1x2xi32>
  return %0, %1 : tensor<1x1x2xi32>, tensor<1x1x2xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ints(r[0]), (V{0 * 1 + 2 * 10, 1 * 1 + 3 * 10}));
  EXPECT_EQ(Ints(r[1]), (V{0 * 10 + 2 * 1, 1 * 10 + 3 * 1}));
}

TEST(LinalgTest, ConvolutionPaddingHoldsZerosThatMultiply) {
  // The padded position pairs 0 with an infinite weight: 0 * inf is NaN.
  auto r = First(R"(
func.func @main() -> tensor<1x1x1xf32> {
  %lhs = stablehlo.constant dense<[[[1.0]]]> : tensor<1x1x1xf32>
  %rhs = stablehlo.constant dense<[[[2.0, 0x7F800000]]]> : tensor<1x1x2xf32>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {pad = [[0, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x1xf32>, tensor<1x1x2xf32>) -> tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
})");
  EXPECT_TRUE(std::isnan(r.GetDouble(0)));
}

TEST(LinalgTest, ConvolutionFeatureGroups) {
  // Two groups of one input feature each; output features 0,1 read input
  // feature 0 and output features 2,3 read input feature 1.
  auto r = First(R"(
func.func @main() -> tensor<1x4x1xf32> {
  %lhs = stablehlo.constant dense<[[[1.0], [10.0]]]> : tensor<1x2x1xf32>
  %rhs = stablehlo.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x2x1xf32>, tensor<4x1x1xf32>) -> tensor<1x4x1xf32>
  return %0 : tensor<1x4x1xf32>
})");
  EXPECT_EQ(Doubles(r), (D{1, 2, 30, 40}));
}

TEST(LinalgTest, ConvolutionBatchGroups) {
  // Batch 4 split into 2 groups; output features 0,1 see batches 0,1 and
  // output features 2,3 see batches 2,3.
  auto r = First(R"(
func.func @main() -> tensor<2x4x1xf32> {
  %lhs = stablehlo.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]]]> : tensor<4x1x1xf32>
  %rhs = stablehlo.constant dense<[[[1.0]], [[10.0]], [[100.0]], [[1000.0]]]> : tensor<4x1x1xf32>
  %0 = stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<2x4x1xf32>
  return %0 : tensor<2x4x1xf32>
})");
  EXPECT_EQ(Doubles(r), (D{1, 10, 300, 3000, 2, 20, 400, 4000}));
}

// ---- fft -------------------------------------------------------------------

TEST(LinalgTest, FftKinds) {
  auto r = Results(R"(
func.func @main() -> (tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>, tensor<3xcomplex<f64>>, tensor<4xf64>) {
  %x = stablehlo.constant dense<[(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0)]> : tensor<4xcomplex<f64>>
  %0 = stablehlo.fft %x, type =  FFT, length = [4] : (tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>>
  %1 = stablehlo.fft %0, type =  IFFT, length = [4] : (tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>>
  %r = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf64>
  %2 = stablehlo.fft %r, type =  RFFT, length = [4] : (tensor<4xf64>) -> tensor<3xcomplex<f64>>
  %3 = stablehlo.fft %2, type =  IRFFT, length = [4] : (tensor<3xcomplex<f64>>) -> tensor<4xf64>
  return %0, %1, %2, %3 : tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>, tensor<3xcomplex<f64>>, tensor<4xf64>
})");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(Complexes(r[0]), (C{{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}}));
  EXPECT_EQ(Complexes(r[1]), (C{{1, 0}, {2, 0}, {3, 0}, {4, 0}}));
  EXPECT_EQ(Complexes(r[2]), (C{{10, 0}, {-2, 2}, {-2, 0}}));
  EXPECT_EQ(Doubles(r[3]), (D{1, 2, 3, 4}));
}

TEST(LinalgTest, FftOverTwoDimensions) {
  // 2-D FFT of a 2x2 matrix: [[a+b+c+d, a-b+c-d], [a+b-c-d, a-b-c+d]].
  auto r = First(R"(
func.func @main() -> tensor<2x2xcomplex<f32>> {
  %x = stablehlo.constant dense<[[(1.0, 0.0), (2.0, 0.0)], [(3.0, 0.0), (4.0, 1.0)]]> : tensor<2x2xcomplex<f32>>
  %0 = stablehlo.fft %x, type =  FFT, length = [2, 2] : (tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>>
  return %0 : tensor<2x2xcomplex<f32>>
})");
  EXPECT_EQ(Complexes(r), (C{{10, 1}, {-2, -1}, {-4, -1}, {0, 1}}));
}

TEST(LinalgTest, RfftAndIrfftOverTwoDimensions) {
  // RFFT over [2, 4] keeps columns 0..2 of the complex 2-D FFT; IRFFT
  // inverts it.
  auto r = Results(R"(
func.func @main() -> (tensor<2x3xcomplex<f64>>, tensor<2x4xcomplex<f64>>, tensor<2x4xf64>) {
  %x = stablehlo.constant dense<[[1.0, 2.0, 0.0, -1.0], [3.0, 0.5, 2.0, 4.0]]> : tensor<2x4xf64>
  %0 = stablehlo.fft %x, type =  RFFT, length = [2, 4] : (tensor<2x4xf64>) -> tensor<2x3xcomplex<f64>>
  %c = stablehlo.convert %x : (tensor<2x4xf64>) -> tensor<2x4xcomplex<f64>>
  %1 = stablehlo.fft %c, type =  FFT, length = [2, 4] : (tensor<2x4xcomplex<f64>>) -> tensor<2x4xcomplex<f64>>
  %2 = stablehlo.fft %0, type =  IRFFT, length = [2, 4] : (tensor<2x3xcomplex<f64>>) -> tensor<2x4xf64>
  return %0, %1, %2 : tensor<2x3xcomplex<f64>>, tensor<2x4xcomplex<f64>>, tensor<2x4xf64>
})");
  ASSERT_EQ(r.size(), 3u);
  const C full = Complexes(r[1]);
  EXPECT_EQ(Complexes(r[0]), (C{full[0], full[1], full[2], full[4], full[5], full[6]}));
  EXPECT_EQ(full[0], std::complex<double>(11.5, 0));
  ExpectNear(Doubles(r[2]), D{1, 2, 0, -1, 3, 0.5, 2, 4}, 1e-15);
}

TEST(LinalgTest, IrfftOddLengthIgnoresNothingItNeeds) {
  // irfft of length 3 from 2 complex values: x[j] = (X0 + 2 Re(X1 w^j)) / 3.
  auto r = First(R"(
func.func @main() -> tensor<3xf64> {
  %x = stablehlo.constant dense<[(3.0, 0.0), (0.0, 3.0)]> : tensor<2xcomplex<f64>>
  %0 = stablehlo.fft %x, type =  IRFFT, length = [3] : (tensor<2xcomplex<f64>>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
})");
  const double s = std::sqrt(3.0);
  ExpectNear(Doubles(r), D{1, (3 - 3 * s) / 3, (3 + 3 * s) / 3}, 1e-15);
}

// An impulse at position 1 transforms to the twiddles exp(-2 pi i k / n),
// which checks the direct (n <= 64), radix-2 (128) and Bluestein (100) paths.
TEST(LinalgTest, FftLongLengthsMatchTheTwiddles) {
  for (int n : {17, 100, 128}) {
    std::string values;
    for (int i = 0; i < n; ++i)
      values += std::string(i ? ", " : "") + (i == 1 ? "(1.0, 0.0)" : "(0.0, 0.0)");
    const std::string t = "tensor<" + std::to_string(n) + "xcomplex<f64>>";
    auto r = First("func.func @main() -> " + t + " {\n  %x = stablehlo.constant dense<[" + values +
                   "]> : " + t + "\n  %0 = stablehlo.fft %x, type =  FFT, length = [" +
                   std::to_string(n) + "] : (" + t + ") -> " + t + "\n  return %0 : " + t + "\n}");
    C expected;
    for (int k = 0; k < n; ++k) {
      const double angle = -2 * std::numbers::pi * k / n;
      expected.emplace_back(std::cos(angle), std::sin(angle));
    }
    ExpectNear(Complexes(r), expected, 1e-15);
  }
}

TEST(LinalgTest, FftOfEmptyTensor) {
  auto r = First(R"(
func.func @main() -> tensor<0x3xcomplex<f32>> {
  %x = stablehlo.constant dense<> : tensor<0x4xf32>
  %0 = stablehlo.fft %x, type =  RFFT, length = [4] : (tensor<0x4xf32>) -> tensor<0x3xcomplex<f32>>
  return %0 : tensor<0x3xcomplex<f32>>
})");
  EXPECT_EQ(r.num_elements(), 0);
}

// ---- triangular_solve, cholesky --------------------------------------------

std::string TriangularSolve(std::string_view a, std::string_view b, bool left, bool lower,
                            bool unit, std::string_view transpose) {
  auto flag = [](bool v) { return v ? "true" : "false"; };
  return std::string(R"(
func.func @main() -> tensor<2x2xf64> {
  %a = stablehlo.constant dense<)") +
         std::string(a) + R"(> : tensor<2x2xf64>
  %b = stablehlo.constant dense<)" +
         std::string(b) + R"(> : tensor<2x2xf64>
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = )" +
         flag(left) + ", lower = " + flag(lower) + ", transpose_a = #stablehlo<transpose " +
         std::string(transpose) + ">, unit_diagonal = " + flag(unit) +
         R"(}> : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %0 : tensor<2x2xf64>
})";
}

TEST(LinalgTest, TriangularSolveOrientations) {
  // a's lower triangle is L = [[2, 0], [1, 4]]; its upper triangle (99s)
  // must be ignored. b = [[2, 4], [9, 6]].
  const char* a = "[[2.0, 99.0], [1.0, 4.0]]";
  const char* b = "[[2.0, 4.0], [9.0, 6.0]]";
  // L x = b: x0 = b0 / 2 = [1, 2]; x1 = (b1 - x0) / 4 = [2, 1].
  EXPECT_EQ(Doubles(First(TriangularSolve(a, b, true, true, false, "NO_TRANSPOSE"))),
            (D{1, 2, 2, 1}));
  // L^T x = b (upper, backward): x1 = b1 / 4 = [2.25, 1.5];
  // x0 = (b0 - x1) / 2 = [-0.125, 1.25].
  EXPECT_EQ(Doubles(First(TriangularSolve(a, b, true, true, false, "TRANSPOSE"))),
            (D{-0.125, 1.25, 2.25, 1.5}));
  // x L = b (right side, backward over columns): x[:,1] = b[:,1] / 4 =
  // [1, 1.5]; x[:,0] = (b[:,0] - x[:,1] * 1) / 2 = [0.5, 3.75].
  EXPECT_EQ(Doubles(First(TriangularSolve(a, b, false, true, false, "NO_TRANSPOSE"))),
            (D{0.5, 1, 3.75, 1.5}));
  // Unit diagonal: L = [[1, 0], [1, 1]]: x0 = [2, 4], x1 = [7, 2].
  EXPECT_EQ(Doubles(First(TriangularSolve(a, b, true, true, true, "NO_TRANSPOSE"))),
            (D{2, 4, 7, 2}));
  // Upper triangle read instead: U = [[2, 99], [0, 4]] with the 1 ignored.
  const char* au = "[[2.0, 1.0], [99.0, 4.0]]";
  // U x = b: x1 = [2.25, 1.5]; x0 = (b0 - x1) / 2.
  EXPECT_EQ(Doubles(First(TriangularSolve(au, b, true, false, false, "NO_TRANSPOSE"))),
            (D{-0.125, 1.25, 2.25, 1.5}));
}

TEST(LinalgTest, TriangularSolveAdjointConjugates) {
  // a = [[i, 0], [0, 1]] lower; adjoint op(a) = [[-i, 0], [0, 1]].
  auto r = First(R"(
func.func @main() -> tensor<2x1xcomplex<f64>> {
  %a = stablehlo.constant dense<[[(0.0, 1.0), (0.0, 0.0)], [(0.0, 0.0), (1.0, 0.0)]]> : tensor<2x2xcomplex<f64>>
  %b = stablehlo.constant dense<[[(1.0, 0.0)], [(2.0, 0.0)]]> : tensor<2x1xcomplex<f64>>
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<2x2xcomplex<f64>>, tensor<2x1xcomplex<f64>>) -> tensor<2x1xcomplex<f64>>
  return %0 : tensor<2x1xcomplex<f64>>
})");
  EXPECT_EQ(Complexes(r), (C{{0, 1}, {2, 0}}));  // 1 / -i = i
}

TEST(LinalgTest, TriangularSolveBatchesAndRoundsF16Once) {
  auto r = First(R"(
func.func @main() -> tensor<2x1x1xf16> {
  %a = stablehlo.constant dense<[[[3.0]], [[4.0]]]> : tensor<2x1x1xf16>
  %b = stablehlo.constant dense<[[[1.0]], [[1.0]]]> : tensor<2x1x1xf16>
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x1x1xf16>, tensor<2x1x1xf16>) -> tensor<2x1x1xf16>
  return %0 : tensor<2x1x1xf16>
})");
  // 1/3 rounded to f16 is 0x3555 = 0.333251953125.
  EXPECT_EQ(Doubles(r), (D{0.333251953125, 0.25}));
}

TEST(LinalgTest, CholeskyLowerAndUpper) {
  auto r = Results(R"(
func.func @main() -> (tensor<3x3xf64>, tensor<3x3xf64>) {
  %a = stablehlo.constant dense<[[1.0, 2.0, 3.0], [2.0, 20.0, 26.0], [3.0, 26.0, 70.0]]> : tensor<3x3xf64>
  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<3x3xf64>) -> tensor<3x3xf64>
  %1 = "stablehlo.cholesky"(%a) {lower = false} : (tensor<3x3xf64>) -> tensor<3x3xf64>
  return %0, %1 : tensor<3x3xf64>, tensor<3x3xf64>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Doubles(r[0]), (D{1, 0, 0, 2, 4, 0, 3, 5, 6}));
  EXPECT_EQ(Doubles(r[1]), (D{1, 2, 3, 0, 4, 5, 0, 0, 6}));
}

TEST(LinalgTest, CholeskyComplexAndNotPositiveDefinite) {
  auto r = Results(R"(
func.func @main() -> (tensor<2x2xcomplex<f64>>, tensor<2x2xf32>) {
  %a = stablehlo.constant dense<[[(4.0, 0.0), (0.0, -2.0)], [(0.0, 2.0), (2.0, 0.0)]]> : tensor<2x2xcomplex<f64>>
  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<2x2xcomplex<f64>>) -> tensor<2x2xcomplex<f64>>
  %b = stablehlo.constant dense<[[-1.0, 0.0], [0.0, 1.0]]> : tensor<2x2xf32>
  %1 = "stablehlo.cholesky"(%b) {lower = true} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xcomplex<f64>>, tensor<2x2xf32>
})");
  ASSERT_EQ(r.size(), 2u);
  // l00 = 2, l10 = 2i / 2 = i, l11 = sqrt(2 - |i|^2) = 1.
  EXPECT_EQ(Complexes(r[0]), (C{{2, 0}, {0, 0}, {0, 1}, {1, 0}}));
  EXPECT_TRUE(std::isnan(r[1].GetDouble(0)));
}

// ---- batch_norm_* ----------------------------------------------------------

constexpr std::string_view kBatchNormOperand =
    "dense<[[[1.0, 2.0], [3.0, 4.0]], [[3.0, 4.0], [1.0, 2.0]]]> : tensor<2x2x2xf64>";

TEST(LinalgTest, BatchNormSpecExamples) {
  const std::string x = std::string(kBatchNormOperand);
  auto r = Results(R"(
func.func @main() -> (tensor<2x2x2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>) {
  %x = stablehlo.constant )" +
                   x + R"(
  %one = stablehlo.constant dense<1.0> : tensor<2xf64>
  %mean = stablehlo.constant dense<[2.0, 3.0]> : tensor<2xf64>
  %g = stablehlo.constant dense<0.1> : tensor<2x2x2xf64>
  %0 = "stablehlo.batch_norm_inference"(%x, %one, %one, %mean, %one) {epsilon = 0.0 : f32, feature_index = 2 : i64} : (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>) -> tensor<2x2x2xf64>
  %1:3 = "stablehlo.batch_norm_training"(%x, %one, %one) {epsilon = 0.0 : f32, feature_index = 2 : i64} : (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>)
  %2:3 = "stablehlo.batch_norm_grad"(%x, %one, %mean, %one, %g) {epsilon = 0.0 : f32, feature_index = 2 : i64} : (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2x2xf64>) -> (tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>)
  return %0, %1#0, %1#1, %1#2, %2#0, %2#1, %2#2 : tensor<2x2x2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>, tensor<2x2x2xf64>, tensor<2xf64>, tensor<2xf64>
})");
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(Doubles(r[0]), (D{0, 0, 2, 2, 2, 2, 0, 0}));
  EXPECT_EQ(Doubles(r[1]), (D{0, 0, 2, 2, 2, 2, 0, 0}));
  EXPECT_EQ(Doubles(r[2]), (D{2, 3}));
  EXPECT_EQ(Doubles(r[3]), (D{1, 1}));
  ExpectNear(Doubles(r[4]), D(8, 0.0), 1e-15);
  ExpectNear(Doubles(r[5]), D{0, 0}, 1e-15);
  ExpectNear(Doubles(r[6]), D{0.4, 0.4}, 1e-15);
}

TEST(LinalgTest, BatchNormEpsilonAndFeatureIndex) {
  // Feature 0 of a 2x2 operand: rows are features. var 3, eps 1 -> stddev 2.
  auto r = First(R"(
func.func @main() -> tensor<2x2xf32> {
  %x = stablehlo.constant dense<[[4.0, 0.0], [1.0, 1.0]]> : tensor<2x2xf32>
  %scale = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %offset = stablehlo.constant dense<[0.0, 10.0]> : tensor<2xf32>
  %mean = stablehlo.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %var = stablehlo.constant dense<[3.0, 3.0]> : tensor<2xf32>
  %0 = "stablehlo.batch_norm_inference"(%x, %scale, %offset, %mean, %var) {epsilon = 1.0 : f32, feature_index = 0 : i64} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
})");
  EXPECT_EQ(Doubles(r), (D{1, -1, 10, 10}));
}

// ---- rng_bit_generator, rng ------------------------------------------------

std::vector<ir::Literal> BitGenerator(std::string_view algorithm, std::string_view state,
                                      std::string_view state_type, std::string_view out_type) {
  const std::string st(state_type), ot(out_type);
  return Results(
      "func.func @main() -> (" + st + ", " + ot + ") {\n  %s = stablehlo.constant dense<" +
      std::string(state) + "> : " + st +
      "\n  %0, %1 = stablehlo.rng_bit_generator %s, algorithm = " + std::string(algorithm) +
      " : (" + st + ") -> (" + st + ", " + ot + ")\n  return %0, %1 : " + st + ", " + ot + "\n}");
}

TEST(LinalgTest, ThreeFryMatchesTheSpecExampleAndXla) {
  // The spec's example output.
  auto r = BitGenerator("THREE_FRY", "[1, 2]", "tensor<2xui64>", "tensor<2x2xui64>");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(UInts(r[0]), (std::vector<uint64_t>{1, 6}));
  EXPECT_EQ(UInts(r[1]), (std::vector<uint64_t>{9236835810183407956ull, 16087790271692313299ull,
                                                18212823393184779219ull, 2658481902456610144ull}));
  // From the conformance corpus (XLA's output): key 3, counter 3.
  r = BitGenerator("THREE_FRY", "3", "tensor<2xui64>", "tensor<ui64>");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(UInts(r[0]), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(UInts(r[1]), (std::vector<uint64_t>{3349939604322698703ull}));
}

TEST(LinalgTest, ThreeFry32BitOutputsPairTheWordsOfABlock) {
  // The 64-bit stream from counter 2 gives the blocks b0, b1, b2.
  auto wide = BitGenerator("THREE_FRY", "[1, 2]", "tensor<2xui64>", "tensor<3xui64>");
  ASSERT_EQ(wide.size(), 2u);
  const uint64_t b0 = wide[1].GetUInt(0), b1 = wide[1].GetUInt(1), b2 = wide[1].GetUInt(2);
  auto lo = [](uint64_t v) { return v & 0xFFFFFFFF; };
  // Three u32: no even dimension, so dimension 0 is halved (2 blocks): the
  // words of b0 fill positions 0 and 1, b1's first word position 2.
  auto narrow = BitGenerator("THREE_FRY", "[1, 2]", "tensor<2xui64>", "tensor<3xui32>");
  ASSERT_EQ(narrow.size(), 2u);
  EXPECT_EQ(UInts(narrow[0]), (std::vector<uint64_t>{1, 4}));
  EXPECT_EQ(UInts(narrow[1]), (std::vector<uint64_t>{lo(b0), b0 >> 32, lo(b1)}));
  // 2x3: dimension 0 is the first even one; block c fills (0, c) and (1, c).
  auto matrix = BitGenerator("THREE_FRY", "[1, 2]", "tensor<2xui64>", "tensor<2x3xui32>");
  ASSERT_EQ(matrix.size(), 2u);
  EXPECT_EQ(UInts(matrix[0]), (std::vector<uint64_t>{1, 5}));
  EXPECT_EQ(UInts(matrix[1]),
            (std::vector<uint64_t>{lo(b0), lo(b1), lo(b2), b0 >> 32, b1 >> 32, b2 >> 32}));
  // ui8 keeps the low byte of each 32-bit word.
  auto bytes = BitGenerator("THREE_FRY", "[1, 2]", "tensor<2xui64>", "tensor<3xui8>");
  ASSERT_EQ(bytes.size(), 2u);
  EXPECT_EQ(UInts(bytes[1]), (std::vector<uint64_t>{b0 & 0xFF, (b0 >> 32) & 0xFF, b1 & 0xFF}));
}

TEST(LinalgTest, PhiloxMatchesTheReferenceVector) {
  // Random123's known-answer test for philox4x32-10: counter 0, key 0 gives
  // 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
  auto r = BitGenerator("PHILOX", "[0, 0, 0]", "tensor<3xui64>", "tensor<4xui32>");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(UInts(r[1]), (std::vector<uint64_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(UInts(r[0]), (std::vector<uint64_t>{0, 1, 0}));
  // The counter is 128 bits: the low word carries into the high one.
  r = BitGenerator("PHILOX", "[7, 18446744073709551615, 5]", "tensor<3xui64>", "tensor<5xui32>");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(UInts(r[0]), (std::vector<uint64_t>{7, 1, 6}));
  // Two 64-bit outputs come from one block, and DEFAULT is PHILOX.
  auto a = BitGenerator("PHILOX", "[0, 0]", "tensor<2xui64>", "tensor<2xui64>");
  auto b = BitGenerator("DEFAULT", "[0, 0]", "tensor<2xui64>", "tensor<2xui64>");
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(UInts(a[1]), (std::vector<uint64_t>{0xe169c58d6627e8d5ull, 0x9b00dbd8bc57ac4cull}));
  EXPECT_EQ(a[1], b[1]);
  EXPECT_EQ(UInts(a[0]), (std::vector<uint64_t>{0, 1}));
  // A 2-element state [key, low] uses the key as the counter's high word.
  auto two = BitGenerator("PHILOX", "[5, 9]", "tensor<2xui64>", "tensor<6xui32>");
  auto three = BitGenerator("PHILOX", "[5, 9, 5]", "tensor<3xui64>", "tensor<6xui32>");
  ASSERT_EQ(two.size(), 2u);
  ASSERT_EQ(three.size(), 2u);
  EXPECT_EQ(two[1], three[1]);
  EXPECT_EQ(UInts(two[0]), (std::vector<uint64_t>{5, 11}));
  EXPECT_EQ(UInts(three[0]), (std::vector<uint64_t>{5, 11, 5}));
}

TEST(LinalgTest, BitGeneratorFillsFloatsWithBits) {
  auto r = BitGenerator("THREE_FRY", "[1, 2]", "tensor<2xui64>", "tensor<2x2xf64>");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].GetBits(0), 9236835810183407956ull);
}

TEST(LinalgTest, RngIsDeterministicAndInRange) {
  const char* text = R"(
func.func @main() -> (tensor<1000xf32>, tensor<1000xi32>, tensor<1000xf64>) {
  %a = stablehlo.constant dense<-2.0> : tensor<f32>
  %b = stablehlo.constant dense<3.0> : tensor<f32>
  %s = stablehlo.constant dense<1000> : tensor<1xi64>
  %0 = "stablehlo.rng"(%a, %b, %s) {rng_distribution = #stablehlo<rng_distribution UNIFORM>} : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<1000xf32>
  %c = stablehlo.constant dense<-5> : tensor<i32>
  %d = stablehlo.constant dense<5> : tensor<i32>
  %1 = "stablehlo.rng"(%c, %d, %s) {rng_distribution = #stablehlo<rng_distribution UNIFORM>} : (tensor<i32>, tensor<i32>, tensor<1xi64>) -> tensor<1000xi32>
  %m = stablehlo.constant dense<10.0> : tensor<f64>
  %sd = stablehlo.constant dense<2.0> : tensor<f64>
  %2 = "stablehlo.rng"(%m, %sd, %s) {rng_distribution = #stablehlo<rng_distribution NORMAL>} : (tensor<f64>, tensor<f64>, tensor<1xi64>) -> tensor<1000xf64>
  return %0, %1, %2 : tensor<1000xf32>, tensor<1000xi32>, tensor<1000xf64>
})";
  auto r = Results(text);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], Results(text)[0]);
  for (double v : Doubles(r[0])) EXPECT_TRUE(v >= -2 && v < 3) << v;
  bool saw_low = false, saw_high = false;
  for (int64_t v : Ints(r[1])) {
    EXPECT_TRUE(v >= -5 && v < 5) << v;
    saw_low |= v == -5;
    saw_high |= v == 4;
  }
  EXPECT_TRUE(saw_low && saw_high);
  double sum = 0;
  for (double v : Doubles(r[2])) sum += v;
  EXPECT_NEAR(sum / 1000, 10.0, 0.5);
}

}  // namespace
}  // namespace jitd::eval
