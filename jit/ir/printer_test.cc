#include "jit/ir/printer.h"

#include <gtest/gtest.h>

#include "jit/frontend/parser.h"

namespace jitd::ir {
namespace {

std::string Reprint(std::string_view text, PrintOptions options = {}) {
  auto m = frontend::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? PrintModule(**m, options) : "";
}

TEST(PrinterTest, PrintsStablehloOptStyle) {
  const std::string text = R"(module @m attributes {mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<f32>) -> (tensor<3xf32> {jax.result_info = ""}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.compare  GT, %arg0, %0,  FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %2 = stablehlo.select %1, %arg0, %0 : tensor<2x3xi1>, tensor<2x3xf32>
    %3 = stablehlo.reduce(%2 init: %arg1) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    %4 = stablehlo.slice %3 [0:3:2] : (tensor<3xf32>) -> tensor<2xf32>
    %cst = stablehlo.constant dense<[1.500000e+00, 0x7FC00000]> : tensor<2xf32>
    %5 = stablehlo.convert %cst : (tensor<2xf32>) -> tensor<2xf16>
    %c = stablehlo.constant dense<true> : tensor<i1>
    return %3 : tensor<3xf32>
  }
}
)";
  EXPECT_EQ(Reprint(text), text);
}

TEST(PrinterTest, WhileAndReducerForms) {
  const std::string text = R"(module {
  func.func public @main(%arg0: tensor<4xf32>, %arg1: tensor<4xi32>) -> tensor<i32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0:2 = stablehlo.reduce(%arg0 init: %cst), (%arg1 init: %c) across dimensions = [0] : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
     reducer(%arg2: tensor<f32>, %arg4: tensor<f32>) (%arg3: tensor<i32>, %arg5: tensor<i32>)  {
      %2 = stablehlo.maximum %arg2, %arg4 : tensor<f32>
      %3 = stablehlo.maximum %arg3, %arg5 : tensor<i32>
      stablehlo.return %2, %3 : tensor<f32>, tensor<i32>
    }
    %1 = stablehlo.while(%iterArg = %c) : tensor<i32>
     cond {
      %2 = stablehlo.compare  LT, %iterArg, %0#1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %2 : tensor<i1>
    } do {
      %2 = stablehlo.add %iterArg, %0#1 : tensor<i32>
      stablehlo.return %2 : tensor<i32>
    }
    return %1 : tensor<i32>
  }
}
)";
  EXPECT_EQ(Reprint(text), text);
}

TEST(PrinterTest, GenericFormReparsesToTheSameModule) {
  const std::string text = R"(module {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.exponential %arg0 : tensor<2xf32>
    %1 = stablehlo.dot_general %0, %0, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2xf32>, tensor<2xf32>) -> tensor<f32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2xf32>
    return %2 : tensor<2xf32>
  }
}
)";
  const std::string generic = Reprint(text, PrintOptions{.generic = true});
  EXPECT_NE(generic.find("\"stablehlo.exponential\"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>"),
            std::string::npos)
      << generic;
  EXPECT_NE(generic.find("#stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>"),
            std::string::npos)
      << generic;
  EXPECT_EQ(Reprint(generic), text);
}

TEST(PrinterTest, FloatsPrintShortestRoundTrip) {
  std::string out;
  AppendFloat(1.0, DType::kF32, out);
  EXPECT_EQ(out, "1.000000e+00");
  out.clear();
  AppendFloat(0.1f, DType::kF32, out);
  EXPECT_EQ(out, "1.000000e-01");
  out.clear();
  AppendFloat(0.1, DType::kF64, out);
  EXPECT_EQ(out, "1.000000e-01");
  out.clear();
  AppendFloat(1.0 / 3.0, DType::kF64, out);
  EXPECT_EQ(out, "3.333333333333333e-01");
  out.clear();
  AppendFloat(-INFINITY, DType::kBF16, out);
  EXPECT_EQ(out, "0xFF80");
}

TEST(PrinterTest, NamesStayUniqueAndSiblingRegionsReuse) {
  // Source names that shadow in nested regions are renamed once, and the
  // result is a fixpoint.
  const std::string text = R"(func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %0 = "stablehlo.reduce"(%x, %x) <{dimensions = array<i64>}> ({
  ^bb0(%x_in: tensor<f32>, %y: tensor<f32>):
    %0 = stablehlo.add %x_in, %y : tensor<f32>
    stablehlo.return %0 : tensor<f32>
  }) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
})";
  const std::string once = Reprint(text);
  EXPECT_EQ(Reprint(once), once);
}

}  // namespace
}  // namespace jitd::ir
