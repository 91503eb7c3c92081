#include "jit/passes/refine_shapes.h"

#include <gtest/gtest.h>

#include "jit/frontend/testing.h"
#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using frontend::testing::ParseVerifiedOrFail;

using ir::DType;
using ir::Type;
using testing::CountOpsNamed;
using testing::F32;
using testing::Tensor;

// dynamism.md's add_one_dynamic, refined for tensor<16xf32> as the doc's
// stablehlo-opt pipeline does.
constexpr std::string_view kAddOne = R"(
func.func public @main(%arg0: tensor<?xf32>) -> tensor<?xf32> {
  %cst = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %2 = stablehlo.dynamic_broadcast_in_dim %cst, %1, dims = [] : (tensor<f32>, tensor<1xi32>) -> tensor<?xf32>
  %3 = stablehlo.add %arg0, %2 : tensor<?xf32>
  return %3 : tensor<?xf32>
}
)";

TEST(RefineShapesTest, AddOneOfDynamismMd) {
  auto m = ParseVerifiedOrFail(kAddOne);
  ASSERT_TRUE(m);
  EXPECT_TRUE(HasDynamicShapes(*m));
  const Type arg = F32({16});
  ASSERT_TRUE(RefineShapes(*m, {&arg, 1}).ok());
  EXPECT_FALSE(HasDynamicShapes(*m));
  EXPECT_EQ(m->EntryFunction()->result_types()[0], F32({16}));
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.dynamic_broadcast_in_dim"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.broadcast_in_dim"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.get_dimension_size"), 0);
  std::vector<double> x(16);
  for (int i = 0; i < 16; ++i) x[i] = i * 0.5;
  auto out = testing::Evaluate(*m, {Tensor(arg, x)});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[0].literal().GetDouble(i), i * 0.5 + 1.0);
}

TEST(RefineShapesTest, SameProgramRefinesForAnotherShape) {
  for (int64_t n : {1, 3, 7}) {
    auto m = ParseVerifiedOrFail(kAddOne);
    ASSERT_TRUE(m);
    const Type arg = F32({n});
    ASSERT_TRUE(RefineShapes(*m, {&arg, 1}).ok());
    EXPECT_EQ(m->EntryFunction()->result_types()[0], F32({n})) << n;
  }
}

// What jax.export writes for `f(x) = sum(x @ w + b, axis=0)` with x of
// shape (b, 4): the dimension variable is read in @main, passed to the
// wrapped function, checked by a shape assertion, and used for the
// broadcasts of the bias.
constexpr std::string_view kJaxLike = R"(
module @jit_f attributes {jax.uses_shape_polymorphism = true, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<?x4xf32>, %arg1: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>) {
    %0 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %1 = stablehlo.convert %0 : (tensor<i32>) -> tensor<i64>
    %c = stablehlo.constant dense<1> : tensor<i64>
    %2 = stablehlo.compare  GE, %1, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.custom_call @shape_assertion(%2, %1) {error_message = "Expected value >= 1 for dimension variable 'b', got {0}.", has_side_effect = true} : (tensor<i1>, tensor<i64>) -> ()
    %3:2 = call @_wrapped_jax_export_main(%1, %arg0, %arg1) : (tensor<i64>, tensor<?x4xf32>, tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>)
    return %3#0, %3#1 : tensor<3xf32>, tensor<?x3xf32>
  }
  func.func private @_wrapped_jax_export_main(%arg0: tensor<i64>, %arg1: tensor<?x4xf32>, %arg2: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>) {
    %0 = stablehlo.dot_general %arg1, %arg2, contracting_dims = [1] x [0] : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %1 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %2 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
    %c = stablehlo.constant dense<3> : tensor<1xi32>
    %3 = stablehlo.concatenate %2, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %4 = stablehlo.dynamic_broadcast_in_dim %cst, %3, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x3xf32>
    %5 = stablehlo.add %0, %4 : tensor<?x3xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
    %7 = stablehlo.dynamic_iota %3, dim = 0 : (tensor<2xi32>) -> tensor<?x3xf32>
    %8 = stablehlo.multiply %5, %7 : tensor<?x3xf32>
    return %6, %8 : tensor<3xf32>, tensor<?x3xf32>
  }
}
)";

TEST(RefineShapesTest, JaxExportLikeBatchDimension) {
  for (int64_t b : {1, 2, 5}) {
    auto m = ParseVerifiedOrFail(kJaxLike);
    ASSERT_TRUE(m);
    const Type args[2] = {F32({b, 4}), F32({4, 3})};
    Status s = RefineShapes(*m, args);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_FALSE(HasDynamicShapes(*m));
    EXPECT_EQ(CountOpsNamed(*m, "stablehlo.custom_call"), 0);  // the assertion held
    EXPECT_EQ(CountOpsNamed(*m, "stablehlo.dynamic_iota"), 0);
    EXPECT_EQ(CountOpsNamed(*m, "stablehlo.iota"), 1);
    EXPECT_EQ(m->EntryFunction()->result_types()[1], F32({b, 3}));
    std::vector<double> x(static_cast<size_t>(b * 4)), w(12);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i);
    for (size_t i = 0; i < w.size(); ++i) w[i] = (i % 3) + 1;  // w[k][j] = j + 1
    auto out = testing::Evaluate(*m, {Tensor(args[0], x), Tensor(args[1], w)});
    ASSERT_EQ(out.size(), 2u);
    for (int64_t j = 0; j < 3; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < b; ++r) {
        double row = 0;
        for (int64_t k = 0; k < 4; ++k) row += x[r * 4 + k] * (j + 1);
        const double y = row + 0.5;
        sum += y;
        EXPECT_EQ(out[1].literal().GetDouble(r * 3 + j), y * r) << b << " " << r << " " << j;
      }
      EXPECT_EQ(out[0].literal().GetDouble(j), sum) << b << " " << j;
    }
  }
}

TEST(RefineShapesTest, FailedShapeAssertionGivesItsMessage) {
  auto m = ParseVerifiedOrFail(kJaxLike);
  ASSERT_TRUE(m);
  const Type args[2] = {F32({0, 4}), F32({4, 3})};
  Status s = RefineShapes(*m, args);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Expected value >= 1 for dimension variable 'b', got 0."),
            std::string::npos)
      << s.ToString();
}

TEST(RefineShapesTest, DynamicOpsBecomeStatic) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?x?xi32>, %idx: tensor<2x1xi64>) -> (tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x?xi32>) {
  %d0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x?xi32>) -> tensor<i32>
  %d1 = stablehlo.get_dimension_size %x, dim = 1 : (tensor<?x?xi32>) -> tensor<i32>
  %r0 = stablehlo.reshape %d0 : (tensor<i32>) -> tensor<1xi32>
  %r1 = stablehlo.reshape %d1 : (tensor<i32>) -> tensor<1xi32>
  %shape = stablehlo.concatenate %r1, %r0, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<?x?xi32>) -> tensor<?x?xi32>
  %reshaped = stablehlo.dynamic_reshape %x, %shape : (tensor<?x?xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<2xi32>
  %none = stablehlo.constant dense<0> : tensor<2xi32>
  %padded = stablehlo.dynamic_pad %x, %zero, %one, %none, %one : (tensor<?x?xi32>, tensor<i32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  %n = stablehlo.multiply %d0, %d1 : tensor<i32>
  %flat_shape = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %flat = stablehlo.dynamic_reshape %x, %flat_shape : (tensor<?x?xi32>, tensor<1xi32>) -> tensor<?xi32>
  %limit = stablehlo.concatenate %r0, %r1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %stride = stablehlo.constant dense<[2, 1]> : tensor<2xi32>
  %sliced = stablehlo.real_dynamic_slice %x, %none, %limit, %stride : (tensor<?x?xi32>, tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) -> tensor<?x?xi32>
  %sizes = stablehlo.concatenate %one, %r1, dim = 0 : (tensor<2xi32>, tensor<1xi32>) -> tensor<3xi32>
  %sizes2 = stablehlo.slice %sizes [1:3] : (tensor<3xi32>) -> tensor<2xi32>
  %gathered = "stablehlo.dynamic_gather"(%x, %idx, %sizes2) {
    dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
    indices_are_sorted = false
  } : (tensor<?x?xi32>, tensor<2x1xi64>, tensor<2xi32>) -> tensor<?x?xi32>
  return %reshaped, %padded, %sliced, %flat, %gathered : tensor<?x?xi32>, tensor<?x?xi32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?x?xi32>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type args[2] = {Type::Tensor(DType::kS32, {3, 2}), Type::Tensor(DType::kS64, {2, 1})};
  Status s = RefineShapes(*m, args);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << ir::PrintModule(*m);
  const auto& results = m->EntryFunction()->result_types();
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0], Type::Tensor(DType::kS32, {2, 3}));
  EXPECT_EQ(results[1], Type::Tensor(DType::kS32, {6, 4}));  // 1 + 3 + 2 interior, 1 + 2 + 1
  EXPECT_EQ(results[2], Type::Tensor(DType::kS32, {2, 2}));
  EXPECT_EQ(results[3], Type::Tensor(DType::kS32, {6}));
  EXPECT_EQ(results[4], Type::Tensor(DType::kS32, {2, 2}));
  for (std::string_view op : {"stablehlo.dynamic_reshape", "stablehlo.dynamic_pad",
                              "stablehlo.real_dynamic_slice", "stablehlo.dynamic_gather",
                              "stablehlo.get_dimension_size"}) {
    EXPECT_EQ(CountOpsNamed(*m, op), 0) << op;
  }
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.gather"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.pad"), 1);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.slice"), 1);  // %sizes2 folded away
  auto out = testing::Evaluate(
      *m, {Tensor(args[0], {1, 2, 3, 4, 5, 6}), Tensor(args[1], {2, 0})});
  ASSERT_EQ(out.size(), 5u);
  // rows 0 and 2 of [[1,2],[3,4],[5,6]] by the stride 2.
  EXPECT_EQ(out[2].literal().GetInt(0), 1);
  EXPECT_EQ(out[2].literal().GetInt(2), 5);
  // gather rows 2 then 0.
  EXPECT_EQ(out[4].literal().GetInt(0), 5);
  EXPECT_EQ(out[4].literal().GetInt(3), 2);
}

TEST(RefineShapesTest, DynamicConvBecomesConvolution) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<1x?x?x1xf32>, %k: tensor<3x3x1x1xf32>) -> tensor<1x?x?x1xf32> {
  %padding = stablehlo.constant dense<1> : tensor<2x2xi64>
  %y = "stablehlo.dynamic_conv"(%x, %k, %padding) {
    window_strides = array<i64: 1, 1>,
    dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>,
    feature_group_count = 1 : i64,
    batch_group_count = 1 : i64
  } : (tensor<1x?x?x1xf32>, tensor<3x3x1x1xf32>, tensor<2x2xi64>) -> tensor<1x?x?x1xf32>
  return %y : tensor<1x?x?x1xf32>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type args[2] = {F32({1, 4, 5, 1}), F32({3, 3, 1, 1})};
  Status s = RefineShapes(*m, args);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(m->EntryFunction()->result_types()[0], F32({1, 4, 5, 1}));
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.convolution"), 1);
  std::vector<double> x(20, 1.0), k(9, 1.0);
  auto out = testing::Evaluate(*m, {Tensor(args[0], x), Tensor(args[1], k)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].literal().GetDouble(0), 4.0);       // corner: 2x2 window
  EXPECT_EQ(out[0].literal().GetDouble(5 + 1), 9.0);  // interior
}

// A CNN with a dynamic batch, as exporters write one: convolution, max
// pool (reduce_window), batch norm, an FFT, and jax's @Sharding annotation.
TEST(RefineShapesTest, ConvolutionPoolingNormFftWithDynamicBatch) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?x6x6x1xf32>, %k: tensor<3x3x1x2xf32>) -> (tensor<?x2x2x2xf32>, tensor<?x2x2x2xcomplex<f32>>) {
  %xs = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{replicated}"} : (tensor<?x6x6x1xf32>) -> tensor<?x6x6x1xf32>
  %c = stablehlo.convolution(%xs, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<?x6x6x1xf32>, tensor<3x3x1x2xf32>) -> tensor<?x4x4x2xf32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %p = "stablehlo.reduce_window"(%c, %ninf) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>} : (tensor<?x4x4x2xf32>, tensor<f32>) -> tensor<?x2x2x2xf32>
  %scale = stablehlo.constant dense<1.000000e+00> : tensor<2xf32>
  %offset = stablehlo.constant dense<0.000000e+00> : tensor<2xf32>
  %mean = stablehlo.constant dense<0.000000e+00> : tensor<2xf32>
  %var = stablehlo.constant dense<1.000000e+00> : tensor<2xf32>
  %n = "stablehlo.batch_norm_inference"(%p, %scale, %offset, %mean, %var) {epsilon = 0.000000e+00 : f32, feature_index = 3 : i64} : (tensor<?x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<?x2x2x2xf32>
  %cplx = stablehlo.convert %n : (tensor<?x2x2x2xf32>) -> tensor<?x2x2x2xcomplex<f32>>
  %f = stablehlo.fft %cplx, type = FFT, length = [2] : (tensor<?x2x2x2xcomplex<f32>>) -> tensor<?x2x2x2xcomplex<f32>>
  return %n, %f : tensor<?x2x2x2xf32>, tensor<?x2x2x2xcomplex<f32>>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type args[2] = {F32({3, 6, 6, 1}), F32({3, 3, 1, 2})};
  Status s = RefineShapes(*m, args);
  ASSERT_TRUE(s.ok()) << s.ToString() << ir::PrintModule(*m);
  EXPECT_EQ(m->EntryFunction()->result_types()[0], F32({3, 2, 2, 2}));
  EXPECT_EQ(m->EntryFunction()->result_types()[1], Type::Tensor(DType::kC64, {3, 2, 2, 2}));
  std::vector<double> x(108, 1.0), k(18, 1.0);
  auto out = testing::Evaluate(*m, {Tensor(args[0], x), Tensor(args[1], k)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].literal().GetDouble(0), 9.0);  // a 3x3 window of ones
}

TEST(RefineShapesTest, WhileCarriesRefinedShapes) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<?xf32>
  cond {
    %c3 = stablehlo.constant dense<3> : tensor<i32>
    %lt = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %c1 : tensor<i32>
    %w = stablehlo.add %v, %v : tensor<?xf32>
    stablehlo.return %n, %w : tensor<i32>, tensor<?xf32>
  }
  return %r#1 : tensor<?xf32>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type arg = F32({2});
  Status s = RefineShapes(*m, {&arg, 1});
  ASSERT_TRUE(s.ok()) << s.ToString() << ir::PrintModule(*m);
  auto out = testing::Evaluate(*m, {Tensor(arg, {1, 2})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].literal().GetDouble(1), 16.0);
}

TEST(RefineShapesTest, StillDynamicValueIsRefusedByName) {
  // The shape comes from an argument's data: not shape polymorphism.
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?xf32>, %shape: tensor<2xi64>) -> tensor<?x?xf32> {
  %y = stablehlo.dynamic_reshape %x, %shape : (tensor<?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type args[2] = {F32({6}), Type::Tensor(DType::kS64, {2})};
  Status s = RefineShapes(*m, args);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("%y of 'stablehlo.dynamic_reshape' at 3:"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("still dynamic"), std::string::npos) << s.ToString();
}

TEST(RefineShapesTest, HugeShapesFromShapeOperandsAreRefused) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?xf32>) -> tensor<?x?xf32> {
  %shape = stablehlo.constant dense<[4294967296, 4294967296]> : tensor<2xi64>
  %y = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<2xi64>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type arg = F32({2});
  Status s = RefineShapes(*m, {&arg, 1});
  EXPECT_NE(s.message().find("%y of 'stablehlo.dynamic_iota'"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("limit of 2^40 elements"), std::string::npos) << s.ToString();
  // A negative size is refused too.
  auto neg = ParseVerifiedOrFail(R"(
func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %shape = stablehlo.constant dense<[-3]> : tensor<1xi64>
  %y = stablehlo.dynamic_iota %shape, dim = 0 : (tensor<1xi64>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
)");
  ASSERT_TRUE(neg);
  s = RefineShapes(*neg, {&arg, 1});
  EXPECT_NE(s.message().find("negative size -3"), std::string::npos) << s.ToString();
}

TEST(RefineShapesTest, ArgumentErrorsNameTheArgument) {
  auto m = ParseVerifiedOrFail(kJaxLike);
  ASSERT_TRUE(m);
  const Type one = F32({2, 4});
  Status s = RefineShapes(*m, {&one, 1});
  EXPECT_NE(s.message().find("takes 2 arguments, 1 argument types were given"), std::string::npos)
      << s.ToString();
  const Type wrong_static[2] = {F32({2, 5}), F32({4, 3})};
  s = RefineShapes(*m, wrong_static);
  EXPECT_NE(s.message().find("argument #0 of @main"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("differs in static dimension 1"), std::string::npos) << s.ToString();
  const Type wrong_dtype[2] = {Type::Tensor(DType::kF64, {2, 4}), F32({4, 3})};
  s = RefineShapes(*m, wrong_dtype);
  EXPECT_NE(s.message().find("another element type"), std::string::npos) << s.ToString();
  const Type dynamic[2] = {F32({Type::kDynamic, 4}), F32({4, 3})};
  s = RefineShapes(*m, dynamic);
  EXPECT_NE(s.message().find("is not static"), std::string::npos) << s.ToString();
}

TEST(RefineShapesTest, BoundsLimitTheArgument) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?x2xf32, #stablehlo.bounds<4, ?>>) -> tensor<?x2xf32, #stablehlo.bounds<4, ?>> {
  %y = stablehlo.negate %x : tensor<?x2xf32, #stablehlo.bounds<4, ?>>
  return %y : tensor<?x2xf32, #stablehlo.bounds<4, ?>>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const Type big = F32({5, 2});
  Status s = RefineShapes(*m, {&big, 1});
  EXPECT_NE(s.message().find("exceeds the bound 4 of dimension 0"), std::string::npos)
      << s.ToString();
  const Type ok = F32({4, 2});
  s = RefineShapes(*m, {&ok, 1});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(m->EntryFunction()->result_types()[0], F32({4, 2}));
}

TEST(RefineShapesTest, StaticModuleTakesOnlyItsOwnTypes) {
  auto m = ParseVerifiedOrFail("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> { return %x : tensor<2xf32> }");
  ASSERT_TRUE(m);
  const Type same = F32({2});
  EXPECT_TRUE(RefineShapes(*m, {&same, 1}).ok());
  const Type other = F32({3});
  Status s = RefineShapes(*m, {&other, 1});
  EXPECT_NE(s.message().find("declared tensor<2xf32>"), std::string::npos) << s.ToString();
}

TEST(RefineShapesTest, PassesRefuseDynamicModulesUntilRefined) {
  auto m = ParseVerifiedOrFail(kAddOne);
  ASSERT_TRUE(m);
  PassManager manager;
  ASSERT_TRUE(AddPipeline(manager, "default").ok());
  Status s = manager.Run(*m);
  EXPECT_NE(s.message().find("dynamic shapes"), std::string::npos) << s.ToString();
  const Type arg = F32({5});
  ASSERT_TRUE(RefineShapes(*m, {&arg, 1}).ok());
  s = manager.Run(*m);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

// spec.md's "Dynamism" section and its dynamic-argument example: valid
// programs whose deferred shape constraints are checked once the shapes are
// known (at refinement, for jitd: a mismatch is refused, never undefined).
TEST(RefineShapesTest, SpecDynamismExamples) {
  {
    // spec.md "Shape mismatches for binary elementwise operations" / the
    // example of dynamic arguments: equal at run time, or invalid.
    auto m = ParseVerifiedOrFail(R"(
func.func @foo(%arg0: tensor<?xi32>, %arg1: tensor<?xi32>) -> tensor<?xi32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<?xi32>
    return %0 : tensor<?xi32>
}
)");
    ASSERT_TRUE(m);
    const Type same[2] = {Type::Tensor(DType::kS32, {3}), Type::Tensor(DType::kS32, {3})};
    ASSERT_TRUE(RefineShapes(*m, same).ok());
    auto out = testing::Evaluate(*m, {Tensor(same[0], {1, 2, 3}), Tensor(same[1], {10, 20, 30})});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].literal().GetInt(2), 33);
    auto again = ParseVerifiedOrFail(R"(
func.func @foo(%arg0: tensor<?xi32>, %arg1: tensor<?xi32>) -> tensor<?xi32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<?xi32>
    return %0 : tensor<?xi32>
}
)");
    ASSERT_TRUE(again);
    const Type differ[2] = {Type::Tensor(DType::kS32, {3}), Type::Tensor(DType::kS32, {4})};
    Status s = RefineShapes(*again, differ);
    EXPECT_NE(s.message().find("does not verify"), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("stablehlo.add"), std::string::npos) << s.ToString();
  }
  {
    // "Shape mismatches for unary elementwise operations": a static result
    // of a `?` operand.
    constexpr std::string_view kAbs = R"(
func.func @foo(%arg0: tensor<?xf64>) {
  %0 = stablehlo.abs %arg0 : (tensor<?xf64>) -> tensor<2xf64>
  return
}
)";
    auto m = ParseVerifiedOrFail(kAbs);
    ASSERT_TRUE(m);
    const Type two = Type::Tensor(DType::kF64, {2});
    EXPECT_TRUE(RefineShapes(*m, {&two, 1}).ok());
    auto bad = ParseVerifiedOrFail(kAbs);
    ASSERT_TRUE(bad);
    const Type three = Type::Tensor(DType::kF64, {3});
    Status s = RefineShapes(*bad, {&three, 1});
    EXPECT_NE(s.message().find("stablehlo.abs"), std::string::npos) << s.ToString();
  }
  {
    // The binary example with a dynamic result.
    auto m = ParseVerifiedOrFail(R"(
func.func @foo(%arg0: tensor<?xf64>, %arg1: tensor<?xf64>) {
  %0 = stablehlo.add %arg0, %arg0 : (tensor<?xf64>, tensor<?xf64>) -> tensor<?xf64>
  return
}
)");
    ASSERT_TRUE(m);
    const Type args[2] = {Type::Tensor(DType::kF64, {5}), Type::Tensor(DType::kF64, {1})};
    EXPECT_TRUE(RefineShapes(*m, args).ok());
  }
  {
    // "Ops that take their output shape as an operand": a shape operand
    // from the data, a static result: valid, checked when it runs.
    auto m = ParseVerifiedOrFail(R"(
func.func @foo(%arg0: tensor<2xi32>) {
  %0 = stablehlo.dynamic_iota %arg0, dim = 0 : (tensor<2xi32>) -> tensor<3x4xi64>
  return
}
)");
    ASSERT_TRUE(m);
    const Type arg = Type::Tensor(DType::kS32, {2});
    EXPECT_TRUE(RefineShapes(*m, {&arg, 1}).ok());
  }
}

TEST(RefineShapesTest, ParseArgumentTypes) {
  auto types = ParseArgumentTypes("tensor<8x4xf32>, tensor<i32>;tensor<2xcomplex<f64>>");
  ASSERT_TRUE(types.ok()) << types.status().ToString();
  ASSERT_EQ(types->size(), 3u);
  EXPECT_EQ((*types)[0], F32({8, 4}));
  EXPECT_EQ((*types)[1], Type::Scalar(DType::kS32));
  EXPECT_EQ((*types)[2], Type::Tensor(DType::kC128, {2}));
  EXPECT_TRUE(ParseArgumentTypes("")->empty());
  EXPECT_NE(ParseArgumentTypes("tensor<?x4xf32>").status().message().find("must be static"),
            std::string::npos);
  EXPECT_NE(ParseArgumentTypes("tensor<4xf32>, tensor<4xfoo>").status().message().find(
                "argument type #1"),
            std::string::npos);
  EXPECT_NE(ParseArgumentTypes("tensor<4xf32> tensor<4xf32>").status().message().find("expected ','"),
            std::string::npos);
}

TEST(DynamicTypesTest, ParsePrintAndVerify) {
  constexpr std::string_view kText = R"(
func.func @main(%x: tensor<?x?xf32, #stablehlo.bounds<16, ?>>, %y: tensor<?x3xi8>) -> tensor<?x?xf32, #stablehlo.bounds<16, ?>> {
  return %x : tensor<?x?xf32, #stablehlo.bounds<16, ?>>
}
)";
  auto m = ParseVerifiedOrFail(kText);
  ASSERT_TRUE(m);
  const auto& args = m->EntryFunction()->arg_types();
  EXPECT_TRUE(args[0].is_dynamic());
  EXPECT_EQ(args[0].bounds(), (std::vector<int64_t>{16, Type::kDynamic}));
  EXPECT_EQ(args[0].ToString(), "tensor<?x?xf32, #stablehlo.bounds<16, ?>>");
  EXPECT_EQ(args[1].ToString(), "tensor<?x3xi8>");
  EXPECT_EQ(args[1].num_elements(), -1);
  // Prints back and parses to the same module text.
  const std::string printed = ir::PrintModule(*m);
  auto again = frontend::ParseModule(printed);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << printed;
  EXPECT_EQ(ir::PrintModule(**again), printed);
}

TEST(DynamicTypesTest, BadTypesAreRefused) {
  auto error = [](std::string_view type) {
    std::string text = "func.func @main(%x: " + std::string(type) + ") { return }";
    auto m = frontend::ParseModule(text);
    if (!m.ok()) return m.status().message();
    Status s = ir::VerifyModule(**m);
    return s.ok() ? std::string() : s.message();
  };
  EXPECT_NE(error("tensor<?x2xf32, #stablehlo.bounds<4, 4>>").find("static dimension 1"),
            std::string::npos);
  EXPECT_NE(error("tensor<?x2xf32, #stablehlo.bounds<4>>").find("1 entries for a tensor of rank 2"),
            std::string::npos);
  EXPECT_NE(error("tensor<?xf32, #foo.enc>").find("unsupported tensor encoding"), std::string::npos);
  EXPECT_NE(error("tensor<?xf32, #stablehlo.bounds<-3>>").find("negative bound"), std::string::npos);
  // A constant's shape is its data's.
  auto m = frontend::ParseModule(
      "func.func @main() -> tensor<?xf32> {\n"
      "  %c = stablehlo.constant dense<1.0> : tensor<?xf32>\n"
      "  return %c : tensor<?xf32>\n}\n");
  ASSERT_TRUE(!m.ok() || !ir::VerifyModule(**m).ok());
}

TEST(DynamicTypesTest, VerifierChecksCompatibility) {
  // A return of an incompatible static shape is refused even with `?`.
  auto m = frontend::ParseModule(R"(
func.func @main(%x: tensor<?x2xf32>) -> tensor<?x3xf32> {
  return %x : tensor<?x2xf32>
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Status s = ir::VerifyModule(**m);
  EXPECT_NE(s.message().find("compatible with the result types"), std::string::npos) << s.ToString();
  auto ew = frontend::ParseModule(R"(
func.func @main(%x: tensor<?x2xf32>, %y: tensor<3x3xf32>) -> tensor<?x2xf32> {
  %z = stablehlo.add %x, %y : (tensor<?x2xf32>, tensor<3x3xf32>) -> tensor<?x2xf32>
  return %z : tensor<?x2xf32>
}
)");
  ASSERT_TRUE(ew.ok()) << ew.status().ToString();
  s = ir::VerifyModule(**ew);
  EXPECT_NE(s.message().find("compatible with the result's"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace jitd::passes
