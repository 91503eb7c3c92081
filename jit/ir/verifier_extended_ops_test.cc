// The verifier on the ops beyond the corpus (composite, collectives,
// channels, dynamic ops, chlo.broadcast_*, chlo.scan, ...), from text: each
// broken program fails naming the op, where it is and the rule it breaks.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jit/ir/verifier_testing.h"

namespace jitd::ir {
namespace {

using testing::ExpectVerifyError;
using testing::VerifyError;

TEST(VerifierExtendedOpsTest, Composite) {
  const char* f = R"(func.func private @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %x, %x : tensor<2xf32>
  return %0 : tensor<2xf32>
})";
  EXPECT_EQ(VerifyError(R"(  %r = stablehlo.composite "a.twice" %a {decomposition = @twice} : (tensor<2xf32>) -> tensor<2xf32>)",
                        "%a: tensor<2xf32>", f),
            "");
  ExpectVerifyError(R"(  %r = stablehlo.composite "a.twice" %a {decomposition = @nowhere} : (tensor<2xf32>) -> tensor<2xf32>)",
              "%a: tensor<2xf32>", "2:3: 'stablehlo.composite' op has decomposition @nowhere, which is not a function of this module", f);
  ExpectVerifyError(R"(  %r = stablehlo.composite "a.twice" %a {decomposition = @twice} : (tensor<3xf32>) -> tensor<3xf32>)",
              "%a: tensor<3xf32>", "requires the types of its decomposition @twice ((tensor<2xf32>) -> tensor<2xf32>)", f);
}

TEST(VerifierExtendedOpsTest, ChloBroadcast) {
  EXPECT_EQ(VerifyError("  %r = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>",
                        "%a: tensor<2x3xf32>, %b: tensor<3xf32>"),
            "");
  ExpectVerifyError("  %r = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>",
              "%a: tensor<2x3xf32>, %b: tensor<2xf32>",
              "'chlo.broadcast_add' op has operands whose shapes do not broadcast together");
  ExpectVerifyError("  %r = chlo.broadcast_add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>",
              "%a: tensor<2x3xf32>, %b: tensor<3xf32>",
              "requires the broadcast shape [2, 3] as the result's, got tensor<3x3xf32>");
  ExpectVerifyError("  %r = chlo.broadcast_compare %a, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>",
              "%a: tensor<2xf32>", "requires attribute 'comparison_direction'");
  ExpectVerifyError("  %r = chlo.broadcast_add %a, %b : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>",
              "%a: tensor<2xf32>, %b: tensor<2xi32>", "requires operands of one element type");
}

TEST(VerifierExtendedOpsTest, Collectives) {
  ExpectVerifyError(R"(  %r = "stablehlo.all_gather"(%a) {all_gather_dim = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x3xf32>)",
              "%a: tensor<2x2xf32>",
              "'stablehlo.all_gather' op requires result #0 to be operand #0 resized along its dimensions");
  ExpectVerifyError(R"(  %r = "stablehlo.all_gather"(%a) : (tensor<2x2xf32>) -> tensor<2x4xf32>)",
              "%a: tensor<2x2xf32>", "requires attribute 'all_gather_dim'");
  ExpectVerifyError(R"(  %r = "stablehlo.collective_permute"(%a) {source_target_pairs = dense<[[0, 1, 2]]> : tensor<1x3xi64>} : (tensor<2xf32>) -> tensor<2xf32>)",
              "%a: tensor<2xf32>", "requires 'source_target_pairs' to have 2 columns");
  ExpectVerifyError(R"(  %t = "stablehlo.send"(%a) : (tensor<2xf32>) -> !stablehlo.token)", "%a: tensor<2xf32>",
              "'stablehlo.send' op requires its last operand to be a !stablehlo.token");
}

TEST(VerifierExtendedOpsTest, DynamicOps) {
  ExpectVerifyError("  %r = stablehlo.dynamic_reshape %a, %s : (tensor<6xf32>, tensor<3xi64>) -> tensor<2x3xf32>",
              "%a: tensor<6xf32>, %s: tensor<3xi64>",
              "'stablehlo.dynamic_reshape' op requires output_shape to be a 1-D integer tensor of 2 values, got tensor<3xi64>");
  ExpectVerifyError("  %r = stablehlo.dynamic_iota %s, dim = 2 : (tensor<1xi64>) -> tensor<4xf32>",
              "%s: tensor<1xi64>", "requires 0 <= iota_dimension < rank(result) = 1, got 2");
}

TEST(VerifierExtendedOpsTest, Scan) {
  const char* body = R"(  %o, %c = chlo.scan(%x) inits(%i) dimension=0 {
  ^bb0(%e: tensor<2xf32>, %k: tensor<2xf32>):
    stablehlo.return %e, %k : tensor<2xf32>, tensor<2xf32>
  } : (tensor<3x2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>))";
  EXPECT_EQ(VerifyError(body, "%x: tensor<3x2xf32>, %i: tensor<2xf32>"), "");
  ExpectVerifyError(R"(  %o, %c = chlo.scan(%x) inits(%i) dimension=0 {
  ^bb0(%e: tensor<3xf32>, %k: tensor<2xf32>):
    stablehlo.return %k, %k : tensor<2xf32>, tensor<2xf32>
  } : (tensor<3x2xf32>, tensor<2xf32>) -> (tensor<3x2xf32>, tensor<2xf32>))",
              "%x: tensor<3x2xf32>, %i: tensor<2xf32>",
              "'chlo.scan' op requires body argument #0 to be tensor<2xf32>, got tensor<3xf32>");
}

TEST(VerifierExtendedOpsTest, RaggedDot) {
  const std::string dn =
      "{ragged_dot_dimension_numbers = #chlo.ragged_dot<lhs_batching_dimensions = [], "
      "rhs_batching_dimensions = [], lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1], "
      "lhs_ragged_dimensions = [0], rhs_group_dimensions = [0]>}";
  const std::string args = "%l: tensor<4x2xf32>, %r: tensor<3x2x5xf32>, %g: tensor<3xi64>";
  EXPECT_EQ(VerifyError("  %d = \"chlo.ragged_dot\"(%l, %r, %g) " + dn +
                            " : (tensor<4x2xf32>, tensor<3x2x5xf32>, tensor<3xi64>) -> tensor<4x5xf32>",
                        args),
            "");
  ExpectVerifyError("  %d = \"chlo.ragged_dot\"(%l, %r, %g) " + dn +
                  " : (tensor<4x2xf32>, tensor<3x2x5xf32>, tensor<3xi64>) -> tensor<4x3xf32>",
              args, "'chlo.ragged_dot' op requires the result shape [4, 5], got tensor<4x3xf32>");
}

TEST(VerifierExtendedOpsTest, MixedPrecisionConvolution) {
  const char* conv =
      "  %r = stablehlo.convolution(%a, %b) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} "
      "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x3x1xi8>, "
      "tensor<2x1x1xi8>) -> tensor<1x2x1x";
  EXPECT_EQ(VerifyError(std::string(conv) + "i32>", "%a: tensor<1x3x1xi8>, %b: tensor<2x1x1xi8>"), "");
  ExpectVerifyError(std::string(conv) + "f32>", "%a: tensor<1x3x1xi8>, %b: tensor<2x1x1xi8>",
              "requires element_type(lhs) = element_type(rhs) and a result element type of the same kind");
}

TEST(VerifierExtendedOpsTest, QuantizeNeedsAQuantizedResult) {
  ExpectVerifyError(R"(  %r = "stablehlo.uniform_quantize"(%a) : (tensor<2xf32>) -> tensor<2xi8>)", "%a: tensor<2xf32>",
              "'stablehlo.uniform_quantize' op requires a quantized result (!quant.uniform), got tensor<2xi8>");
}

}  // namespace
}  // namespace jitd::ir
