// Quantized element types (!quant.uniform, quantization.md): parsing,
// printing back, the parser's and the verifier's constraints.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/ir/verifier_testing.h"

namespace jitd::ir {
namespace {

// The type of the entry function's first argument, spelled `type`.
StatusOr<Type> ParseArgType(std::string_view type) {
  auto m = frontend::ParseModule("func.func @main(%a: " + std::string(type) + ") {\n  return\n}\n");
  if (!m.ok()) return m.status();
  return (*m)->EntryFunction()->arg_types()[0];
}

TEST(QuantTypeTest, PerTensorParsesAndPrintsBack) {
  auto t = ParseArgType("tensor<2x3x!quant.uniform<i8:f32, 0.01:50>>");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_TRUE(t->is_quantized());
  EXPECT_EQ(t->dtype(), DType::kS8);  // storage
  const QuantParams& q = *t->quant();
  EXPECT_EQ(q.expressed, DType::kF32);
  EXPECT_FALSE(q.per_axis());
  EXPECT_EQ(q.scales, std::vector<double>{0.01});
  EXPECT_EQ(q.zero_points, std::vector<int64_t>{50});
  EXPECT_EQ(q.storage_min, -128);
  EXPECT_EQ(q.storage_max, 127);
  EXPECT_EQ(t->ToString(), "tensor<2x3x!quant.uniform<i8:f32, 0.01:50>>");
  EXPECT_EQ(t->byte_size(), 6);
}

TEST(QuantTypeTest, PerAxisRangesAndUnsignedPrintBack) {
  for (std::string_view text : {
           "tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>",
           "tensor<4x3x2x!quant.uniform<i8<-127:127>:f32:1, {0.2:20,0.1:10,0.3:30}>>",
           "tensor<!quant.uniform<u8:f16, 2.5:128>>",
           "tensor<3x!quant.uniform<i4<-7:7>:bf16, 0.5>>",
           "tensor<2x!quant.uniform<i32:f64, 1.0e-05>>",
       }) {
    auto t = ParseArgType(text);
    ASSERT_TRUE(t.ok()) << text << ": " << t.status().ToString();
    auto again = ParseArgType(t->ToString());
    ASSERT_TRUE(again.ok()) << t->ToString() << ": " << again.status().ToString();
    EXPECT_EQ(*again, *t) << text;
    EXPECT_EQ(again->ToString(), t->ToString());
  }
  EXPECT_EQ(ParseArgType("tensor<2x!quant.uniform<i8:f32:0, {0.1:-30, 0.5:-20}>>")->ToString(),
            "tensor<2x!quant.uniform<i8:f32:0, {0.1:-30,0.5:-20}>>");
  EXPECT_EQ(ParseArgType("tensor<3x!quant.uniform<i8<-127:127>:f32, 0.5:0>>")->ToString(),
            "tensor<3x!quant.uniform<i8<-127:127>:f32, 0.5>>");
  auto u = ParseArgType("tensor<!quant.uniform<u8:f16, 2.5:128>>");
  EXPECT_EQ(u->dtype(), DType::kU8);
  EXPECT_EQ(u->quant()->storage_max, 255);
}

TEST(QuantTypeTest, ParametersDistinguishTypes) {
  EXPECT_NE(*ParseArgType("tensor<2x!quant.uniform<i8:f32, 0.5:1>>"),
            *ParseArgType("tensor<2x!quant.uniform<i8:f32, 0.5:2>>"));
  EXPECT_NE(*ParseArgType("tensor<2x!quant.uniform<i8:f32, 0.5:1>>"), *ParseArgType("tensor<2xi8>"));
  EXPECT_EQ(*ParseArgType("tensor<2x!quant.uniform<i8:f32, 0.5:1>>"),
            *ParseArgType("tensor<2x!quant.uniform<i8:f32, 5.0e-1:1>>"));
}

void ExpectParseError(std::string_view type, std::string_view want) {
  auto t = ParseArgType(type);
  ASSERT_FALSE(t.ok()) << type;
  EXPECT_NE(t.status().message().find(want), std::string::npos)
      << type << ": " << t.status().message() << "\nwant: " << want;
}

TEST(QuantTypeTest, ParserNamesTheBrokenConstraint) {
  ExpectParseError("tensor<2x!quant.uniform<f32:f32, 0.5>>",
                   "storage type 'f32' of !quant.uniform must be an integer type");
  ExpectParseError("tensor<2x!quant.uniform<i8:i32, 0.5>>",
                   "expressed type 'i32' of !quant.uniform must be a floating-point type");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32, 0.0:1>>", "must be positive and finite");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32, -1.0:1>>", "must be positive and finite");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32, 0.5:200>>",
                   "zero point 200 of !quant.uniform must lie in the storage range [-128, 127]");
  ExpectParseError("tensor<2x!quant.uniform<i8<-200:0>:f32, 0.5>>",
                   "storage range <-200:0> of !quant.uniform must lie within i8's range");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32:1, {0.5,0.5}>>",
                   "quantized_dimension 1 of !quant.uniform is out of range for a tensor of rank 1");
  ExpectParseError("tensor<3x!quant.uniform<i8:f32:0, {0.5,0.5}>>",
                   "has 2 scale:zero_point pairs but dimension 0 of the tensor has size 3");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32, {0.5,0.5}>>", "needs a quantized dimension");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32 0.5>>", "expected ',' before the scale");
  ExpectParseError("tensor<2x!quant.uniform<i8:f32, 0.5:1>", "expected '>' closing 'tensor<'");
}

using testing::ExpectVerifyError;
using testing::VerifyError;

constexpr std::string_view kQ = "tensor<2x!quant.uniform<i8:f32, 0.5:1>>";

TEST(QuantTypeTest, VerifierChecksQuantizeAndDequantize) {
  EXPECT_EQ(
      VerifyError("  %r = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> " + std::string(kQ),
                  "%a: tensor<2xf32>"),
      "");
  EXPECT_EQ(VerifyError("  %r = stablehlo.uniform_dequantize %a : (" + std::string(kQ) +
                            ") -> tensor<2xf32>",
                        "%a: " + std::string(kQ)),
            "");
  ExpectVerifyError("  %r = stablehlo.uniform_quantize %a : (tensor<3xf32>) -> " + std::string(kQ),
                    "%a: tensor<3xf32>", "(C1) requires the result shape to equal the operand's");
  ExpectVerifyError("  %r = stablehlo.uniform_quantize %a : (tensor<2xf64>) -> " + std::string(kQ),
                    "%a: tensor<2xf64>", "(C2) requires the result's expressed type to be f64");
  ExpectVerifyError("  %r = stablehlo.uniform_quantize %a : (tensor<2xi32>) -> " + std::string(kQ),
                    "%a: tensor<2xi32>",
                    "requires a float or quantized operand, got tensor<2xi32>");
  ExpectVerifyError("  %r = stablehlo.uniform_dequantize %a : (tensor<2xi8>) -> tensor<2xf32>",
                    "%a: tensor<2xi8>",
                    "requires a quantized operand (!quant.uniform), got tensor<2xi8>");
  ExpectVerifyError(
      "  %r = stablehlo.uniform_dequantize %a : (" + std::string(kQ) + ") -> tensor<2xf16>",
      "%a: " + std::string(kQ),
      "(C2) requires the result element type to be the operand's expressed type f32");
}

TEST(QuantTypeTest, VerifierChecksQuantizedElementwise) {
  const std::string other = "tensor<2x!quant.uniform<i8:f32, 0.25:3>>";
  EXPECT_EQ(VerifyError("  %r = stablehlo.add %a, %b : (" + std::string(kQ) + ", " + other +
                            ") -> " + other,
                        "%a: " + std::string(kQ) + ", %b: " + other),
            "");
  ExpectVerifyError(
      "  %r = stablehlo.add %a, %b : (" + std::string(kQ) + ", tensor<2xi8>) -> " + std::string(kQ),
      "%a: " + std::string(kQ) + ", %b: tensor<2xi8>",
      "requires all operands and the result to be quantized when one is");
  ExpectVerifyError("  %r = stablehlo.add %a, %b : (" + std::string(kQ) +
                        ", tensor<2x!quant.uniform<i16:f32, 0.5>>) -> " + std::string(kQ),
                    "%a: " + std::string(kQ) + ", %b: tensor<2x!quant.uniform<i16:f32, 0.5>>",
                    "requires the same storage and expressed types for every quantized value");
  ExpectVerifyError("  %r = stablehlo.and %a, %b : " + std::string(kQ),
                    "%a: " + std::string(kQ) + ", %b: " + std::string(kQ),
                    "'stablehlo.and' op does not accept quantized element types");
}

TEST(QuantTypeTest, ModulePrintsBackAndReparses) {
  const std::string text =
      "func.func @main(%a: tensor<2xf32>) -> tensor<2x!quant.uniform<i8<-127:127>:f32:0, "
      "{0.1:-30,0.5:-20}>> {\n"
      "  %r = stablehlo.uniform_quantize %a : (tensor<2xf32>) -> tensor<2x!quant.uniform<"
      "i8<-127:127>:f32:0, {0.1:-30,0.5:-20}>>\n"
      "  return %r : tensor<2x!quant.uniform<i8<-127:127>:f32:0, {0.1:-30,0.5:-20}>>\n}\n";
  auto m = frontend::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(VerifyModule(**m).ok());
  const std::string printed = PrintModule(**m);
  EXPECT_NE(printed.find("tensor<2x!quant.uniform<i8<-127:127>:f32:0, {0.1:-30,0.5:-20}>>"),
            std::string::npos)
      << printed;
  auto again = frontend::ParseModule(printed);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << printed;
  EXPECT_EQ(PrintModule(**again), printed);
}

}  // namespace
}  // namespace jitd::ir
