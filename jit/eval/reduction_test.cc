// Region-folding kernels against hand-computed expectations: the left-fold
// order of reduce and reduce_window (visible through non-associative
// bodies), variadic reductions, body types wider than the inputs, window
// padding (including negative), base and window dilations, select_and_scatter
// tie-breaking and padding, map, and the directly folded bodies' NaN and
// signed-zero handling.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
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

using V = std::vector<int64_t>;
using D = std::vector<double>;

// ---- reduce ----------------------------------------------------------------

TEST(ReductionTest, ReduceSpecExample) {
  auto r = First(R"(
func.func @main() -> tensor<1xi64> {
  %x = stablehlo.constant dense<[[0, 1, 2, 3, 4, 5]]> : tensor<1x6xi64>
  %init = stablehlo.constant dense<0> : tensor<i64>
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<1x6xi64>, tensor<i64>) -> tensor<1xi64>
  return %0 : tensor<1xi64>
})");
  EXPECT_EQ(Ints(r), (V{15}));
}

TEST(ReductionTest, ReduceIsALeftFoldInIndexOrder) {
  // body(acc, x) = acc - x from init 100: 100 - 1 - 2 - 3 per row, and the
  // rows [1, 2, 3] and [4, 5, 6] reduced along dimension 1.
  auto r = First(R"(
func.func @main() -> tensor<2xi32> {
  %x = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %init = stablehlo.constant dense<100> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %init) across dimensions = [1] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2xi32>
   reducer(%acc: tensor<i32>, %v: tensor<i32>)  {
    %1 = stablehlo.subtract %acc, %v : tensor<i32>
    stablehlo.return %1 : tensor<i32>
  }
  return %0 : tensor<2xi32>
})");
  EXPECT_EQ(Ints(r), (V{94, 85}));
}

TEST(ReductionTest, ReduceOverSeveralDimensionsAndNone) {
  auto r = Results(R"(
func.func @main() -> (tensor<3xi32>, tensor<2x3xi32>) {
  %x = stablehlo.constant dense<[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]]> : tensor<2x2x3xi32>
  %init = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x2x3xi32>, tensor<i32>) -> tensor<3xi32>
  %y = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %1 = stablehlo.reduce(%y init: %one) applies stablehlo.add across dimensions = [] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  return %0, %1 : tensor<3xi32>, tensor<2x3xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ints(r[0]), (V{22, 26, 30}));
  EXPECT_EQ(Ints(r[1]), (V{2, 3, 4, 5, 6, 7}));  // body(init, x) once each
}

TEST(ReductionTest, ReduceOfEmptyDimensionIsTheInit) {
  auto r = First(R"(
func.func @main() -> tensor<2xf32> {
  %x = stablehlo.constant dense<> : tensor<2x0xf32>
  %init = stablehlo.constant dense<7.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<2x0xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})");
  EXPECT_EQ(Doubles(r), (D{7, 7}));
}

TEST(ReductionTest, ReduceVariadicArgmaxKeepsTheFirstMaximum) {
  auto r = Results(R"(
func.func @main() -> (tensor<f32>, tensor<i32>) {
  %x = stablehlo.constant dense<[1.0, 5.0, 2.0, 5.0]> : tensor<4xf32>
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%x init: %ninf), (%i init: %zero) across dimensions = [0] : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
   reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>)  {
    %gt = stablehlo.compare  GT, %a, %c,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare  EQ, %a, %c,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare  LT, %b, %d,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %keep = stablehlo.or %gt, %tie : tensor<i1>
    %v = stablehlo.select %keep, %a, %c : tensor<i1>, tensor<f32>
    %j = stablehlo.select %keep, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }
  return %0#0, %0#1 : tensor<f32>, tensor<i32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].GetDouble(0), 5.0);
  EXPECT_EQ(r[1].GetInt(0), 1);
}

TEST(ReductionTest, ReduceIntoAWiderBodyType) {
  // i8 inputs summed by an i32 body: no wraparound at 8 bits.
  auto r = First(R"(
func.func @main() -> tensor<i32> {
  %x = stablehlo.constant dense<[100, 100, 100]> : tensor<3xi8>
  %init = stablehlo.constant dense<0> : tensor<i8>
  %0 = stablehlo.reduce(%x init: %init) across dimensions = [0] : (tensor<3xi8>, tensor<i8>) -> tensor<i32>
   reducer(%a: tensor<i32>, %b: tensor<i32>)  {
    %1 = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %1 : tensor<i32>
  }
  return %0 : tensor<i32>
})");
  EXPECT_EQ(Ints(r), (V{300}));
}

TEST(ReductionTest, DirectlyFoldedBodiesWrapAndPropagateNan) {
  auto r = Results(R"(
func.func @main() -> (tensor<ui8>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i1>, tensor<f16>) {
  %u = stablehlo.constant dense<[200, 100]> : tensor<2xui8>
  %uz = stablehlo.constant dense<0> : tensor<ui8>
  %0 = stablehlo.reduce(%u init: %uz) applies stablehlo.add across dimensions = [0] : (tensor<2xui8>, tensor<ui8>) -> tensor<ui8>
  %f = stablehlo.constant dense<[1.0, 0x7FC00000, 2.0]> : tensor<3xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = stablehlo.reduce(%f init: %ninf) applies stablehlo.maximum across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  %z = stablehlo.constant dense<[0.0, -0.0]> : tensor<2xf32>
  %nz = stablehlo.constant dense<-0.0> : tensor<f32>
  %pz = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%z init: %nz) applies stablehlo.maximum across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
  %3 = stablehlo.reduce(%z init: %pz) applies stablehlo.minimum across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
  %b = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %4 = stablehlo.reduce(%b init: %t) applies stablehlo.and across dimensions = [0] : (tensor<3xi1>, tensor<i1>) -> tensor<i1>
  %h = stablehlo.constant dense<[2048.0, 1.0, 1.0]> : tensor<3xf16>
  %hz = stablehlo.constant dense<0.0> : tensor<f16>
  %5 = stablehlo.reduce(%h init: %hz) applies stablehlo.add across dimensions = [0] : (tensor<3xf16>, tensor<f16>) -> tensor<f16>
  return %0, %1, %2, %3, %4, %5 : tensor<ui8>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<i1>, tensor<f16>
})");
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(Ints(r[0]), (V{44}));
  EXPECT_TRUE(std::isnan(r[1].GetDouble(0)));
  EXPECT_EQ(r[2].GetDouble(0), 0.0);
  EXPECT_FALSE(std::signbit(r[2].GetDouble(0)));
  EXPECT_TRUE(std::signbit(r[3].GetDouble(0)));
  EXPECT_EQ(Ints(r[4]), (V{0}));
  // f16 rounds after every step: 2048 + 1 = 2048 (ties to even), twice.
  EXPECT_EQ(r[5].GetDouble(0), 2048.0);
}

// ---- reduce_window ---------------------------------------------------------

TEST(ReductionTest, ReduceWindowSpecExample) {
  auto r = First(R"(
func.func @main() -> tensor<2x2xi64> {
  %x = stablehlo.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi64>
  %init = stablehlo.constant dense<0> : tensor<i64>
  %0 = "stablehlo.reduce_window"(%x, %init) <{base_dilations = array<i64: 2, 1>, padding = dense<[[2, 1], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 3, 1>, window_dimensions = array<i64: 2, 1>, window_strides = array<i64: 4, 1>}> ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %1 = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %1 : tensor<i64>
  }) : (tensor<3x2xi64>, tensor<i64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
})");
  EXPECT_EQ(Ints(r), (V{0, 0, 3, 4}));
}

TEST(ReductionTest, ReduceWindowPaddingHoldsTheInitAndFoldsLeft) {
  // Cumulative "acc * 10 + x" (order-sensitive) over windows of 3 with the
  // init 9 in the two leading padding positions.
  auto r = First(R"(
func.func @main() -> tensor<3xi32> {
  %x = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %init = stablehlo.constant dense<9> : tensor<i32>
  %0 = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[2, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 3>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %ten = stablehlo.constant dense<10> : tensor<i32>
    %m = stablehlo.multiply %a, %ten : tensor<i32>
    %s = stablehlo.add %m, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
})");
  EXPECT_EQ(Ints(r), (V{9991, 9912, 9123}));
}

TEST(ReductionTest, ReduceWindowNegativePaddingAndStrides) {
  // Padding (-1, 0) drops x[0]; windows of 2 with stride 2 over [2, 3, 4, 5].
  auto r = First(R"(
func.func @main() -> tensor<2xf32> {
  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %init) <{padding = dense<[[-1, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %1 = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }) : (tensor<5xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})");
  EXPECT_EQ(Doubles(r), (D{5, 9}));
}

TEST(ReductionTest, ReduceWindowVariadic) {
  // (min, index of min) over windows of 2, ties to the earlier element.
  auto r = Results(R"(
func.func @main() -> (tensor<3xf32>, tensor<3xi32>) {
  %x = stablehlo.constant dense<[3.0, 1.0, 1.0, 0.0]> : tensor<4xf32>
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "stablehlo.reduce_window"(%x, %i, %inf, %zero) <{window_dimensions = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
    %le = stablehlo.compare  LE, %a, %c,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %le, %a, %c : tensor<i1>, tensor<f32>
    %j = stablehlo.select %le, %b, %d : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }) : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<3xf32>, tensor<3xi32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Doubles(r[0]), (D{1, 1, 0}));
  EXPECT_EQ(Ints(r[1]), (V{1, 1, 3}));
}

// ---- select_and_scatter ----------------------------------------------------

TEST(ReductionTest, SelectAndScatterSpecExample) {
  auto r = First(R"(
func.func @main() -> tensor<4x2xi64> {
  %x = stablehlo.constant dense<[[1, 5], [2, 5], [3, 6], [4, 4]]> : tensor<4x2xi64>
  %src = stablehlo.constant dense<[[5, 6], [7, 8]]> : tensor<2x2xi64>
  %init = stablehlo.constant dense<0> : tensor<i64>
  %0 = "stablehlo.select_and_scatter"(%x, %src, %init) <{padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 2, 1>}> ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %1 = stablehlo.compare  GE, %a, %b,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }, {
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %1 = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %1 : tensor<i64>
  }) : (tensor<4x2xi64>, tensor<2x2xi64>, tensor<i64>) -> tensor<4x2xi64>
  return %0 : tensor<4x2xi64>
})");
  EXPECT_EQ(Ints(r), (V{0, 0, 0, 0, 5, 14, 7, 0}));
}

TEST(ReductionTest, SelectAndScatterNeverSelectsPaddingAndFoldsInSourceOrder) {
  // Negative operands with padding: a padded zero would win a GE select if
  // padding were selectable. Overlapping windows scatter onto the same
  // element; the scatter body acc * 10 + x shows the source order.
  auto r = First(R"(
func.func @main() -> tensor<3xi32> {
  %x = stablehlo.constant dense<[-5, -1, -7]> : tensor<3xi32>
  %src = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %init = stablehlo.constant dense<0> : tensor<i32>
  %0 = "stablehlo.select_and_scatter"(%x, %src, %init) <{padding = dense<[[1, 1]]> : tensor<1x2xi64>, window_dimensions = array<i64: 3>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %1 = stablehlo.compare  GE, %a, %b,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }, {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %ten = stablehlo.constant dense<10> : tensor<i32>
    %m = stablehlo.multiply %a, %ten : tensor<i32>
    %s = stablehlo.add %m, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<3xi32>, tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
})");
  // Every window holds x[1] = -1, the maximum: 0*10+1, *10+2, *10+3.
  EXPECT_EQ(Ints(r), (V{0, 123, 0}));
}

TEST(ReductionTest, SelectAndScatterTiesKeepTheFirst) {
  auto r = First(R"(
func.func @main() -> tensor<4xf32> {
  %x = stablehlo.constant dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>
  %src = stablehlo.constant dense<[1.0, 10.0]> : tensor<2xf32>
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.select_and_scatter"(%x, %src, %init) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %1 = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %1 = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }) : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
})");
  EXPECT_EQ(Doubles(r), (D{1, 0, 10, 0}));
}

// ---- map -------------------------------------------------------------------

TEST(ReductionTest, MapSpecExample) {
  auto r = First(R"(
func.func @main() -> tensor<2x2xi64> {
  %a = stablehlo.constant dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>
  %b = stablehlo.constant dense<[[4, 5], [6, 7]]> : tensor<2x2xi64>
  %0 = "stablehlo.map"(%a, %b) ({
  ^bb0(%x: tensor<i64>, %y: tensor<i64>):
    %1 = stablehlo.multiply %x, %y : tensor<i64>
    stablehlo.return %1 : tensor<i64>
  }) {dimensions = array<i64: 0, 1>} : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
})");
  EXPECT_EQ(Ints(r), (V{0, 5, 12, 21}));
}

TEST(ReductionTest, MapChangesTheElementType) {
  auto r = First(R"(
func.func @main() -> tensor<3xi1> {
  %a = stablehlo.constant dense<[1.0, -2.0, 3.0]> : tensor<3xf32>
  %0 = "stablehlo.map"(%a) ({
  ^bb0(%x: tensor<f32>):
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.compare  GT, %x, %z,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) {dimensions = array<i64: 0>} : (tensor<3xf32>) -> tensor<3xi1>
  return %0 : tensor<3xi1>
})");
  EXPECT_EQ(Ints(r), (V{1, 0, 1}));
}

}  // namespace
}  // namespace jitd::eval
