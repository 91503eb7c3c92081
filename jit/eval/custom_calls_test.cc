// The custom-call registry: layouts honoured (a row-major layout hands
// LAPACK the transpose, as XLA would), jaxlib's attributes read from
// mhlo.backend_config, errors that name the target and what is wrong,
// jax's shape_assertion; the verifier's checks of the jax.export attributes
// and their printed round trip. The numerical agreement of every target
// with numpy / LAPACK is tests/jax_export (ctest jitd_jax_export_*).
#include "jit/eval/custom_calls.h"

#include <gtest/gtest.h>

#include <string>

#include "jit/eval/eval.h"
#include "jit/eval/testing.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/refine_shapes.h"

namespace jitd::eval {
namespace {

using testing::Doubles;
using testing::EvalText;
using testing::Ints;

// potrf of [[4, 2], [2, 5]] with the given layout and uplo; the operand's
// other triangle holds garbage LAPACK must not read.
std::string Cholesky(const std::string& layout, char uplo, const std::string& matrix) {
  return R"(
func.func @main() -> (tensor<2x2xf64>, tensor<i32>) {
  %a = stablehlo.constant dense<)" + matrix + R"(> : tensor<2x2xf64>
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = )" +
         std::to_string(static_cast<int>(uplo)) + R"( : ui8}, operand_layouts = [dense<)" + layout +
         R"(> : tensor<2xindex>], result_layouts = [dense<)" + layout +
         R"(> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)
  return %0#0, %0#1 : tensor<2x2xf64>, tensor<i32>
})";
}

TEST(CustomCallsTest, ColumnMajorLayoutAsJaxlibWritesIt) {
  // Logical lower triangle [[4, .], [2, 5]]; the upper element is garbage.
  auto r = EvalText(Cholesky("[0, 1]", 'L', "[[4.0, 99.0], [2.0, 5.0]]"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // L = [[2, 0], [1, 2]]; LAPACK leaves the upper triangle as it was.
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{2.0, 99.0, 1.0, 2.0}));
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{0}));
}

TEST(CustomCallsTest, RowMajorLayoutHandsLapackTheTranspose) {
  // With row-major buffers LAPACK's "upper" triangle is the logical lower
  // one: uplo 'U' then reads and writes what 'L' does column-major.
  auto r = EvalText(Cholesky("[1, 0]", 'U', "[[4.0, 99.0], [2.0, 5.0]]"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{2.0, 99.0, 1.0, 2.0}));
  // And 'L' with row-major reads the logical upper triangle (99 there: the
  // matrix [[4, 99], [99, 5]] is not positive definite, info = 2).
  auto bad = EvalText(Cholesky("[1, 0]", 'L', "[[4.0, 99.0], [2.0, 5.0]]"));
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_EQ(Ints((*bad)[1].literal()), (std::vector<int64_t>{2}));
}

TEST(CustomCallsTest, NoLayoutsMeansRowMajor) {
  const std::string text = R"(
func.func @main() -> (tensor<2x2xf64>, tensor<i32>) {
  %a = stablehlo.constant dense<[[4.0, 99.0], [2.0, 5.0]]> : tensor<2x2xf64>
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 85 : ui8}} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)
  return %0#0, %0#1 : tensor<2x2xf64>, tensor<i32>
})";
  auto r = EvalText(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{2.0, 99.0, 1.0, 2.0}));
}

TEST(CustomCallsTest, BackendConfigDictionaryWithoutMhloPrefix) {
  // StableHLO's own `backend_config` takes a dictionary for api_version 4.
  std::string text = Cholesky("[0, 1]", 'L', "[[4.0, 99.0], [2.0, 5.0]]");
  text.replace(text.find("mhlo.backend_config"), 19, "api_version = 4 : i32, backend_config");
  auto r = EvalText(text);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{2.0, 99.0, 1.0, 2.0}));
}

TEST(CustomCallsTest, UnknownTargetIsRefusedByName) {
  const std::string text = R"(
func.func @main() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})";
  auto r = EvalText(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("'my_kernel'"), std::string::npos) << r.status().ToString();
  EXPECT_FALSE(IsRegisteredCustomCall("my_kernel"));
  EXPECT_TRUE(IsRegisteredCustomCall("lapack_zheevd_ffi"));
  EXPECT_TRUE(IsRegisteredCustomCall("lapack_cungqr_ffi"));
  EXPECT_FALSE(IsRegisteredCustomCall("lapack_corgqr_ffi"));  // complex Q is ungqr
}

// Compiles ask CheckEvaluable of every op (devices/compile.cc): an unknown
// target is refused there, with its place, before anything runs.
TEST(CustomCallsTest, UnknownTargetIsRefusedBeforeItRuns) {
  auto m = frontend::ParseModule(R"(
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.custom_call @lapack_frobnicate(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = stablehlo.custom_call @lapack_spotrf(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::vector<Status> checks;
  ir::WalkOps((*m)->functions()[0]->body(), [&](const ir::Op& op) {
    if (op.code() == ir::OpCode::kCustomCall) checks.push_back(CheckEvaluable(op));
  });
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].code(), StatusCode::kUnimplemented);
  EXPECT_NE(checks[0].message().find("3:"), std::string::npos) << checks[0].ToString();
  EXPECT_NE(checks[0].message().find("'lapack_frobnicate'"), std::string::npos) << checks[0].ToString();
  EXPECT_NE(checks[0].message().find("jitd implements"), std::string::npos) << checks[0].ToString();
  EXPECT_TRUE(checks[1].ok()) << checks[1].ToString();
  EXPECT_TRUE(CheckCustomCallTarget("Sharding").ok());
  EXPECT_FALSE(CheckCustomCallTarget("xla_ffi_python_cpu_callback").ok());
}

TEST(CustomCallsTest, MissingOrBadAttributeNamesIt) {
  std::string text = Cholesky("[0, 1]", 'L', "[[4.0, 0.0], [2.0, 5.0]]");
  const std::string uplo = "uplo = 76 : ui8";
  text.replace(text.find(uplo), uplo.size(), "lower = 1 : ui8");
  auto r = EvalText(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lapack_dpotrf_ffi"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find("'uplo'"), std::string::npos) << r.status().ToString();

  auto x = EvalText(Cholesky("[0, 1]", 'X', "[[4.0, 0.0], [2.0, 5.0]]"));
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.status().message().find("'L', 'U'"), std::string::npos) << x.status().ToString();
}

TEST(CustomCallsTest, WrongElementTypeOrShapeIsAnError) {
  std::string text = Cholesky("[0, 1]", 'L', "[[4.0, 0.0], [2.0, 5.0]]");
  text.replace(text.find("lapack_dpotrf_ffi"), 17, "lapack_spotrf_ffi");
  auto r = EvalText(text);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("element type f32"), std::string::npos) << r.status().ToString();

  const std::string bad_info = R"(
func.func @main() -> (tensor<2x2xf64>, tensor<2xi32>) {
  %a = stablehlo.constant dense<[[4.0, 0.0], [2.0, 5.0]]> : tensor<2x2xf64>
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xi32>)
  return %0#0, %0#1 : tensor<2x2xf64>, tensor<2xi32>
})";
  auto b = EvalText(bad_info);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("result 1 must have 1 elements"), std::string::npos)
      << b.status().ToString();
}

TEST(CustomCallsTest, LegacyTargetTakesFlagsAsOperands) {
  // jaxlib's pre-FFI potrf: (lower, batch, n, a) -> (a, info).
  auto program = [](int n) {
    return R"(
func.func @main() -> (tensor<2x2xf64>, tensor<i32>) {
  %lower = stablehlo.constant dense<1> : tensor<i32>
  %b = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<)" + std::to_string(n) + R"(> : tensor<i32>
  %a = stablehlo.constant dense<[[4.0, 99.0], [2.0, 5.0]]> : tensor<2x2xf64>
  %0:2 = stablehlo.custom_call @lapack_dpotrf(%lower, %b, %n, %a) {api_version = 2 : i32, operand_layouts = [dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<> : tensor<0xindex>, dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)
  return %0#0, %0#1 : tensor<2x2xf64>, tensor<i32>
})";
  };
  auto r = EvalText(program(2));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{2.0, 99.0, 1.0, 2.0}));
  auto bad = EvalText(program(3));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("operand 2 (n) is 3 but the shapes say 2"), std::string::npos)
      << bad.status().ToString();
}

TEST(CustomCallsTest, DuccFftRefusesMalformedDescriptors) {
  // A root offset past the end of the bytes, then no fields at all (the
  // descriptor must name axes).
  for (const char* bytes : {"[200, 0, 0, 0]", "[8, 0, 0, 0, 4, 0, 4, 0, 4, 0, 0, 0]"}) {
    const std::string text = std::string(R"(
func.func @main() -> tensor<4xcomplex<f32>> {
  %d = stablehlo.constant dense<)") + bytes + R"(> : tensor<)" + (bytes[1] == '2' ? "4" : "12") + R"(xui8>
  %x = stablehlo.constant dense<(1.0, 0.0)> : tensor<4xcomplex<f32>>
  %0 = stablehlo.custom_call @ducc_fft(%d, %x) : (tensor<)" + (bytes[1] == '2' ? "4" : "12") +
                             R"(xui8>, tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  return %0 : tensor<4xcomplex<f32>>
})";
    auto r = EvalText(text);
    ASSERT_FALSE(r.ok()) << bytes;
    EXPECT_NE(r.status().message().find("ducc_fft"), std::string::npos) << r.status().ToString();
  }
}

TEST(CustomCallsTest, AnnotationsAreTheValueAndCallbacksAreRefused) {
  auto program = [](const char* target) {
    return std::string(R"(
func.func @main() -> tensor<2xf32> {
  %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = stablehlo.custom_call @)") + target + R"((%a) {mhlo.sharding = "{replicated}"} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
})";
  };
  for (const char* t : {"Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "MoveToHost"}) {
    auto r = EvalText(program(t));
    ASSERT_TRUE(r.ok()) << t << ": " << r.status().ToString();
    EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{1.0, 2.0})) << t;
  }
  auto cb = EvalText(program("xla_ffi_python_cpu_callback"));
  ASSERT_FALSE(cb.ok());
  EXPECT_EQ(cb.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(cb.status().message().find("calls back into the Python process"), std::string::npos)
      << cb.status().ToString();
}

TEST(CustomCallsTest, ShapePolymorphicExportRefinesThroughShapeOperands) {
  // jax.export with a symbolic batch: potrf's result shapes ride along as
  // operands (indices_of_shape_operands); refinement reads them, the kernel
  // never sees them.
  const std::string text = R"(
func.func public @main(%arg0: tensor<?x2x2xf64>) -> (tensor<?x2x2xf64>, tensor<?xi32>) {
  %b = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x2x2xf64>) -> tensor<i32>
  %b1 = stablehlo.reshape %b : (tensor<i32>) -> tensor<1xi32>
  %c2 = stablehlo.constant dense<2> : tensor<1xi32>
  %shape = stablehlo.concatenate %b1, %c2, %c2, dim = 0 : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%arg0, %shape, %b1) {indices_of_shape_operands = dense<[1, 2]> : tensor<2xi64>, mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<0> : tensor<1xindex>]} : (tensor<?x2x2xf64>, tensor<3xi32>, tensor<1xi32>) -> (tensor<?x2x2xf64>, tensor<?xi32>)
  return %0#0, %0#1 : tensor<?x2x2xf64>, tensor<?xi32>
})";
  auto m = frontend::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Type arg = ir::Type::Tensor(ir::DType::kF64, {3, 2, 2});
  Status refined = passes::RefineShapes(**m, std::span<const ir::Type>(&arg, 1));
  ASSERT_TRUE(refined.ok()) << refined.ToString();
  ASSERT_TRUE(ir::VerifyModule(**m).ok());
  auto lit = ir::Literal::Create(arg);
  ASSERT_TRUE(lit.ok());
  const double a[3][4] = {{4, 2, 2, 5}, {9, 0, 0, 16}, {1, 0, 0, -1}};  // the third is indefinite
  for (int b = 0; b < 3; ++b) {
    for (int k = 0; k < 4; ++k) lit->SetDouble(b * 4 + k, a[b][k]);
  }
  std::vector<RuntimeValue> args;
  args.emplace_back(std::move(lit).value());
  auto r = EvaluateFunction(**m, *(*m)->EntryFunction(), std::move(args));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)[0].literal().type(), arg);
  const std::vector<double> l = Doubles((*r)[0].literal());
  EXPECT_EQ(std::vector<double>(l.begin(), l.begin() + 8), (std::vector<double>{2, 2, 1, 2, 3, 0, 0, 4}));
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{0, 0, 2}));
}

TEST(CustomCallsTest, ShapeAssertion) {
  auto program = [](const char* pred) {
    return std::string(R"(
func.func @main() -> tensor<i32> {
  %p = stablehlo.constant dense<)") + pred + R"(> : tensor<i1>
  %d = stablehlo.constant dense<7> : tensor<i32>
  stablehlo.custom_call @shape_assertion(%p, %d) {api_version = 2 : i32, error_message = "Input shapes do not match: dimension 0 is {0}, expected 8", has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %d : tensor<i32>
})";
  };
  auto ok = EvalText(program("true"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  auto failed = EvalText(program("false"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("dimension 0 is 7, expected 8"), std::string::npos)
      << failed.status().ToString();
}

Status Verify(const std::string& text) {
  auto m = frontend::ParseModule(text);
  if (!m.ok()) return m.status();
  return ir::VerifyModule(**m);
}

TEST(CustomCallsTest, VerifierChecksLayoutsAndAliases) {
  const std::string good = Cholesky("[0, 1]", 'L', "[[4.0, 0.0], [2.0, 5.0]]");
  EXPECT_TRUE(Verify(good).ok()) << Verify(good).ToString();
  std::string not_perm = good;
  not_perm.replace(not_perm.find("dense<[0, 1]>"), 13, "dense<[0, 0]>");
  Status s = Verify(not_perm);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("operand_layouts[0] = [0, 0]"), std::string::npos) << s.ToString();

  std::string alias = good;
  const std::string at = "operand_layouts";
  alias.insert(alias.find(at),
               "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [1], "
               "operand_index = 0, operand_tuple_indices = []>], ");
  s = Verify(alias);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("aliases result 1 of type tensor<i32> with operand 0"), std::string::npos)
      << s.ToString();
}

TEST(CustomCallsTest, VerifierRefusesNonDefaultLayoutMode) {
  auto module = [](const char* mode) {
    return std::string(R"(
func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = ")") + mode +
           R"("}) -> (tensor<2x3xf32> {jax.result_info = "", mhlo.layout_mode = "default"}) {
  return %arg0 : tensor<2x3xf32>
})";
  };
  EXPECT_TRUE(Verify(module("default")).ok());
  EXPECT_TRUE(Verify(module("{1,0}")).ok());
  Status s = Verify(module("{0,1}"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("argument #0 has mhlo.layout_mode \"{0,1}\""), std::string::npos)
      << s.ToString();
}

TEST(CustomCallsTest, JaxExportAttributesPrintBack) {
  const std::string text = R"(module @jit_f attributes {jax.uses_shape_polymorphism = false, mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3xf32> {mhlo.layout_mode = "default", mhlo.sharding = "{replicated}"}) -> (tensor<3x3xf32> {jax.result_info = "result", mhlo.layout_mode = "default"}) {
    %0:2 = stablehlo.custom_call @lapack_spotrf_ffi(%arg0) {api_version = 4 : i32, mhlo.backend_config = {uplo = 76 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>)
    return %0#0 : tensor<3x3xf32>
  }
}
)";
  auto m = frontend::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(ir::VerifyModule(**m).ok());
  const std::string printed = ir::PrintModule(**m);
  for (const char* piece :
       {"dense<[0, 1]> : tensor<2xindex>", "dense<> : tensor<0xindex>", "mhlo.backend_config = {uplo = 76 : ui8}",
        "#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>",
        "jax.uses_shape_polymorphism = false", "mhlo.sharding = \"{replicated}\"", "jax.result_info = \"result\""}) {
    EXPECT_NE(printed.find(piece), std::string::npos) << piece << "\n" << printed;
  }
  auto again = frontend::ParseModule(printed);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ir::PrintModule(**again), printed);
}

}  // namespace
}  // namespace jitd::eval
