// Future types (!stablehlo.future<T...>, spec.md FutureType) and the rules
// of async_start / async_done: parsing, printing back, the verifier's
// constraints (C1..C4) and where futures may flow.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <utility>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

namespace jitd::ir {
namespace {

// Parses and verifies `text`; the status of whichever fails first.
Status ParseAndVerify(std::string_view text) {
  auto m = frontend::ParseModule(text);
  if (!m.ok()) return m.status();
  return VerifyModule(**m);
}

// A module whose @main runs `body` on %a: tensor<4xf32>.
std::string Main(std::string_view body) {
  return "func.func @main(%a: tensor<4xf32>) -> tensor<2xf32> {\n" + std::string(body) + "}\n";
}

constexpr std::string_view kSliceStart = R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
)";

TEST(FutureTypeTest, ParsesComparesAndPrintsBack) {
  auto m = frontend::ParseModule(
      "func.func @main(%f: !stablehlo.future<tensor<2xf32>, tensor<i32>>) {\n  return\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Type& t = (*m)->EntryFunction()->arg_types()[0];
  ASSERT_TRUE(t.is_future());
  ASSERT_EQ(t.elements().size(), 2u);
  EXPECT_EQ(t.elements()[0], Type::Tensor(DType::kF32, {2}));
  EXPECT_EQ(t, Type::Future({Type::Tensor(DType::kF32, {2}), Type::Scalar(DType::kS32)}));
  EXPECT_NE(t, Type::Tuple({Type::Tensor(DType::kF32, {2}), Type::Scalar(DType::kS32)}));
  EXPECT_NE(t, Type::Future({Type::Tensor(DType::kF32, {2})}));
  EXPECT_EQ(t.ToString(), "!stablehlo.future<tensor<2xf32>, tensor<i32>>");
  EXPECT_TRUE(VerifyModule(**m).ok());
}

TEST(FutureTypeTest, ParserRefusesEmptyAndNonTensorElements) {
  const std::pair<std::string_view, std::string_view> cases[] = {
      {"!stablehlo.future<>", "needs at least one tensor type"},
      {"!stablehlo.future<!stablehlo.token>", "a tensor type in !stablehlo.future"},
      {"!stablehlo.future<tuple<tensor<f32>>>", "a tensor type in !stablehlo.future"},
      {"!stablehlo.future<tensor<f32>", "expected '>'"},
  };
  for (const auto& [type, want] : cases) {
    auto m = frontend::ParseModule("func.func @main(%f: " + std::string(type) +
                                   ") {\n  return\n}\n");
    ASSERT_FALSE(m.ok()) << type;
    EXPECT_NE(m.status().message().find(want), std::string::npos) << m.status().ToString();
  }
}

TEST(FutureTypeTest, AsyncStartAndDoneVerifyAndPrintBack) {
  const std::string text =
      Main(std::string(kSliceStart) +
           "  %r = \"stablehlo.async_done\"(%f) : (!stablehlo.future<tensor<2xf32>>) -> "
           "tensor<2xf32>\n  return %r : tensor<2xf32>\n");
  auto m = frontend::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(VerifyModule(**m).ok()) << VerifyModule(**m).ToString();
  const std::string printed = PrintModule(**m);
  EXPECT_NE(printed.find("!stablehlo.future<tensor<2xf32>>"), std::string::npos) << printed;
  auto again = frontend::ParseModule(printed);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << printed;
  EXPECT_TRUE(VerifyModule(**again).ok());
  EXPECT_EQ(PrintModule(**again), printed);
}

TEST(FutureTypeTest, BlockArgumentFormVerifies) {
  Status s = ParseAndVerify(Main(R"(
  %f = "stablehlo.async_start"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %s = "stablehlo.slice"(%x) {start_indices = array<i64: 0>, limit_indices = array<i64: 2>,
                                strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
  %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xf32>>) -> tensor<2xf32>
  return %r : tensor<2xf32>
)"));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(FutureTypeTest, QuantizedOperandsPerTensorOnly) {
  // (I1): tensors or per-tensor quantized tensors.
  const std::string body = R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 1, 2>,
                                strides = array<i64: 1, 1>} : (tensor<2x2xQ>) -> tensor<1x2xQ>
    "stablehlo.return"(%s) : (tensor<1x2xQ>) -> ()
  }) : (tensor<2x2xQ>) -> !stablehlo.future<tensor<1x2xQ>>
  return
}
)";
  auto with = [&](std::string_view q) {
    std::string text = "func.func @main(%a: tensor<2x2xQ>) {" + body;
    for (size_t at; (at = text.find('Q')) != std::string::npos;) text.replace(at, 1, q);
    return text;
  };
  Status per_tensor = ParseAndVerify(with("!quant.uniform<i8:f32, 0.5:3>"));
  EXPECT_TRUE(per_tensor.ok()) << per_tensor.ToString();
  Status per_axis = ParseAndVerify(with("!quant.uniform<i8:f32:1, {0.5:3,0.25:1}>"));
  ASSERT_FALSE(per_axis.ok());
  EXPECT_NE(per_axis.message().find("per-tensor quantized"), std::string::npos)
      << per_axis.ToString();
}

// Each case: a program and a piece of the message that refuses it.
TEST(FutureTypeTest, VerifierRefusesBrokenRules) {
  struct Case {
    std::string text;
    std::string_view want;
  };
  const std::string done =
      "  %r = \"stablehlo.async_done\"(%f) : (!stablehlo.future<tensor<2xf32>>) -> "
      "tensor<2xf32>\n  return %r : tensor<2xf32>\n";
  const Case cases[] = {
      // async_done's results are not the future's types (C1).
      {Main(std::string(kSliceStart) +
            "  %r = \"stablehlo.async_done\"(%f) : (!stablehlo.future<tensor<2xf32>>) -> "
            "tensor<2xi32>\n  %c = stablehlo.constant dense<0.0> : tensor<2xf32>\n"
            "  return %c : tensor<2xf32>\n"),
       "future's types (C1)"},
      // async_done of a tensor, not a future.
      {Main("  %r = \"stablehlo.async_done\"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
            "  %c = stablehlo.constant dense<0.0> : tensor<2xf32>\n  return %c : tensor<2xf32>\n"),
       "requires a !stablehlo.future operand"},
      // The future's type is not what the body's op returns (C4).
      {Main(R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<3xf32>>
  %c = stablehlo.constant dense<0.0> : tensor<2xf32>
  return %c : tensor<2xf32>
)"),
       "(C4)"},
      // async_start producing a tensor.
      {Main(R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%a) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<2xf32>
  return %f : tensor<2xf32>
)"),
       "requires a !stablehlo.future result"},
      // An op outside (C2)'s list.
      {Main(R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.negate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "stablehlo.return"(%s) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<4xf32>>
  %c = stablehlo.constant dense<0.0> : tensor<2xf32>
  return %c : tensor<2xf32>
)"),
       "(C2), got 'stablehlo.negate'"},
      // Two ops in the body (C1).
      {Main(R"(
  %f = "stablehlo.async_start"(%a) ({
    %n = "stablehlo.negate"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "stablehlo.slice"(%n) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
)" + done),
       "single operation and a return (C1)"},
      // The body's op takes something else than async_start's operands (C3).
      {"func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2xf32> {\n" +
           std::string(R"(
  %f = "stablehlo.async_start"(%a) ({
    %s = "stablehlo.slice"(%b) {start_indices = array<i64: 1>, limit_indices = array<i64: 3>,
                                strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
    "stablehlo.return"(%s) : (tensor<2xf32>) -> ()
  }) : (tensor<4xf32>) -> !stablehlo.future<tensor<2xf32>>
)") + done + "}\n",
       "(C3)"},
      // A future given to an op other than async_done.
      {Main(std::string(kSliceStart) +
            "  %t = \"stablehlo.tuple\"(%f) : (!stablehlo.future<tensor<2xf32>>) -> "
            "tuple<!stablehlo.future<tensor<2xf32>>>\n"
            "  %c = stablehlo.constant dense<0.0> : tensor<2xf32>\n  return %c : tensor<2xf32>\n"),
       "only async_done"},
      {Main(std::string(kSliceStart) +
            "  %n = stablehlo.negate %f : !stablehlo.future<tensor<2xf32>>\n"
            "  %c = stablehlo.constant dense<0.0> : tensor<2xf32>\n  return %c : tensor<2xf32>\n"),
       "future"},
  };
  for (const Case& c : cases) {
    Status s = ParseAndVerify(c.text);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(s.message().find(c.want), std::string::npos) << s.ToString() << "\n" << c.text;
  }
}

}  // namespace
}  // namespace jitd::ir
