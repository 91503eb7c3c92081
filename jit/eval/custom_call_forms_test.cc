// One test per form of the LAPACK custom calls jaxlib has written that
// custom_calls_test.cc does not already cover: trsm with and without its
// alpha operand, geqp3, gesvd, ormqr / unmqr, each on small matrices whose
// answers follow by hand; and jax's dynamic custom calls after shape
// refinement. The real exports are tests/jax_export/jax.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "jit/eval/custom_calls.h"
#include "jit/eval/eval.h"
#include "jit/eval/testing.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "jit/passes/refine_shapes.h"

namespace jitd::eval {
namespace {

using testing::Doubles;
using testing::EvalText;
using testing::Ints;

constexpr char kTrsmConfig[] =
    "mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}";

TEST(CustomCallFormsTest, TrsmTwoOperandsAsJaxlibWritesItToday) {
  // L = [[2, 0], [1, 4]] (column-major, as jaxlib lays it out), b = [[2], [9]]:
  // x = [[1], [2]].
  auto r = EvalText(std::string(R"(
func.func @main() -> tensor<1x2x1xf64> {
  %a = stablehlo.constant dense<[[[2.0, 0.0], [1.0, 4.0]]]> : tensor<1x2x2xf64>
  %b = stablehlo.constant dense<[[[2.0], [9.0]]]> : tensor<1x2x1xf64>
  %x = stablehlo.custom_call @lapack_dtrsm_ffi(%a, %b) {)") + kTrsmConfig + R"(, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 2, 0]> : tensor<3xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]} : (tensor<1x2x2xf64>, tensor<1x2x1xf64>) -> tensor<1x2x1xf64>
  return %x : tensor<1x2x1xf64>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{1.0, 2.0}));
}

TEST(CustomCallFormsTest, TrsmWithAlphaAsJaxlibWroteItBefore) {
  // The same solve scaled by alpha = 2 (the third operand).
  auto r = EvalText(std::string(R"(
func.func @main() -> tensor<1x2x1xf64> {
  %a = stablehlo.constant dense<[[[2.0, 0.0], [1.0, 4.0]]]> : tensor<1x2x2xf64>
  %b = stablehlo.constant dense<[[[2.0], [9.0]]]> : tensor<1x2x1xf64>
  %alpha = stablehlo.constant dense<2.0> : tensor<f64>
  %x = stablehlo.custom_call @lapack_dtrsm_ffi(%a, %b, %alpha) {)") + kTrsmConfig + R"(, operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 2, 0]> : tensor<3xindex>, dense<> : tensor<0xindex>], result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]} : (tensor<1x2x2xf64>, tensor<1x2x1xf64>, tensor<f64>) -> tensor<1x2x1xf64>
  return %x : tensor<1x2x1xf64>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{2.0, 4.0}));
}

TEST(CustomCallFormsTest, TrsmOfOtherArityNamesBothForms) {
  auto r = EvalText(std::string(R"(
func.func @main() -> tensor<2x2xf64> {
  %a = stablehlo.constant dense<1.0> : tensor<2x2xf64>
  %x = stablehlo.custom_call @lapack_dtrsm_ffi(%a) {)") + kTrsmConfig + R"(} : (tensor<2x2xf64>) -> tensor<2x2xf64>
  return %x : tensor<2x2xf64>
})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lapack_dtrsm_ffi: takes 3 operand(s)"), std::string::npos)
      << r.status().message();
}

TEST(CustomCallFormsTest, Geqp3PivotsTheLargestColumnFirst) {
  // Columns of norms 1 and 3: the second moves to the front (jpvt 1-based).
  auto r = EvalText(R"(
func.func @main() -> (tensor<2x2xf64>, tensor<2xi32>, tensor<2xf64>) {
  %a = stablehlo.constant dense<[[1.0, 0.0], [0.0, 3.0]]> : tensor<2x2xf64>
  %p = stablehlo.constant dense<0> : tensor<2xi32>
  %0:3 = stablehlo.custom_call @lapack_dgeqp3_ffi(%a, %p) {mhlo.backend_config = {}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>]} : (tensor<2x2xf64>, tensor<2xi32>) -> (tensor<2x2xf64>, tensor<2xi32>, tensor<2xf64>)
  return %0#0, %0#1, %0#2 : tensor<2x2xf64>, tensor<2xi32>, tensor<2xf64>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{2, 1}));
  const std::vector<double> qr = Doubles((*r)[0].literal());
  EXPECT_NEAR(std::abs(qr[0]), 3.0, 1e-12);  // |R(0, 0)| is the largest column norm
  EXPECT_NEAR(std::abs(qr[3]), 1.0, 1e-12);
}

TEST(CustomCallFormsTest, Geqp3RefusesAFloatPermutation) {
  auto r = EvalText(R"(
func.func @main() -> (tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>) {
  %a = stablehlo.constant dense<1.0> : tensor<2x2xf64>
  %p = stablehlo.constant dense<0.0> : tensor<2xf64>
  %0:3 = stablehlo.custom_call @lapack_dgeqp3_ffi(%a, %p) {mhlo.backend_config = {}} : (tensor<2x2xf64>, tensor<2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>)
  return %0#0, %0#1, %0#2 : tensor<2x2xf64>, tensor<2xf64>, tensor<2xf64>
})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("operand 1 (jpvt) must be i32"), std::string::npos) << r.status().message();
}

TEST(CustomCallFormsTest, GesvdSingularValues) {
  // diag(3, -2): singular values 3, 2 (mode 'N': no vectors).
  auto r = EvalText(R"(
func.func @main() -> (tensor<2xf64>, tensor<i32>) {
  %a = stablehlo.constant dense<[[3.0, 0.0], [0.0, -2.0]]> : tensor<2x2xf64>
  %0:5 = stablehlo.custom_call @lapack_dgesvd_ffi(%a) {mhlo.backend_config = {mode = 78 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xf64>, tensor<2x2xf64>, tensor<2x2xf64>, tensor<i32>)
  return %0#1, %0#4 : tensor<2xf64>, tensor<i32>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<double> sv = Doubles((*r)[0].literal());
  ASSERT_EQ(sv.size(), 2u);
  EXPECT_NEAR(sv[0], 3.0, 1e-14);
  EXPECT_NEAR(sv[1], 2.0, 1e-14);
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{0}));
}

TEST(CustomCallFormsTest, OrmqrAppliesTheReflectors) {
  // One reflector with tau = 0 is the identity; tau = 2 with v = e1 is
  // I - 2 e1 e1^T, which negates c's first row.
  auto run = [](const char* tau) {
    return EvalText(std::string(R"(
func.func @main() -> tensor<2x2xf64> {
  %h = stablehlo.constant dense<[[1.0], [0.0]]> : tensor<2x1xf64>
  %tau = stablehlo.constant dense<[)") + tau + R"(]> : tensor<1xf64>
  %c = stablehlo.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf64>
  %0 = stablehlo.custom_call @lapack_dormqr_ffi(%h, %tau, %c) {mhlo.backend_config = {left = true, transpose = true}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<2x1xf64>, tensor<1xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %0 : tensor<2x2xf64>
})");
  };
  auto same = run("0.0");
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(Doubles((*same)[0].literal()), (std::vector<double>{1, 2, 3, 4}));
  auto flipped = run("2.0");
  ASSERT_TRUE(flipped.ok()) << flipped.status().ToString();
  EXPECT_EQ(Doubles((*flipped)[0].literal()), (std::vector<double>{-1, -2, 3, 4}));
}

TEST(CustomCallFormsTest, NewTargetsAreRegistered) {
  for (const char* t : {"lapack_sgeqp3_ffi", "lapack_zgeqp3_ffi", "lapack_cgesvd_ffi", "lapack_dgesvd_ffi",
                        "lapack_sormqr_ffi", "lapack_cunmqr_ffi", "lapack_ztrsm_ffi", "blas_strsm_ffi"}) {
    EXPECT_TRUE(IsRegisteredCustomCall(t)) << t;
  }
  EXPECT_FALSE(IsRegisteredCustomCall("lapack_cormqr_ffi"));  // complex is unmqr
}

// --- jax's dynamic custom calls, refined -------------------------------------

StatusOr<std::vector<RuntimeValue>> RefineAndRun(const std::string& text, std::vector<ir::Literal> args) {
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> m, frontend::ParseModule(text));
  std::vector<ir::Type> types;
  for (const ir::Literal& l : args) types.push_back(l.type());
  JITD_RETURN_IF_ERROR(passes::RefineShapes(*m, types));
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*m));
  for (const auto& op : m->EntryFunction()->entry()->ops()) {
    if (op->code() == ir::OpCode::kCustomCall) return Internal("a custom call is left after refinement");
  }
  std::vector<RuntimeValue> values;
  for (auto& l : args) values.emplace_back(std::move(l));
  return EvaluateFunction(*m, *m->EntryFunction(), std::move(values));
}

ir::Literal F32Vector(std::vector<double> v) {
  auto lit = ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) lit->SetDouble(static_cast<int64_t>(i), v[i]);
  return std::move(lit).value();
}

TEST(CustomCallFormsTest, DynamicTopKBecomesTopK) {
  // k = n - 2 for an n-vector.
  const std::string text = R"(
func.func @main(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xi32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %k = stablehlo.subtract %n, %two : tensor<i32>
  %0:2 = stablehlo.custom_call @stablehlo.dynamic_top_k(%x, %k) {api_version = 2 : i32} : (tensor<?xf32>, tensor<i32>) -> (tensor<?xf32>, tensor<?xi32>)
  return %0#0, %0#1 : tensor<?xf32>, tensor<?xi32>
})";
  std::vector<ir::Literal> args;
  args.push_back(F32Vector({1, 5, 3, 4, 2}));
  auto r = RefineAndRun(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{5, 4, 3}));
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{1, 3, 2}));
}

TEST(CustomCallFormsTest, DynamicApproxTopKSortsByItsComparator) {
  // The comparator orders by LT, so the "top" 2 are the two smallest.
  const std::string text = R"(
func.func @main(%x: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xi32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %iota = stablehlo.dynamic_iota %n1, dim = 0 : (tensor<1xi32>) -> tensor<?xi32>
  %init = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %init_i = stablehlo.constant dense<-1> : tensor<i32>
  %k = stablehlo.constant dense<2> : tensor<i32>
  %0:2 = stablehlo.custom_call @stablehlo.dynamic_approx_top_k(%x, %iota, %init, %init_i, %k) {called_computations = [@lt], mhlo.backend_config = {aggregate_to_topk = true, is_fallback = true, recall_target = 0.95 : f32, reduction_dim = 0 : i64, reduction_input_size_override = -1 : i64}} : (tensor<?xf32>, tensor<?xi32>, tensor<f32>, tensor<i32>, tensor<i32>) -> (tensor<?xf32>, tensor<?xi32>)
  return %0#0, %0#1 : tensor<?xf32>, tensor<?xi32>
}
func.func private @lt(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
})";
  std::vector<ir::Literal> args;
  args.push_back(F32Vector({4, 1, 3, 0.5}));
  auto r = RefineAndRun(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{0.5, 1}));
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{3, 1}));
}

TEST(CustomCallFormsTest, DynamicRngBitGeneratorTakesItsShapeOperand) {
  const std::string text = R"(
func.func @main(%x: tensor<?xf32>) -> (tensor<2xui64>, tensor<?x2xui32>) {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %n1 = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %two = stablehlo.constant dense<2> : tensor<1xi32>
  %shape = stablehlo.concatenate %n1, %two, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %state = stablehlo.constant dense<[1, 2]> : tensor<2xui64>
  %0:2 = stablehlo.custom_call @stablehlo.dynamic_rng_bit_generator(%state, %shape) {api_version = 2 : i32, rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>} : (tensor<2xui64>, tensor<2xi32>) -> (tensor<2xui64>, tensor<?x2xui32>)
  %1:2 = stablehlo.rng_bit_generator %state, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x2xui32>)
  return %0#0, %0#1 : tensor<2xui64>, tensor<?x2xui32>
})";
  std::vector<ir::Literal> args;
  args.push_back(F32Vector({0, 0, 0}));
  auto r = RefineAndRun(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ((*r)[1].literal().type(), ir::Type::Tensor(ir::DType::kU32, {3, 2}));
  // The same bits as the static op of that shape.
  auto direct = EvalText(R"(
func.func @main() -> (tensor<2xui64>, tensor<3x2xui32>) {
  %state = stablehlo.constant dense<[1, 2]> : tensor<2xui64>
  %1:2 = stablehlo.rng_bit_generator %state, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<3x2xui32>)
  return %1#0, %1#1 : tensor<2xui64>, tensor<3x2xui32>
})");
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  EXPECT_EQ(testing::UInts((*r)[1].literal()), testing::UInts((*direct)[1].literal()));
  EXPECT_EQ(testing::UInts((*r)[0].literal()), testing::UInts((*direct)[0].literal()));
}

TEST(CustomCallFormsTest, DynamicTopKWhoseKIsNotAConstantIsRefusedByName) {
  const std::string text = R"(
func.func @main(%x: tensor<?xf32>, %k: tensor<i32>) -> (tensor<?xf32>, tensor<?xi32>) {
  %0:2 = stablehlo.custom_call @stablehlo.dynamic_top_k(%x, %k) {api_version = 2 : i32} : (tensor<?xf32>, tensor<i32>) -> (tensor<?xf32>, tensor<?xi32>)
  return %0#0, %0#1 : tensor<?xf32>, tensor<?xi32>
})";
  auto m = frontend::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Type types[2] = {ir::Type::Tensor(ir::DType::kF32, {4}), ir::Type::Scalar(ir::DType::kS32)};
  Status s = passes::RefineShapes(**m, types);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("is still dynamic"), std::string::npos) << s.message();
}

TEST(CustomCallFormsTest, EveryRegisteredTargetRunsInAProgramOfTheSuite) {
  // The registry's forms are each exercised end to end by a program of
  // tests/jax_export (hand-written in jaxlib's forms, or exported by JAX in
  // tests/jax_export/jax), which ctest runs on both devices: a target added
  // to the registry without one fails here.
  std::set<std::string> used;
  const std::filesystem::path dir = std::filesystem::path(JITD_SOURCE_DIR) / "tests" / "jax_export";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".mlir") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t at = text.find("custom_call @"); at != std::string::npos; at = text.find("custom_call @", at + 1)) {
      size_t end = at + 13;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' ||
                                   text[end] == '.')) {
        ++end;
      }
      used.insert(text.substr(at + 13, end - at - 13));
    }
  }
  ASSERT_FALSE(used.empty()) << "no programs under " << dir;
  for (const std::string& target : RegisteredCustomCalls()) {
    if (target.rfind("lapack_", 0) != 0 && target.rfind("blas_", 0) != 0 && target != "ducc_fft") continue;
    EXPECT_TRUE(used.count(target)) << target << " has no program in tests/jax_export";
  }
}

TEST(CustomCallFormsTest, StaticApproxTopKLowersToSortAndSlice) {
  const std::string text = R"(
func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  %iota = stablehlo.iota dim = 1 : tensor<2x4xi32>
  %init = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %init_i = stablehlo.constant dense<-1> : tensor<i32>
  %0:2 = stablehlo.custom_call @ApproxTopK(%x, %iota, %init, %init_i) {called_computations = [@gt], mhlo.backend_config = {aggregate_to_topk = true, is_fallback = true, recall_target = 0.95 : f32, reduction_dim = 1 : i64, reduction_input_size_override = -1 : i64, top_k = 2 : i64}} : (tensor<2x4xf32>, tensor<2x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x2xi32>
}
func.func @gt(%a: tensor<f32>, %b: tensor<f32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
  return %0 : tensor<i1>
})";
  auto m = frontend::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(passes::LowerApproxTopK(**m).ok());
  ASSERT_TRUE(ir::VerifyModule(**m).ok()) << ir::VerifyModule(**m).ToString();
  for (const auto& op : (*m)->FindFunction("main")->entry()->ops()) EXPECT_NE(op->code(), ir::OpCode::kCustomCall);
  auto lit = ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2, 4}));
  const double v[8] = {1, 4, 2, 3, -1, -5, 0, 7};
  for (int i = 0; i < 8; ++i) lit->SetDouble(i, v[i]);
  std::vector<RuntimeValue> args;
  args.emplace_back(std::move(lit).value());
  auto r = EvaluateFunction(**m, *(*m)->FindFunction("main"), std::move(args));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Doubles((*r)[0].literal()), (std::vector<double>{4, 3, 7, 0}));
  EXPECT_EQ(Ints((*r)[1].literal()), (std::vector<int64_t>{1, 3, 3, 2}));
}

TEST(CustomCallFormsTest, StaticApproxTopKWithoutItsComparatorNamesIt) {
  auto m = frontend::ParseModule(R"(
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %init_i = stablehlo.constant dense<-1> : tensor<i32>
  %0:2 = stablehlo.custom_call @ApproxTopK(%x, %i, %init, %init_i) {mhlo.backend_config = {reduction_dim = 0 : i64, top_k = 2 : i64}} : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xi32>
})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  Status s = passes::LowerApproxTopK(**m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("@ApproxTopK needs called_computations"), std::string::npos) << s.message();
}

TEST(CustomCallFormsTest, TridiagonalSolvePerturbedOfASingularMatrixIsFinite) {
  // [[1, 1], [1, 1]] is singular: the perturbed solve gives a large, finite
  // x along the null vector [1, -1] (what inverse iteration wants).
  auto r = EvalText(R"(
func.func @main() -> (tensor<1x2x1xf64>, tensor<1x2x1xf64>) {
  %dl = stablehlo.constant dense<[[0.0, 1.0]]> : tensor<1x2xf64>
  %d = stablehlo.constant dense<[[1.0, 1.0]]> : tensor<1x2xf64>
  %du = stablehlo.constant dense<[[1.0, 0.0]]> : tensor<1x2xf64>
  %b = stablehlo.constant dense<[[[1.0], [2.0]]]> : tensor<1x2x1xf64>
  %x = stablehlo.custom_call @tridiagonal_solve_perturbed_ffi(%dl, %d, %du, %b) {mhlo.backend_config = {}} : (tensor<1x2xf64>, tensor<1x2xf64>, tensor<1x2xf64>, tensor<1x2x1xf64>) -> tensor<1x2x1xf64>
  %dr = stablehlo.constant dense<[[0.0, 1.0]]> : tensor<1x2xf64>
  %dd = stablehlo.constant dense<[[4.0, 3.0]]> : tensor<1x2xf64>
  %y = stablehlo.custom_call @tridiagonal_solve_perturbed_ffi(%dr, %dd, %du, %b) {mhlo.backend_config = {}} : (tensor<1x2xf64>, tensor<1x2xf64>, tensor<1x2xf64>, tensor<1x2x1xf64>) -> tensor<1x2x1xf64>
  return %x, %y : tensor<1x2x1xf64>, tensor<1x2x1xf64>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<double> x = Doubles((*r)[0].literal());
  ASSERT_EQ(x.size(), 2u);
  EXPECT_TRUE(std::isfinite(x[0]) && std::isfinite(x[1]));
  EXPECT_GT(std::abs(x[0]), 1e10);              // large: the pivot was perturbed by ~eps
  EXPECT_NEAR(x[0] / x[1], -1.0, 1e-9);         // along the null vector [1, -1]
  // A regular matrix [[4, 1], [1, 3]]: x = [1/11, 7/11].
  const std::vector<double> y = Doubles((*r)[1].literal());
  EXPECT_NEAR(y[0], 1.0 / 11, 1e-15);
  EXPECT_NEAR(y[1], 7.0 / 11, 1e-15);
}

}  // namespace
}  // namespace jitd::eval
