// Indexing and sorting kernels against hand-computed expectations: index
// clamping, gather/scatter dimension numbers (batching dims, implicit index
// vectors), out-of-bounds scatter updates, variadic scatter and sort,
// inconsistent comparators, and chlo.top_k's NaN order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using testing::EvalText;
using testing::Ints;
using testing::Results;

// Result 0 as integers.
std::vector<int64_t> Ints(std::string_view text) {
  auto r = Results(text);
  return r.empty() ? std::vector<int64_t>{} : Ints(r[0]);
}

using V = std::vector<int64_t>;

// dynamic_slice of a 5-element vector at `start`, a 0-d tensor of type
// `index_type` ("i32", "ui64", ...).
std::string DynamicSliceAt(std::string_view index_type, std::string_view start) {
  const std::string t = "tensor<" + std::string(index_type) + ">";
  std::string text = "func.func @main() -> tensor<2xi32> {\n";
  text += "  %c = stablehlo.constant dense<[10, 11, 12, 13, 14]> : tensor<5xi32>\n";
  text += "  %i = stablehlo.constant dense<" + std::string(start) + "> : " + t + "\n";
  text += "  %0 = stablehlo.dynamic_slice %c, %i, sizes = [2] : (tensor<5xi32>, " + t +
          ") -> tensor<2xi32>\n";
  text += "  return %0 : tensor<2xi32>\n}";
  return text;
}

TEST(IndexingTest, DynamicSliceClampsStartIndices) {
  EXPECT_EQ(Ints(DynamicSliceAt("i32", "1")), (V{11, 12}));
  EXPECT_EQ(Ints(DynamicSliceAt("i32", "-7")), (V{10, 11}));
  EXPECT_EQ(Ints(DynamicSliceAt("i32", "4")), (V{13, 14}));
  EXPECT_EQ(Ints(DynamicSliceAt("i64", "-9223372036854775808")), (V{10, 11}));
  // 2^64 - 1 is huge, not -1: it clamps to the top.
  EXPECT_EQ(Ints(DynamicSliceAt("ui64", "18446744073709551615")), (V{13, 14}));
  EXPECT_EQ(Ints(DynamicSliceAt("ui8", "200")), (V{13, 14}));
  EXPECT_EQ(Ints(DynamicSliceAt("i8", "-1")), (V{10, 11}));
}

TEST(IndexingTest, DynamicSliceIn2D) {
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2x2xi32> {
  %c = stablehlo.constant dense<[[0, 1, 2], [3, 4, 5], [6, 7, 8]]> : tensor<3x3xi32>
  %i = stablehlo.constant dense<5> : tensor<i64>
  %j = stablehlo.constant dense<0> : tensor<i64>
  %0 = stablehlo.dynamic_slice %c, %i, %j, sizes = [2, 2] : (tensor<3x3xi32>, tensor<i64>, tensor<i64>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
})"),
            (V{3, 4, 6, 7}));
}

TEST(IndexingTest, DynamicUpdateSliceClampsStartIndices) {
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<3x3xi32> {
  %c = stablehlo.constant dense<0> : tensor<3x3xi32>
  %u = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %i = stablehlo.constant dense<-3> : tensor<i32>
  %j = stablehlo.constant dense<9> : tensor<i32>
  %0 = stablehlo.dynamic_update_slice %c, %u, %i, %j : (tensor<3x3xi32>, tensor<2x2xi32>, tensor<i32>, tensor<i32>) -> tensor<3x3xi32>
  return %0 : tensor<3x3xi32>
})"),
            (V{0, 1, 2, 0, 3, 4, 0, 0, 0}));
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<4xui16> {
  %c = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xui16>
  %u = stablehlo.constant dense<[7]> : tensor<1xui16>
  %i = stablehlo.constant dense<4294967295> : tensor<ui32>
  %0 = stablehlo.dynamic_update_slice %c, %u, %i : (tensor<4xui16>, tensor<1xui16>, tensor<ui32>) -> tensor<4xui16>
  return %0 : tensor<4xui16>
})"),
            (V{1, 2, 3, 7}));
}

TEST(IndexingTest, GatherRowsWithClampedStarts) {
  // Rows of a 3x4 matrix; start (5, 1) clamps to (2, 1), (-2, 3) to (0, 2)
  // for slice sizes [1, 2].
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<3x2xi32> {
  %x = stablehlo.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]> : tensor<3x4xi32>
  %i = stablehlo.constant dense<[[1, 0], [5, 1], [-2, 3]]> : tensor<3x2xi32>
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 2>}> : (tensor<3x4xi32>, tensor<3x2xi32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
})"),
            (V{4, 5, 9, 10, 2, 3}));
}

TEST(IndexingTest, GatherWithImplicitIndexVectorAndOffsetDimsFirst) {
  // index_vector_dim = rank(start_indices): each index is a scalar; the
  // offset dim comes before the batch dim in the result.
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<3x2xi64> {
  %x = stablehlo.constant dense<[[0, 1, 2], [3, 4, 5], [6, 7, 8]]> : tensor<3x3xi64>
  %i = stablehlo.constant dense<[2, 0]> : tensor<2xui8>
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 3, 1>}> : (tensor<3x3xi64>, tensor<2xui8>) -> tensor<3x2xi64>
  return %0 : tensor<3x2xi64>
})"),
            (V{2, 0, 5, 3, 8, 6}));
}

TEST(IndexingTest, GatherWithBatchingDims) {
  // operand [2 batches, 3]; indices [2 batches, 2 picks]: result[b, p] =
  // operand[b, indices[b, p]].
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2x2xi32> {
  %x = stablehlo.constant dense<[[10, 11, 12], [20, 21, 22]]> : tensor<2x3xi32>
  %i = stablehlo.constant dense<[[[2], [0]], [[1], [7]]]> : tensor<2x2x1xi32>
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1>}> : (tensor<2x3xi32>, tensor<2x2x1xi32>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
})"),
            (V{12, 10, 21, 22}));
}

TEST(IndexingTest, GatherClampsUnsignedAndNarrowIndices) {
  // ui64 2^64-1 clamps to the top (3 - 2 = 1), i8 -128 to 0.
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2x2xi32> {
  %x = stablehlo.constant dense<[10, 11, 12]> : tensor<3xi32>
  %i = stablehlo.constant dense<[[18446744073709551615], [0]]> : tensor<2x1xui64>
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 2>}> : (tensor<3xi32>, tensor<2x1xui64>) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
})"),
            (V{11, 12, 10, 11}));
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2xi32> {
  %x = stablehlo.constant dense<[10, 11, 12]> : tensor<3xi32>
  %i = stablehlo.constant dense<[-128, 127]> : tensor<2xi8>
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1>}> : (tensor<3xi32>, tensor<2xi8>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
})"),
            (V{10, 12}));
}

constexpr std::string_view kScatterAdd = R"(
func.func @main() -> tensor<5xi32> {
  %x = stablehlo.constant dense<[1, 1, 1, 1, 1]> : tensor<5xi32>
  %i = stablehlo.constant dense<[[0], [2], [0], [5], [-1], [4]]> : tensor<6x1xi32>
  %u = stablehlo.constant dense<[10, 20, 30, 40, 50, 60]> : tensor<6xi32>
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<5xi32>, tensor<6x1xi32>, tensor<6xi32>) -> tensor<5xi32>
  return %0 : tensor<5xi32>
})";

TEST(IndexingTest, ScatterAccumulatesDuplicatesAndSkipsOutOfBounds) {
  EXPECT_EQ(Ints(kScatterAdd), (V{41, 1, 21, 1, 61}));
}

TEST(IndexingTest, ScatterAppliesUpdatesInOrder) {
  // A "set" computation: the last of duplicate updates wins.
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<3xi32> {
  %x = stablehlo.constant dense<0> : tensor<3xi32>
  %i = stablehlo.constant dense<[1, 1, 2]> : tensor<3xi64>
  %u = stablehlo.constant dense<[5, 6, 7]> : tensor<3xi32>
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    stablehlo.return %b : tensor<i32>
  }) : (tensor<3xi32>, tensor<3xi64>, tensor<3xi32>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
})"),
            (V{0, 6, 7}));
}

TEST(IndexingTest, ScatterWindowsAreCheckedElementByElement) {
  // Windows of 2 along dim 1 of a 2x4 input, start column 3: per the spec's
  // semantics each update element's result index is checked on its own, so
  // column 3 is updated and column 4 is dropped. Start 2^64-1 (ui64) is far
  // out of bounds rather than -1.
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2x4xi32> {
  %x = stablehlo.constant dense<0> : tensor<2x4xi32>
  %i = stablehlo.constant dense<[[3], [18446744073709551615]]> : tensor<2x1xui64>
  %u = stablehlo.constant dense<[[[1, 2], [3, 4]], [[5, 6], [7, 8]]]> : tensor<2x2x2xi32>
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<2x4xi32>, tensor<2x1xui64>, tensor<2x2x2xi32>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
})"),
            (V{0, 0, 0, 1, 0, 0, 0, 3}));
}

TEST(IndexingTest, ScatterWithBatchingDims) {
  // result[b, indices[b, p]] += updates[b, p].
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2x3xi32> {
  %x = stablehlo.constant dense<0> : tensor<2x3xi32>
  %i = stablehlo.constant dense<[[2, 0], [1, 1]]> : tensor<2x2xi32>
  %u = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<2x3xi32>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
})"),
            (V{2, 0, 1, 0, 7, 0}));
}

TEST(IndexingTest, VariadicScatterComputesAnArgmax) {
  // (value, index) pairs; keeps the larger value.
  auto r = Results(R"(
func.func @main() -> (tensor<2xf32>, tensor<2xi32>) {
  %v = stablehlo.constant dense<[0.0, 0.0]> : tensor<2xf32>
  %k = stablehlo.constant dense<[-1, -1]> : tensor<2xi32>
  %i = stablehlo.constant dense<[[0], [1], [0]]> : tensor<3x1xi32>
  %uv = stablehlo.constant dense<[3.0, 1.0, 5.0]> : tensor<3xf32>
  %uk = stablehlo.constant dense<[0, 1, 2]> : tensor<3xi32>
  %0:2 = "stablehlo.scatter"(%v, %k, %i, %uv, %uk) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %ak: tensor<i32>, %b: tensor<f32>, %bk: tensor<i32>):
    %gt = stablehlo.compare GT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %sv = stablehlo.select %gt, %b, %a : tensor<i1>, tensor<f32>
    %sk = stablehlo.select %gt, %bk, %ak : tensor<i1>, tensor<i32>
    stablehlo.return %sv, %sk : tensor<f32>, tensor<i32>
  }) : (tensor<2xf32>, tensor<2xi32>, tensor<3x1xi32>, tensor<3xf32>, tensor<3xi32>) -> (tensor<2xf32>, tensor<2xi32>)
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].GetDouble(0), 5.0);
  EXPECT_EQ(r[0].GetDouble(1), 1.0);
  EXPECT_EQ(Ints(r[1]), (V{2, 1}));
}

TEST(IndexingTest, ScatterConvertsToAPromotedRegionType) {
  // i8 inputs and updates, an i32 region: the sum does not wrap at 127.
  auto r = Results(R"(
func.func @main() -> tensor<1xi32> {
  %x = stablehlo.constant dense<[100]> : tensor<1xi8>
  %i = stablehlo.constant dense<[[0], [0]]> : tensor<2x1xi32>
  %u = stablehlo.constant dense<[100, -128]> : tensor<2xi8>
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %s = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<1xi8>, tensor<2x1xi32>, tensor<2xi8>) -> tensor<1xi32>
  return %0 : tensor<1xi32>
})");
  if (r.empty()) return;  // the failure is already reported
  EXPECT_EQ(Ints(r[0]), (V{72}));
}

TEST(IndexingTest, SortIsStableAndVariadic) {
  // Sort by key only; equal keys keep their order, values follow.
  auto r = Results(R"(
func.func @main() -> (tensor<5xi32>, tensor<5xi32>) {
  %k = stablehlo.constant dense<[3, 1, 3, 1, 2]> : tensor<5xi32>
  %v = stablehlo.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi32>
  %0:2 = "stablehlo.sort"(%k, %v) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<5xi32>, tensor<5xi32>) -> (tensor<5xi32>, tensor<5xi32>)
  return %0#0, %0#1 : tensor<5xi32>, tensor<5xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ints(r[0]), (V{1, 1, 2, 3, 3}));
  EXPECT_EQ(Ints(r[1]), (V{1, 3, 4, 0, 2}));
}

TEST(IndexingTest, SortAlongANegativeDimensionDescending) {
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<2x3xui8> {
  %k = stablehlo.constant dense<[[1, 9, 5], [200, 0, 7]]> : tensor<2x3xui8>
  %0 = "stablehlo.sort"(%k) <{dimension = -1 : i64}> ({
  ^bb0(%a: tensor<ui8>, %b: tensor<ui8>):
    %gt = stablehlo.compare GT, %a, %b : (tensor<ui8>, tensor<ui8>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<2x3xui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
})"),
            (V{9, 5, 1, 200, 7, 0}));
  EXPECT_EQ(Ints(R"(
func.func @main() -> tensor<3x2xi32> {
  %k = stablehlo.constant dense<[[3, 0], [1, 5], [2, 4]]> : tensor<3x2xi32>
  %0 = "stablehlo.sort"(%k) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<3x2xi32>) -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
})"),
            (V{1, 0, 2, 4, 3, 5}));
}

TEST(IndexingTest, SortSurvivesAnInconsistentComparator) {
  // "a <= b" is not a strict weak order, and an always-true comparator is
  // not even asymmetric: the result is some permutation, never a crash.
  for (std::string_view body :
       {"%r = stablehlo.compare LE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>",
        "%r = stablehlo.constant dense<true> : tensor<i1>"}) {
    std::string text = R"(
func.func @main() -> tensor<40xf32> {
  %c = stablehlo.iota dim = 0 : tensor<40xf32>
  %0 = "stablehlo.sort"(%c) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    )" + std::string(body) +
                       R"(
    stablehlo.return %r : tensor<i1>
  }) : (tensor<40xf32>) -> tensor<40xf32>
  return %0 : tensor<40xf32>
})";
    auto r = Results(text);
    ASSERT_EQ(r.size(), 1u);
    std::vector<bool> seen(40, false);
    for (int64_t i = 0; i < 40; ++i) seen[static_cast<size_t>(r[0].GetDouble(i))] = true;
    for (int i = 0; i < 40; ++i) EXPECT_TRUE(seen[static_cast<size_t>(i)]) << body << " " << i;
  }
}

TEST(IndexingTest, SortWithNaNsUnderATotalOrderComparator) {
  auto r = Results(R"(
func.func @main() -> tensor<5xf32> {
  %c = stablehlo.constant dense<[0x7FC00000, 1.0, 0xFF800000, -0.0, 0.0]> : tensor<5xf32>
  %0 = "stablehlo.sort"(%c) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %r : tensor<i1>
  }) : (tensor<5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
})");
  if (r.empty()) return;
  EXPECT_EQ(r[0].GetDouble(0), -INFINITY);
  EXPECT_TRUE(std::signbit(r[0].GetDouble(1)));
  EXPECT_FALSE(std::signbit(r[0].GetDouble(2)));
  EXPECT_EQ(r[0].GetDouble(3), 1.0);
  EXPECT_TRUE(std::isnan(r[0].GetDouble(4)));
}

TEST(IndexingTest, RegionErrorsPropagate) {
  // A comparator / update computation that fails at run time fails the op.
  auto sort = EvalText(R"(
func.func @main() -> tensor<3xf32> {
  %c = stablehlo.constant dense<[3.0, 1.0, 2.0]> : tensor<3xf32>
  %0 = "stablehlo.sort"(%c) <{dimension = 0 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.custom_call @no_such_target(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %r : tensor<i1>
  }) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
})");
  ASSERT_FALSE(sort.ok());
  EXPECT_NE(sort.status().message().find("no_such_target"), std::string::npos)
      << sort.status().ToString();
  auto scatter = EvalText(R"(
func.func @main() -> tensor<2xf32> {
  %x = stablehlo.constant dense<0.0> : tensor<2xf32>
  %i = stablehlo.constant dense<[[1]]> : tensor<1x1xi32>
  %u = stablehlo.constant dense<[1.0]> : tensor<1xf32>
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %r = stablehlo.custom_call @no_such_target(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) : (tensor<2xf32>, tensor<1x1xi32>, tensor<1xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})");
  ASSERT_FALSE(scatter.ok());
  EXPECT_NE(scatter.status().message().find("no_such_target"), std::string::npos)
      << scatter.status().ToString();
}

TEST(IndexingTest, TopKOrdersNaNsByTheirSign) {
  // As jax.lax.top_k: +NaN above +inf, -NaN below -inf.
  auto r = Results(R"(
func.func @main() -> (tensor<5xf32>, tensor<5xi32>) {
  %c = stablehlo.constant dense<[0x7F800000, 0x7FC00000, 0xFFC00000, 0xFF800000, 3.0]> : tensor<5xf32>
  %v, %i = chlo.top_k(%c, k = 5) : tensor<5xf32> -> (tensor<5xf32>, tensor<5xi32>)
  return %v, %i : tensor<5xf32>, tensor<5xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].GetBits(0), 0x7FC00000u);
  EXPECT_EQ(r[0].GetBits(4), 0xFFC00000u);
  EXPECT_EQ(Ints(r[1]), (V{1, 0, 4, 3, 2}));
}

TEST(IndexingTest, TopKPerRowTiesByLowerIndex) {
  auto r = Results(R"(
func.func @main() -> (tensor<2x2xi16>, tensor<2x2xi32>) {
  %c = stablehlo.constant dense<[[4, 7, 7, 1], [-1, -5, -1, 0]]> : tensor<2x4xi16>
  %v, %i = chlo.top_k(%c, k = 2) : tensor<2x4xi16> -> (tensor<2x2xi16>, tensor<2x2xi32>)
  return %v, %i : tensor<2x2xi16>, tensor<2x2xi32>
})");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(Ints(r[0]), (V{7, 7, 0, -1}));
  EXPECT_EQ(Ints(r[1]), (V{1, 2, 3, 0}));
  auto u = Results(R"(
func.func @main() -> (tensor<2xui64>, tensor<2xi32>) {
  %c = stablehlo.constant dense<[1, 18446744073709551615, 5]> : tensor<3xui64>
  %v, %i = chlo.top_k(%c, k = 2) : tensor<3xui64> -> (tensor<2xui64>, tensor<2xi32>)
  return %v, %i : tensor<2xui64>, tensor<2xi32>
})");
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].GetUInt(0), 18446744073709551615u);
  EXPECT_EQ(Ints(u[1]), (V{1, 2}));
}

}  // namespace
}  // namespace jitd::eval
