#include "jit/frontend/parser.h"

#include <gtest/gtest.h>

#include "jit/ir/printer.h"

namespace jitd::frontend {
namespace {

using ir::DType;
using ir::OpCode;

std::unique_ptr<ir::Module> MustParse(std::string_view text) {
  auto m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

std::string ParseError(std::string_view text) {
  auto m = ParseModule(text);
  EXPECT_FALSE(m.ok()) << "parsed unexpectedly:\n" << text;
  return m.ok() ? "" : m.status().message();
}

std::string Wrap(std::string_view body, std::string_view args = "",
                 std::string_view results = "") {
  std::string s = "func.func @main(";
  s += args;
  s += ")";
  if (!results.empty()) {
    s += " -> ";
    s += results;
  }
  s += " {\n";
  s += body;
  s += "\n}\n";
  return s;
}

TEST(ParserTest, PrettyModuleWithAttributes) {
  auto m = MustParse(R"(
module @jit_main attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<2x3xf32> {jax.result_info = ""}) {
    %0 = stablehlo.add %arg0, %arg0 : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "jit_main");
  ASSERT_TRUE(m->attrs().Find("mhlo.num_partitions"));
  ir::Function* main = m->FindFunction("main");
  ASSERT_TRUE(main);
  EXPECT_EQ(main->arg_types()[0], ir::Type::Tensor(DType::kF32, {2, 3}));
  EXPECT_TRUE(main->arg_attrs()[0].Find("mhlo.sharding"));
  EXPECT_TRUE(main->result_attrs()[0].Find("jax.result_info"));
  const auto& ops = main->entry()->ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0]->code(), OpCode::kAdd);
  EXPECT_EQ(ops[0]->operand(0), main->entry()->arg(0));
  EXPECT_EQ(ops[1]->code(), OpCode::kFuncReturn);
}

TEST(ParserTest, ResultGroupsAndUses) {
  auto m = MustParse(Wrap(R"(
  %0:2 = call @pair() : () -> (tensor<f32>, tensor<i32>)
  %v, %i = chlo.top_k(%x, k = 1) : tensor<3xf32> -> (tensor<1xf32>, tensor<1xi32>)
  return %0#1, %i : tensor<i32>, tensor<1xi32>)", "%x: tensor<3xf32>",
                          "(tensor<i32>, tensor<1xi32>)") +
                     "func.func private @pair() -> (tensor<f32>, tensor<i32>) {\n"
                     "  %a = stablehlo.constant dense<1.0> : tensor<f32>\n"
                     "  %b = stablehlo.constant dense<2> : tensor<i32>\n"
                     "  return %a, %b : tensor<f32>, tensor<i32>\n}\n");
  ASSERT_TRUE(m);
  const auto& ops = m->FindFunction("main")->entry()->ops();
  EXPECT_EQ(ops[2]->operand(0), ops[0]->result(1));
  EXPECT_EQ(ops[2]->operand(1), ops[1]->result(1));
  EXPECT_EQ(ops[0]->result_groups()[0].count, 2);
}

TEST(ParserTest, GenericFormWithRegions) {
  auto m = MustParse(Wrap(R"(
  %0 = "stablehlo.reduce"(%x, %init) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  "func.return"(%0) : (tensor<f32>) -> ())",
                          "%x: tensor<4xf32>, %init: tensor<f32>", "tensor<f32>"));
  ASSERT_TRUE(m);
  const ir::Op& reduce = *m->FindFunction("main")->entry()->ops()[0];
  EXPECT_EQ(reduce.code(), OpCode::kReduce);
  EXPECT_EQ(reduce.num_regions(), 1u);
  EXPECT_EQ(reduce.region(0).block(0).num_args(), 2u);
  EXPECT_EQ(*reduce.GetI64Array("dimensions"), std::vector<int64_t>{0});
}

TEST(ParserTest, GenericModuleAndFunction) {
  auto m = MustParse(R"("builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "main", sym_visibility = "private", res_attrs = [{a = 1 : i32}]}> ({
  ^bb0(%arg0: tensor<f32>):
    "func.return"(%arg0) : (tensor<f32>) -> ()
  }) : () -> ()
}) {mhlo.num_replicas = 1 : i32} : () -> ())");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name(), "m");
  ir::Function* f = m->FindFunction("main");
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->is_public());
  EXPECT_TRUE(f->result_attrs()[0].Find("a"));
}

TEST(ParserTest, DenseLiteralForms) {
  auto m = MustParse(Wrap(R"(
  %a = stablehlo.constant dense<[[1, -2], [3, 4]]> : tensor<2x2xi8>
  %b = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
  %c = stablehlo.constant dense<0x7FC00000> : tensor<3xf32>
  %d = stablehlo.constant dense<[(1.0,2.0), (-3.5, 0.0)]> : tensor<2xcomplex<f64>>
  %e = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %f = stablehlo.constant dense<255> : tensor<ui8>
  %g = stablehlo.constant dense<> : tensor<0x3xf32>
  %h = stablehlo.constant dense<1.5> : tensor<1000000000xbf16>
  %i = stablehlo.constant dense_resource<__elided__> : tensor<4xf32>
  %j = stablehlo.constant dense<"0x3F80"> : tensor<2xbf16>
  return)"));
  ASSERT_TRUE(m);
  const auto& ops = m->FindFunction("main")->entry()->ops();
  auto dense = [&](int i) { return ops[static_cast<size_t>(i)]->attr("value")->as<ir::DenseElementsAttr>(); };
  auto lit = ir::DenseElementsToLiteral(dense(0));
  ASSERT_TRUE(lit.ok());
  EXPECT_EQ(lit->GetInt(1), -2);
  lit = ir::DenseElementsToLiteral(dense(1));
  EXPECT_EQ(lit->GetDouble(0), 1.0);
  EXPECT_EQ(lit->GetDouble(1), 2.0);
  EXPECT_TRUE(dense(2).splat);
  EXPECT_TRUE(std::isnan(ir::DenseElementsToLiteral(dense(2))->GetDouble(2)));
  EXPECT_EQ(ir::DenseElementsToLiteral(dense(3))->GetComplex(1), std::complex<double>(-3.5, 0.0));
  EXPECT_EQ(ir::DenseElementsToLiteral(dense(4))->GetPred(0), true);
  EXPECT_EQ(ir::DenseElementsToLiteral(dense(5))->GetUInt(0), 255u);
  EXPECT_EQ(dense(6).type.num_elements(), 0);
  EXPECT_TRUE(dense(7).splat);  // never materialized
  EXPECT_EQ(dense(7).data->size(), 2u);
  EXPECT_TRUE(ops[8]->attr("value")->is<ir::DenseResourceAttr>());
  EXPECT_TRUE(dense(9).splat);  // one-element hex blob is a splat
}

TEST(ParserTest, CheckDialectBothSpellings) {
  auto m = MustParse(Wrap(R"(
  %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_eq %c, %c : tensor<2xf32>
  check.expect_eq(%c, %c) : tensor<2xf32>
  check.expect_almost_eq %c, %c, tolerance = 1.0e-3 : tensor<2xf32>
  check.expect_eq_const %c, dense<[1.0, 2.0]> : tensor<2xf32>
  check.expect_almost_eq_const(%c, dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
  check.expect_close %c, %c, max_ulp_difference = 3 : tensor<2xf32>, tensor<2xf32>
  stablehlo.custom_call @check.expect_close(%c, %c) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
  return)"));
  ASSERT_TRUE(m);
  const auto& ops = m->FindFunction("main")->entry()->ops();
  EXPECT_EQ(ops[1]->code(), OpCode::kCheckExpectEq);
  EXPECT_EQ(ops[2]->code(), OpCode::kCheckExpectEq);
  EXPECT_TRUE(ops[3]->attr("tolerance"));
  EXPECT_TRUE(ops[4]->attr("value"));
  EXPECT_EQ(ops[5]->code(), OpCode::kCheckExpectAlmostEqConst);
  EXPECT_EQ(*ops[6]->GetInt("max_ulp_difference"), 3);
  EXPECT_EQ(ops[7]->code(), OpCode::kCustomCall);
}

TEST(ParserTest, LocationsCommentsAndAliases) {
  auto m = MustParse(R"(#loc = loc("file.py":1:2)
// a comment
module {
  func.func @main(%a: tensor<f32> loc("x")) -> tensor<f32> {
    %0 = stablehlo.abs %a : tensor<f32> loc(#loc)
    return %0 : tensor<f32> loc(fused["a", "b"])
  } loc(unknown)
} loc(#loc)
#loc1 = loc("y")
)");
  ASSERT_TRUE(m);
}

TEST(ParserTest, SplitModules) {
  const std::string text = "func.func @a() {\n return\n}\n// -----\n\nfunc.func @b() {\n return\n}\n";
  auto pieces = SplitModules(text);
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[1].first_line, 5);
  auto modules = ParseModules(text);
  ASSERT_TRUE(modules.ok());
  ASSERT_EQ(modules->size(), 2u);
  EXPECT_TRUE((*modules)[1]->FindFunction("b"));
  // Errors report file line numbers.
  auto bad = ParseModules("func.func @a() {\n return\n}\n// -----\nfunc.func @b() {\n bogus\n}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("6:2: ", 0), 0u) << bad.status().message();
}

TEST(ParserTest, ErrorsNameTheProblemAndPlace) {
  EXPECT_EQ(ParseError(Wrap("  %0 = stablehlo.add %x, %y : tensor<f32>", "%x: tensor<f32>")),
            "2:26: use of undefined value %y");
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.add %x, %x : tensor<2xf32>", "%x: tensor<f32>"))
                .find("has type tensor<f32> but is used as tensor<2xf32>"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.frobnicate %x : tensor<f32>", "%x: tensor<f32>"))
                .find("unknown op 'stablehlo.frobnicate'"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.constant dense<[1, 2]> : tensor<3xi32>"))
                .find("does not match tensor<3xi32>"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.constant dense<300> : tensor<i8>")).find("out of range"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.constant dense<-1> : tensor<ui8>")).find("negative"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.constant dense<\"0x0102\"> : tensor<3xi8>"))
                .find("hex literal holds 2 bytes"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("", "%x: tensor<*xf32>")).find("unranked"), std::string::npos);
  EXPECT_NE(ParseError(Wrap("", "%x: tensor<?xf32, #stablehlo.bounds<2, 3>>")).find("rank 1"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("  %0 = stablehlo.abs %x : tensor<f32>\n  %0 = stablehlo.abs %x : tensor<f32>",
                            "%x: tensor<f32>"))
                .find("redefinition of value %0"),
            std::string::npos);
  EXPECT_NE(ParseError("func.func @f() {\n  return\n}\nfunc.func @f() {\n  return\n}\n")
                .find("redefinition of function @f"),
            std::string::npos);
}

// `depth` stablehlo.if ops, each inside the first region of the one before.
std::string NestedIfs(int depth) {
  std::string s = "func.func @main(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {\n";
  for (int d = 0; d < depth; ++d) s += "%r" + std::to_string(d) + " = \"stablehlo.if\"(%p) ({\n";
  s += "stablehlo.return %x : tensor<f32>\n";
  for (int d = depth; d-- > 0;) {
    s += "}, {\nstablehlo.return %x : tensor<f32>\n}) : (tensor<i1>) -> tensor<f32>\n";
    s += d == 0 ? std::string("return %r0") : "stablehlo.return %r" + std::to_string(d);
    s += " : tensor<f32>\n";
  }
  return s + "}\n";
}

// Regions nest at most ir::kMaxRegionNesting deep; deeper text is refused
// where the first region too deep opens (every later walk over regions
// recurses once per level).
TEST(ParserTest, RegionsNestAtMostTheLimit) {
  EXPECT_TRUE(MustParse(NestedIfs(ir::kMaxRegionNesting)));
  const std::string error = ParseError(NestedIfs(ir::kMaxRegionNesting + 1));
  // Line 2 + 64 opens the 65th if; its first region's '{' is at column 28.
  EXPECT_EQ(error, "66:28: regions nested deeper than the limit of 64 levels");
  EXPECT_EQ(ParseError(NestedIfs(5000)), error);
}

TEST(ParserTest, HostileInputIsRefusedNotAllocated) {
  // Huge declared shapes: refused by the type limit.
  EXPECT_NE(ParseError(Wrap("", "%x: tensor<99999999999x99999999999xf32>")).find("limit"),
            std::string::npos);
  EXPECT_NE(ParseError(Wrap("", "%x: tensor<99999999999999999999999xf32>")).find("out of range"),
            std::string::npos);
  // Deep nesting: refused, no stack overflow.
  std::string deep = Wrap("  %0 = stablehlo.constant dense<" + std::string(100000, '[') + "1" +
                          std::string(100000, ']') + "> : tensor<1xi32>");
  EXPECT_NE(ParseError(deep).find("nesting deeper"), std::string::npos);
  std::string deep_attr = Wrap("  %0 = stablehlo.abs %x {a = " + std::string(100000, '[') +
                                   std::string(100000, ']') + "} : tensor<f32>",
                               "%x: tensor<f32>");
  EXPECT_NE(ParseError(deep_attr).find("nesting deeper"), std::string::npos);
  std::string deep_type = Wrap("", "%x: " + std::string(10000, 't') + "uple<");
  ParseError(deep_type);
  // Truncated input at every prefix length never crashes.
  const std::string good = Wrap(R"(
  %0 = stablehlo.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %1 = "stablehlo.reduce"(%0, %x) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<1x2xf32>, tensor<f32>) -> tensor<1xf32>
  return %1 : tensor<1xf32>)",
                                "%x: tensor<f32>", "tensor<1xf32>");
  ASSERT_TRUE(MustParse(good));
  // Every prefix is either a valid module (a declaration, say) or an error
  // that says where; never a crash.
  int errors = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    auto m = ParseModule(good.substr(0, n));
    if (m.ok()) continue;
    ++errors;
    const std::string& msg = m.status().message();
    EXPECT_TRUE(!msg.empty() && msg[0] >= '1' && msg[0] <= '9') << n << ": " << msg;
  }
  EXPECT_GT(errors, static_cast<int>(good.size()) - 10);
}

TEST(ParserTest, ConvolutionAndDotPrettyForms) {
  auto m = MustParse(Wrap(R"(
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, 0]], rhs_dilate = [1, 1], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x3x4xf32>
  %1 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, HIGHEST] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return)",
                          "%x: tensor<1x8x8x2xf32>, %k: tensor<3x3x2x4xf32>, %a: tensor<2x3x4xf32>, "
                          "%b: tensor<2x4x5xf32>"));
  ASSERT_TRUE(m);
  const auto& ops = m->FindFunction("main")->entry()->ops();
  const auto& conv = ops[0]->attr("dimension_numbers")->as<ir::ConvDimensionNumbers>();
  EXPECT_EQ(conv.input_batch_dimension, 0);
  EXPECT_EQ(conv.input_feature_dimension, 3);
  EXPECT_EQ(conv.kernel_input_feature_dimension, 2);
  EXPECT_EQ(conv.kernel_output_feature_dimension, 3);
  EXPECT_EQ(conv.kernel_spatial_dimensions, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(*ops[0]->GetI64Array("window_strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(ops[0]->attr("padding"));
  const ir::StructAttr* dot = ops[1]->GetStruct("dot_dimension_numbers");
  ASSERT_TRUE(dot);
  EXPECT_EQ(dot->fields.size(), 4u);
  EXPECT_EQ(ops[1]->attr("precision_config")->as<ir::ArrayAttr>().elements.size(), 2u);
}

}  // namespace
}  // namespace jitd::frontend

namespace jitd::frontend {
namespace {

TEST(ParserTest, QuotedAttributeNamesStayQuoted) {
  // Found by the fuzzer: names that are not identifiers must print quoted.
  const std::string text = R"(module {
  func.func public @main() -> (tensor<1xf32> {" odd name", "1st", ok.name = 1 : i64}) {
    %cst = stablehlo.constant {"x y" = "z"} dense<1.000000e+00> : tensor<1xf32>
    return %cst : tensor<1xf32>
  }
}
)";
  auto m = ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(ir::PrintModule(**m), text);
}

TEST(ParserTest, ResourceBlobsAreKeptAndPrinted) {
  const std::string text = R"(module {
  func.func public @main() -> tensor<2xi32> {
    %c = stablehlo.constant dense_resource<blob1> : tensor<2xi32>
    return %c : tensor<2xi32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000100000002000000",
      "odd name": "0x0400000000"
    }
  }
#-}
)";
  auto m = ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ((*m)->resources().size(), 2u);
  auto blob = (*m)->FindResourceBlob("blob1");
  ASSERT_TRUE(blob.has_value());
  EXPECT_EQ(*blob, (std::vector<uint8_t>{1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_FALSE((*m)->FindResourceBlob("missing").has_value());
  EXPECT_EQ(ir::PrintModule(**m), text);
  EXPECT_FALSE(ParseModule("module {\n}\n{-# dialect_resources: { builtin: { a: [1] } } #-}").ok());
}

// Issue 13, item 9: a binary file's error shows its bytes escaped, never raw.
TEST(ParserTest, UnprintableBytesInMessagesAreEscaped) {
  auto elf = ParseModule(std::string_view("\x7f" "ELF\x02\x01\x01", 7));
  ASSERT_FALSE(elf.ok());
  EXPECT_NE(elf.status().message().find("got '\\x7f'"), std::string::npos)
      << elf.status().message();
  auto control = ParseModule(std::string_view("func.func @main() -> tensor<f32> {\x01\xff}", 37));
  ASSERT_FALSE(control.ok());
  const std::string& m = control.status().message();
  EXPECT_NE(m.find("'\\x01"), std::string::npos) << m;
  for (char c : m) {
    const unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "raw byte " << static_cast<int>(u) << " in: " << m;
  }
  // UTF-8 text stays as written.
  auto utf8 = ParseModule("func.func @main() -> \"\xc3\xa9t\xc3\xa9\" {}");
  ASSERT_FALSE(utf8.ok());
  EXPECT_NE(utf8.status().message().find("got '\"\xc3\xa9t\xc3\xa9\"'"), std::string::npos)
      << utf8.status().message();
}

}  // namespace
}  // namespace jitd::frontend
