// cuDNN descriptor building offline: convolution dimension numbers to
// [N, C, S...] extents and strides in the operands' own layouts, KCRS
// filters read in place and others permuted, unit spatial dimensions,
// groups, pads, strides, dilations, math modes; what the plan refuses; the
// encoded round trip and buffer checks.
#include "devices/cuda/cudnn_plan.h"

#include <gtest/gtest.h>

#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

StatusOr<CudnnConvPlan> PlanOf(const std::string& conv, const std::string& types, bool exact = false) {
  const size_t arrow = types.rfind("-> ");
  const std::string result = types.substr(arrow + 3);
  const std::string args = types.substr(1, types.find(") ->") - 1);
  const size_t comma = args.find(">, ");
  const std::string x = args.substr(0, comma + 1), w = args.substr(comma + 3);
  const std::string text = "func.func @main(%x: " + x + ", %w: " + w + ") -> " + result +
                           " {\n  %0 = stablehlo.convolution(%x, %w) " + conv + " : " + types +
                           "\n  return %0 : " + result + "\n}";
  auto module = frontend::ParseModule(text);
  if (!module.ok()) return module.status();
  return PlanCudnnConvolution(*(*module)->EntryFunction()->entry()->ops().front(), exact);
}

constexpr char kGroups[] = "{batch_group_count = 1 : i64, feature_group_count = 1 : i64}";

TEST(CudnnPlanTest, NchwOihwIsReadInPlace) {
  auto plan = PlanOf(std::string("dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], "
                                 "pad = [[1, 1], [2, 2]], rhs_dilate = [1, 2]} ") + kGroups,
                     "(tensor<2x3x9x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x5x8xf32>");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->x_dims, (std::vector<int64_t>{2, 3, 9, 8}));
  EXPECT_EQ(plan->x_strides, (std::vector<int64_t>{216, 72, 8, 1}));
  EXPECT_EQ(plan->w_dims, (std::vector<int64_t>{4, 3, 3, 3}));
  EXPECT_TRUE(plan->filter_permutation.empty());
  EXPECT_EQ(plan->y_dims, (std::vector<int64_t>{2, 4, 5, 8}));
  EXPECT_EQ(plan->pad, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(plan->stride, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(plan->dilation, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(plan->math, ConvMath::kDefault);  // DEFAULT may use TF32
  EXPECT_EQ(plan->groups, 1);
  EXPECT_EQ(plan->workspace_bytes, kCudnnWorkspaceBytes);
}

TEST(CudnnPlanTest, NhwcHwioKeepsTheTensorsStridesAndPermutesTheFilter) {
  // jax / flax's usual layout; feature groups of 2.
  auto plan = PlanOf("dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} "
                     "{batch_group_count = 1 : i64, feature_group_count = 2 : i64}",
                     "(tensor<1x6x7x4xf32>, tensor<3x3x2x6xf32>) -> tensor<1x6x7x6xf32>", /*exact=*/true);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->x_dims, (std::vector<int64_t>{1, 4, 6, 7}));
  EXPECT_EQ(plan->x_strides, (std::vector<int64_t>{168, 1, 28, 4}));  // N, C, H, W of NHWC
  EXPECT_EQ(plan->y_strides, (std::vector<int64_t>{252, 1, 42, 6}));
  EXPECT_EQ(plan->w_dims, (std::vector<int64_t>{6, 2, 3, 3}));
  EXPECT_EQ(plan->filter_permutation, (std::vector<int64_t>{3, 2, 0, 1}));
  EXPECT_EQ(plan->groups, 2);
  EXPECT_EQ(plan->math, ConvMath::kFma);  // --cuda-exact-f32
  EXPECT_NE(DescribeConvPlan(*plan).find("permuted from [3,2,0,1]"), std::string::npos) << DescribeConvPlan(*plan);
}

TEST(CudnnPlanTest, OneSpatialDimensionGetsAUnitOne) {
  auto plan = PlanOf(std::string("dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [1]} ") + kGroups,
                     "(tensor<1x2x8xf64>, tensor<3x2x3xf64>) -> tensor<1x3x6xf64>");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->x_dims, (std::vector<int64_t>{1, 2, 8, 1}));
  EXPECT_EQ(plan->w_dims, (std::vector<int64_t>{3, 2, 3, 1}));
  EXPECT_EQ(plan->y_dims, (std::vector<int64_t>{1, 3, 6, 1}));
  EXPECT_EQ(plan->pad.size(), 2u);
  EXPECT_EQ(plan->type, LibType::kF64);
  EXPECT_EQ(plan->compute, LibType::kF64);
}

TEST(CudnnPlanTest, RefusesWhatCudnnDoesNotHaveByName) {
  auto expect_not_found = [](const StatusOr<CudnnConvPlan>& plan, const std::string& words) {
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), StatusCode::kNotFound) << plan.status().message();
    EXPECT_NE(plan.status().message().find(words), std::string::npos) << plan.status().message();
  };
  expect_not_found(PlanOf("dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [2, 2]], "
                          "lhs_dilate = [2, 2]} " + std::string(kGroups),
                          "(tensor<1x16x16x2xf32>, tensor<2x3x2x2xf32>) -> tensor<1x32x33x2xf32>"),
                   "lhs_dilation");
  expect_not_found(PlanOf("dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 2], [0, 0]]} " +
                              std::string(kGroups),
                          "(tensor<1x1x16x1xf32>, tensor<4x1x1x2xf32>) -> tensor<1x1x16x2xf32>"),
                   "padding [1, 2]");
  expect_not_found(PlanOf("dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {reverse = [false, true]} " +
                              std::string(kGroups),
                          "(tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x6x6x4xf32>"),
                   "window_reversal");
  expect_not_found(PlanOf(std::string("dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} ") + kGroups,
                          "(tensor<1x2x4x4xi32>, tensor<2x2x1x1xi32>) -> tensor<1x2x4x4xi32>"),
                   "i32 elements");
  expect_not_found(PlanOf("dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} "
                          "{batch_group_count = 2 : i64, feature_group_count = 1 : i64}",
                          "(tensor<2x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>"),
                   "batch_group_count");
}

TEST(CudnnPlanTest, EncodedPlanRoundTripsAndIsChecked) {
  auto plan = PlanOf(std::string("dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], "
                                 "pad = [[1, 1], [2, 2]], rhs_dilate = [1, 2]} ") + kGroups,
                     "(tensor<2x3x9x8xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x5x8xf16>");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->math, ConvMath::kTensorOp);
  EXPECT_EQ(plan->compute, LibType::kF32);
  auto bf16 = PlanOf(std::string("dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} ") + kGroups,
                     "(tensor<1x2x4x4xbf16>, tensor<3x2x1x1xbf16>) -> tensor<1x3x4x4xbf16>");
  ASSERT_TRUE(bf16.ok()) << bf16.status().message();
  EXPECT_EQ(bf16->type, LibType::kBF16);
  EXPECT_EQ(bf16->compute, LibType::kF32);
  auto bf16_back = DecodeConvPlan(EncodeConvPlan(*bf16));
  ASSERT_TRUE(bf16_back.ok()) << bf16_back.status().message();
  EXPECT_EQ(*bf16_back, *bf16);
  const std::vector<int64_t> encoded = EncodeConvPlan(*plan);
  auto back = DecodeConvPlan(encoded);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, *plan);
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (i == 6) continue;  // the workspace limit: any size is a plan
    // Strides (x: 12..15, y: 20..23) are CheckConvBuffers' part.
    if ((i >= 12 && i < 16) || (i >= 20 && i < 24)) continue;
    std::vector<int64_t> broken = encoded;
    broken[i] = broken[i] * 5 + 7;
    EXPECT_FALSE(DecodeConvPlan(broken).ok()) << "field " << i;
  }
  EXPECT_TRUE(CheckConvBuffers(*plan, 2 * 3 * 9 * 8 * 2, 4 * 3 * 3 * 3 * 2, 2 * 4 * 5 * 8 * 2).ok());
  auto small = CheckConvBuffers(*plan, 2 * 3 * 9 * 8 * 2, 4 * 3 * 3 * 3 * 2, 2 * 4 * 5 * 8);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.message().find("output buffer"), std::string::npos) << small.message();
}

}  // namespace
}  // namespace jitd::devices::cuda
