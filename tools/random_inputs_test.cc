#include "tools/random_inputs.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"

namespace jitd::tools {
namespace {

using frontend::testing::ParseOrFail;

// A token-embedding lookup as jnp.take exports it (wrapping negative ids in
// a helper function), a mask, a position table sliced dynamically, then a
// projection whose weight is transposed first.
constexpr const char* kModel = R"(
func.func public @main(%table: tensor<100x8xf32>, %ids: tensor<1x7xi32>, %mask: tensor<1x7xi32>,
                       %w: tensor<16x8xf32>, %pos: tensor<64x8xf32>, %start: tensor<i32>,
                       %bias: tensor<16xf32>) -> tensor<1x7x16xf32> {
  %e = call @take(%table, %ids) : (tensor<100x8xf32>, tensor<1x7xi32>) -> tensor<1x7x8xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %p = stablehlo.dynamic_slice %pos, %start, %c0, sizes = [7, 8] : (tensor<64x8xf32>, tensor<i32>, tensor<i32>) -> tensor<7x8xf32>
  %m = stablehlo.convert %mask : (tensor<1x7xi32>) -> tensor<1x7xf32>
  %wt = stablehlo.transpose %w, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %y = stablehlo.dot_general %e, %wt, contracting_dims = [2] x [0] : (tensor<1x7x8xf32>, tensor<8x16xf32>) -> tensor<1x7x16xf32>
  return %y : tensor<1x7x16xf32>
}
func.func private @take(%t: tensor<100x8xf32>, %i: tensor<1x7xi32>) -> tensor<1x7x8xf32> {
  %n = stablehlo.constant dense<100> : tensor<1x7xi32>
  %z = stablehlo.constant dense<0> : tensor<1x7xi32>
  %neg = stablehlo.compare LT, %i, %z, SIGNED : (tensor<1x7xi32>, tensor<1x7xi32>) -> tensor<1x7xi1>
  %w = stablehlo.add %i, %n : tensor<1x7xi32>
  %j = stablehlo.select %neg, %w, %i : tensor<1x7xi1>, tensor<1x7xi32>
  %k = stablehlo.reshape %j : (tensor<1x7xi32>) -> tensor<1x7x1xi32>
  %g = "stablehlo.gather"(%t, %k) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 2>, slice_sizes = array<i64: 1, 8>}> : (tensor<100x8xf32>, tensor<1x7x1xi32>) -> tensor<1x7x8xf32>
  return %g : tensor<1x7x8xf32>
}
)";

TEST(RandomInputsTest, RolesFollowUses) {
  auto module = ParseOrFail(kModel);
  const ir::Function* main = module->FindFunction("main");
  ASSERT_NE(main, nullptr);
  std::vector<ArgumentRole> roles = InferArgumentRoles(*module, *main);
  ASSERT_EQ(roles.size(), 7u);
  using Kind = ArgumentRole::Kind;
  EXPECT_EQ(roles[0].kind, Kind::kData);  // a gathered table: plain data
  EXPECT_EQ(roles[1].kind, Kind::kIndex) << roles[1].why;
  EXPECT_EQ(roles[1].index_extent, 100);
  EXPECT_EQ(roles[2].kind, Kind::kData);  // a mask
  EXPECT_EQ(roles[3].kind, Kind::kWeight) << roles[3].why;
  EXPECT_EQ(roles[3].fan_in, 8);  // through the transpose: the contracting 8
  EXPECT_EQ(roles[4].kind, Kind::kData);  // a sliced table
  EXPECT_EQ(roles[5].kind, Kind::kIndex);
  EXPECT_EQ(roles[5].index_extent, 64 - 7 + 1);
  EXPECT_EQ(roles[6].kind, Kind::kData);  // rank 1
}

TEST(RandomInputsTest, ConvolutionKernelAndInput) {
  auto module = ParseOrFail(R"(
func.func public @main(%x: tensor<1x8x8x3xf32>, %k: tensor<3x3x3x16xf32>) -> tensor<1x6x6x16xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x6x6x16xf32>
  return %0 : tensor<1x6x6x16xf32>
}
)");
  std::vector<ArgumentRole> roles = InferArgumentRoles(*module, *module->FindFunction("main"));
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0].kind, ArgumentRole::Kind::kData);
  EXPECT_EQ(roles[1].kind, ArgumentRole::Kind::kWeight);
  EXPECT_EQ(roles[1].fan_in, 27);
}

TEST(RandomInputsTest, FanInFromShapeWhenNoUseIsFound) {
  auto module = ParseOrFail(R"(
func.func public @main(%x: tensor<2x8xf32>, %w: tensor<8x4xf32>) -> tensor<2x4xf32> {
  %s = stablehlo.multiply %w, %w : tensor<8x4xf32>
  %0 = stablehlo.dot_general %x, %s, contracting_dims = [1] x [0] : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
)");
  std::vector<ArgumentRole> roles = InferArgumentRoles(*module, *module->FindFunction("main"));
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0].kind, ArgumentRole::Kind::kWeight);  // found: contracting 8
  EXPECT_EQ(roles[0].fan_in, 8);
  EXPECT_EQ(roles[1].kind, ArgumentRole::Kind::kWeight) << roles[1].why;  // the shape's
  EXPECT_EQ(roles[1].fan_in, 8);
}

TEST(RandomInputsTest, ValuesFollowRoles) {
  const ir::Type f32 = ir::Type::Tensor(ir::DType::kF32, {300, 4});
  const ir::Type i32 = ir::Type::Tensor(ir::DType::kS32, {1000});
  ArgumentRole weight{ArgumentRole::Kind::kWeight, 300, 0, ""};
  auto w = RandomArgument(f32, weight, 1);
  ASSERT_TRUE(w.ok());
  const double bound = std::sqrt(3.0 / 300);
  double max_abs = 0;
  for (int64_t i = 0; i < w->literal().num_elements(); ++i) {
    max_abs = std::max(max_abs, std::abs(w->literal().GetDouble(i)));
  }
  EXPECT_LE(max_abs, bound);
  EXPECT_GT(max_abs, bound * 0.9);

  ArgumentRole index{ArgumentRole::Kind::kIndex, 0, 5, ""};
  auto ids = RandomArgument(i32, index, 2);
  ASSERT_TRUE(ids.ok());
  int64_t lo = 100, hi = -100;
  for (int64_t i = 0; i < ids->literal().num_elements(); ++i) {
    lo = std::min(lo, ids->literal().GetInt(i));
    hi = std::max(hi, ids->literal().GetInt(i));
  }
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 4);

  auto mask = RandomArgument(i32, {}, 3);
  ASSERT_TRUE(mask.ok());
  for (int64_t i = 0; i < mask->literal().num_elements(); ++i) {
    EXPECT_TRUE(mask->literal().GetInt(i) == 0 || mask->literal().GetInt(i) == 1);
  }
  // Deterministic for one seed.
  auto again = RandomArgument(f32, weight, 1);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::equal(w->literal().bytes().begin(), w->literal().bytes().end(),
                         again->literal().bytes().begin()));
}

TEST(RandomInputsTest, AllNonFiniteResults) {
  ir::Literal nan = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {3}));
  for (int64_t i = 0; i < 3; ++i) nan.SetDouble(i, std::numeric_limits<double>::quiet_NaN());
  nan.SetDouble(1, std::numeric_limits<double>::infinity());
  ir::Literal ints = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kS32, {2}));
  std::vector<eval::RuntimeValue> results;
  results.emplace_back(nan);
  results.emplace_back(ints);
  EXPECT_TRUE(AllFloatResultsNonFinite(results));
  nan.SetDouble(2, 1.5);
  results[0] = eval::RuntimeValue(nan);
  EXPECT_FALSE(AllFloatResultsNonFinite(results));
  EXPECT_FALSE(AllFloatResultsNonFinite({eval::RuntimeValue(ints)}));
  EXPECT_NE(NonFiniteHint(true).find("--seed"), std::string::npos);
}

}  // namespace
}  // namespace jitd::tools
