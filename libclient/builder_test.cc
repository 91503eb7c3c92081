// The computation builder through its C API (include/jitd/jitd_builder.h):
// shape inference and errors of every op; every built computation's text
// parses and verifies in jit/frontend and its FlatBuffers module reads into
// the same IR; and computations compiled and run by a real `jitd serve` on
// the interpreter.
//
// The test links the IR and the frontend to check what the library makes;
// libjitd.so itself links neither.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/process.h"
#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jitd/jitd.h"
#include "jitd/jitd_builder.h"

#ifndef JITD_BINARY
#error "JITD_BINARY must name the jitd executable"
#endif

namespace {

// ---- Helpers -------------------------------------------------------------------

// The message of `status` (and frees it); "" for OK.
std::string Take(jitd_status_t* status) {
  std::string m = status == nullptr ? "" : jitd_status_message(status);
  jitd_status_free(status);
  return m;
}

#define ASSERT_OK(expr)                      \
  do {                                       \
    std::string m_ = Take(expr);             \
    ASSERT_EQ(m_, "") << #expr;              \
  } while (0)
#define EXPECT_OK(expr)                      \
  do {                                       \
    std::string m_ = Take(expr);             \
    EXPECT_EQ(m_, "") << #expr;              \
  } while (0)
// Expects INVALID_ARGUMENT whose message contains `needle`.
#define EXPECT_ERROR(expr, needle)                                                   \
  do {                                                                               \
    jitd_status_t* s_ = (expr);                                                      \
    EXPECT_EQ(jitd_status_code(s_), JITD_INVALID_ARGUMENT) << #expr;                 \
    std::string m_ = Take(s_);                                                       \
    EXPECT_NE(m_.find(needle), std::string::npos) << #expr << " said: " << m_;       \
  } while (0)

struct ShapeDeleter {
  void operator()(jitd_shape_t* s) const { jitd_shape_destroy(s); }
};
using ShapePtr = std::unique_ptr<jitd_shape_t, ShapeDeleter>;
struct CompDeleter {
  void operator()(jitd_computation_t* c) const { jitd_computation_destroy(c); }
};
using CompPtr = std::unique_ptr<jitd_computation_t, CompDeleter>;

ShapePtr Array(jitd_dtype_t dtype, std::vector<int64_t> dims) {
  jitd_shape_t* s = nullptr;
  EXPECT_OK(jitd_shape_create_array(dtype, dims.data(), dims.size(), &s));
  return ShapePtr(s);
}

std::string ShapeString(const jitd_shape_t* s) {
  char* text = nullptr;
  EXPECT_OK(jitd_shape_to_string(s, &text));
  std::string out = text == nullptr ? "" : text;
  jitd_string_free(text);
  return out;
}

// Clears the names values carry, so two modules that differ only in names
// print the same.
void StripNames(jitd::ir::Region& region) {
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    jitd::ir::Block& block = region.block(b);
    for (size_t i = 0; i < block.num_args(); ++i) block.arg(i)->set_name("");
    for (const auto& op : block.ops()) {
      op->set_result_groups({});
      for (size_t i = 0; i < op->num_results(); ++i) op->result(i)->set_name("");
      for (size_t r = 0; r < op->num_regions(); ++r) StripNames(op->region(r));
    }
  }
}
std::string PrintStripped(jitd::ir::Module& m) {
  for (const auto& f : m.functions()) StripNames(f->body());
  m.set_name("");
  return jitd::ir::PrintModule(m);
}

// Every op's location ("line:col"), in program order.
void CollectLocations(const jitd::ir::Region& region, std::vector<std::string>& out) {
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    const jitd::ir::Block& block = region.block(b);
    for (const auto& op : block.ops()) {
      out.push_back(std::string(op->name()) + "@" + op->loc().ToString());
      for (size_t r = 0; r < op->num_regions(); ++r) CollectLocations(op->region(r), out);
    }
  }
}
std::vector<std::string> Locations(const jitd::ir::Module& m) {
  std::vector<std::string> out;
  for (const auto& f : m.functions()) CollectLocations(f->body(), out);
  return out;
}

// A builder owning its ops; B.op(...) helpers keep tests short.
class B {
 public:
  explicit B(const char* name = "test") { EXPECT_OK(jitd_builder_create(name, &b_)); }
  ~B() { jitd_builder_destroy(b_); }
  B(const B&) = delete;
  B& operator=(const B&) = delete;
  jitd_builder_t* get() { return b_; }

  jitd_op_t Param(int64_t index, jitd_dtype_t dtype, std::vector<int64_t> dims) {
    ShapePtr s = Array(dtype, std::move(dims));
    jitd_op_t op{0};
    EXPECT_OK(jitd_builder_parameter(b_, index, s.get(), nullptr, &op));
    return op;
  }
  jitd_op_t F32(float v) {
    jitd_op_t op{0};
    EXPECT_OK(jitd_builder_constant_f32(b_, v, &op));
    return op;
  }
  jitd_op_t S32(int32_t v) {
    jitd_op_t op{0};
    EXPECT_OK(jitd_builder_constant_s32(b_, v, &op));
    return op;
  }
  jitd_op_t Unary(jitd_unary_op_t k, jitd_op_t x) {
    jitd_op_t op{0};
    EXPECT_OK(jitd_builder_unary(b_, k, x, &op));
    return op;
  }
  jitd_op_t Binary(jitd_binary_op_t k, jitd_op_t x, jitd_op_t y, std::vector<int64_t> bd = {}) {
    jitd_op_t op{0};
    EXPECT_OK(jitd_builder_binary(b_, k, x, y, bd.data(), bd.size(), &op));
    return op;
  }
  std::string Shape(jitd_op_t op) {
    jitd_shape_t* s = nullptr;
    std::string m = Take(jitd_builder_get_shape(b_, op, &s));
    if (!m.empty()) return "error: " + m;
    ShapePtr owned(s);
    return ShapeString(s);
  }
  // Builds (root = last op unless given) and checks the computation.
  CompPtr Build(jitd_op_t root = {0});

 private:
  jitd_builder_t* b_ = nullptr;
};

// Every computation: the text parses and verifies; the FlatBuffers module
// reads (verified) into the same IR as the text, with each op at the
// location the text gives it (the interpreter seeds stablehlo.rng from it).
void CheckComputation(const jitd_computation_t* c) {
  char* text = nullptr;
  ASSERT_OK(jitd_computation_to_text(c, &text));
  const std::string t = text;
  jitd_string_free(text);
  auto from_text = jitd::frontend::ParseModule(t);
  ASSERT_TRUE(from_text.ok()) << from_text.status().message() << "\n" << t;
  jitd::Status verified = jitd::ir::VerifyModule(**from_text);
  ASSERT_TRUE(verified.ok()) << verified.message() << "\n" << t;
  const uint8_t* data = nullptr;
  size_t size = 0;
  ASSERT_OK(jitd_computation_module(c, &data, &size));
  auto from_fb = jitd::frontend::ModuleFromFlatBuffer({data, size});
  ASSERT_TRUE(from_fb.ok()) << from_fb.status().message() << "\n" << t;
  EXPECT_EQ(Locations(**from_fb), Locations(**from_text)) << t;
  EXPECT_EQ(PrintStripped(**from_fb), PrintStripped(**from_text)) << t;
}

CompPtr B::Build(jitd_op_t root) {
  jitd_computation_t* c = nullptr;
  std::string m = Take(jitd_builder_build(b_, root, &c));
  EXPECT_EQ(m, "");
  if (c != nullptr) CheckComputation(c);
  return CompPtr(c);
}

// A scalar computation (x, y) -> x kind y of `dtype`.
CompPtr ScalarBinary(jitd_binary_op_t kind, jitd_dtype_t dtype = JITD_DTYPE_F32) {
  B b("scalar_op");
  jitd_op_t x = b.Param(0, dtype, {});
  jitd_op_t y = b.Param(1, dtype, {});
  b.Binary(kind, x, y);
  return b.Build();
}

// ---- Shapes, parameters, constants ------------------------------------------------

TEST(BuilderTest, ShapesDescribeThemselves) {
  ShapePtr a = Array(JITD_DTYPE_F32, {2, 3});
  EXPECT_EQ(ShapeString(a.get()), "f32[2,3]");
  EXPECT_EQ(jitd_shape_kind(a.get()), JITD_SHAPE_ARRAY);
  EXPECT_EQ(jitd_shape_rank(a.get()), 2u);
  EXPECT_EQ(jitd_shape_dims(a.get())[1], 3);
  jitd_shape_t* token = nullptr;
  ASSERT_OK(jitd_shape_create_token(&token));
  ShapePtr tok(token);
  const jitd_shape_t* parts[] = {a.get(), tok.get()};
  jitd_shape_t* tuple = nullptr;
  ASSERT_OK(jitd_shape_create_tuple(parts, 2, &tuple));
  ShapePtr t(tuple);
  EXPECT_EQ(ShapeString(t.get()), "(f32[2,3], token)");
  EXPECT_EQ(jitd_shape_tuple_size(t.get()), 2u);
  EXPECT_EQ(jitd_shape_kind(jitd_shape_tuple_element(t.get(), 1)), JITD_SHAPE_TOKEN);
  EXPECT_EQ(jitd_shape_tuple_element(t.get(), 2), nullptr);
  jitd_shape_t* bad = nullptr;
  int64_t neg[] = {-1};
  EXPECT_ERROR(jitd_shape_create_array(JITD_DTYPE_F32, neg, 1, &bad), "negative dimension");
  EXPECT_ERROR(jitd_shape_create_array(static_cast<jitd_dtype_t>(99), nullptr, 0, &bad),
               "invalid element type 99");
  int64_t huge[] = {1 << 30, 1 << 30, 1 << 30};
  EXPECT_ERROR(jitd_shape_create_array(JITD_DTYPE_F32, huge, 3, &bad), "2^40");
  EXPECT_EQ(bad, nullptr);
}

TEST(BuilderTest, ParametersAndConstants) {
  B b;
  jitd_op_t p = b.Param(0, JITD_DTYPE_S32, {4});
  EXPECT_EQ(b.Shape(p), "s32[4]");
  ShapePtr s = Array(JITD_DTYPE_F32, {});
  jitd_op_t op{0};
  EXPECT_ERROR(jitd_builder_parameter(b.get(), 0, s.get(), "again", &op),
               "Parameter: parameter 0 is already defined");
  // Scalars of every element type.
  for (int dt = JITD_DTYPE_PRED; dt <= JITD_DTYPE_F6E3M2FN; ++dt) {
    const uint8_t zeros[16] = {};
    jitd_op_t c{0};
    EXPECT_OK(jitd_builder_constant_scalar(b.get(), static_cast<jitd_dtype_t>(dt), zeros, &c));
    EXPECT_NE(c.id, 0u) << dt;
  }
  const float data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[] = {2, 3};
  jitd_op_t arr{0};
  ASSERT_OK(jitd_builder_constant_array(b.get(), JITD_DTYPE_F32, dims, 2, data, sizeof(data), &arr));
  EXPECT_EQ(b.Shape(arr), "f32[2,3]");
  EXPECT_ERROR(jitd_builder_constant_array(b.get(), JITD_DTYPE_F32, dims, 2, data, 20, &op),
               "Constant: f32[2,3] needs 24 bytes of data, got 20");
  jitd_op_t f{0}, d{0}, i{0}, l{0}, pr{0};
  ASSERT_OK(jitd_builder_constant_f32(b.get(), 1.5f, &f));
  ASSERT_OK(jitd_builder_constant_f64(b.get(), 2.5, &d));
  ASSERT_OK(jitd_builder_constant_s32(b.get(), 7, &i));
  ASSERT_OK(jitd_builder_constant_s64(b.get(), -7, &l));
  ASSERT_OK(jitd_builder_constant_pred(b.get(), 1, &pr));
  EXPECT_EQ(b.Shape(d), "f64[]");
  EXPECT_EQ(b.Shape(pr), "pred[]");
  // The failed ops above put the builder in its error state.
  jitd_computation_t* c = nullptr;
  EXPECT_ERROR(jitd_builder_build(b.get(), arr, &c), "parameter 0 is already defined");
  EXPECT_EQ(c, nullptr);
}

TEST(BuilderTest, ConstantsRoundTripThroughTextAndFlatBuffer) {
  B b("constants");
  const double d[3] = {1.0 / 3, -0.0, 1e300};
  const int64_t dims[] = {3};
  jitd_op_t c1{0}, c2{0};
  ASSERT_OK(jitd_builder_constant_array(b.get(), JITD_DTYPE_F64, dims, 1, d, sizeof(d), &c1));
  const uint8_t preds[3] = {1, 0, 7};
  ASSERT_OK(jitd_builder_constant_array(b.get(), JITD_DTYPE_PRED, dims, 1, preds, 3, &c2));
  jitd_op_t parts[] = {c1, c2};
  jitd_op_t t{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), parts, 2, &t));
  CompPtr c = b.Build();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(ShapeString(jitd_computation_result_shape(c.get())), "(f64[3], pred[3])");
}

// ---- Elementwise --------------------------------------------------------------------

TEST(BuilderTest, EveryUnaryOp) {
  struct Case {
    jitd_unary_op_t op;
    jitd_dtype_t in;
    const char* out;
  };
  const Case cases[] = {
      {JITD_UNARY_NOT, JITD_DTYPE_PRED, "pred[2,3]"},
      {JITD_UNARY_NOT, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_UNARY_ABS, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ABS, JITD_DTYPE_C64, "f32[2,3]"},
      {JITD_UNARY_EXP, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_EXPM1, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_FLOOR, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ROUND, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_CEIL, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_LOG, JITD_DTYPE_F64, "f64[2,3]"},
      {JITD_UNARY_LOG1P, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_SIGN, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_UNARY_COS, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_SIN, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_TANH, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_SQRT, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_RSQRT, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_CBRT, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_SQUARE, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_UNARY_IS_FINITE, JITD_DTYPE_F32, "pred[2,3]"},
      {JITD_UNARY_RECIPROCAL, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_RECIPROCAL, JITD_DTYPE_BF16, "bf16[2,3]"},
      {JITD_UNARY_NEG, JITD_DTYPE_S64, "s64[2,3]"},
      {JITD_UNARY_LOGISTIC, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_REAL, JITD_DTYPE_C128, "f64[2,3]"},
      {JITD_UNARY_IMAG, JITD_DTYPE_C64, "f32[2,3]"},
      {JITD_UNARY_CONJ, JITD_DTYPE_C64, "c64[2,3]"},
      {JITD_UNARY_TAN, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_CLZ, JITD_DTYPE_U32, "u32[2,3]"},
      {JITD_UNARY_POPULATION_COUNT, JITD_DTYPE_S8, "s8[2,3]"},
      {JITD_UNARY_ROUND_NEAREST_EVEN, JITD_DTYPE_F16, "f16[2,3]"},
      {JITD_UNARY_ERF, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ERFC, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ERF_INV, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_LGAMMA, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_DIGAMMA, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_BESSEL_I1E, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ACOS, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ASIN, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ATAN, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ACOSH, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ASINH, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_ATANH, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_COSH, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_UNARY_SINH, JITD_DTYPE_F32, "f32[2,3]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("unary op " + std::to_string(c.op) + " on dtype " + std::to_string(c.in));
    B b("unary");
    jitd_op_t x = b.Param(0, c.in, {2, 3});
    jitd_op_t y = b.Unary(c.op, x);
    EXPECT_EQ(b.Shape(y), c.out);
    b.Build();
  }
  B b;
  jitd_op_t f = b.Param(0, JITD_DTYPE_F32, {2});
  jitd_op_t i = b.Param(1, JITD_DTYPE_S32, {2});
  jitd_op_t op{0};
  EXPECT_ERROR(jitd_builder_unary(b.get(), JITD_UNARY_NOT, f, &op),
               "Not: operand of shape f32[2] must be of a pred or integer element type");
  EXPECT_ERROR(jitd_builder_unary(b.get(), JITD_UNARY_FLOOR, i, &op), "Floor: operand of shape s32[2]");
  EXPECT_ERROR(jitd_builder_unary(b.get(), JITD_UNARY_EXP, i, &op), "Exp:");
  EXPECT_ERROR(jitd_builder_unary(b.get(), static_cast<jitd_unary_op_t>(999), f, &op),
               "unknown unary op 999");
}

TEST(BuilderTest, EveryBinaryOp) {
  struct Case {
    jitd_binary_op_t op;
    jitd_dtype_t in;
    const char* out;
  };
  const Case cases[] = {
      {JITD_BINARY_EQ, JITD_DTYPE_F32, "pred[2,3]"},
      {JITD_BINARY_NE, JITD_DTYPE_S32, "pred[2,3]"},
      {JITD_BINARY_GE, JITD_DTYPE_U8, "pred[2,3]"},
      {JITD_BINARY_GT, JITD_DTYPE_F64, "pred[2,3]"},
      {JITD_BINARY_LT, JITD_DTYPE_S64, "pred[2,3]"},
      {JITD_BINARY_LE, JITD_DTYPE_PRED, "pred[2,3]"},
      {JITD_BINARY_ADD, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_BINARY_SUB, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_BINARY_MUL, JITD_DTYPE_C64, "c64[2,3]"},
      {JITD_BINARY_DIV, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_BINARY_REM, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_BINARY_MAX, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_BINARY_MIN, JITD_DTYPE_U32, "u32[2,3]"},
      {JITD_BINARY_AND, JITD_DTYPE_PRED, "pred[2,3]"},
      {JITD_BINARY_OR, JITD_DTYPE_S8, "s8[2,3]"},
      {JITD_BINARY_XOR, JITD_DTYPE_U64, "u64[2,3]"},
      {JITD_BINARY_POW, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_BINARY_ATAN2, JITD_DTYPE_F32, "f32[2,3]"},
      {JITD_BINARY_SHIFT_LEFT, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_BINARY_SHIFT_RIGHT_ARITHMETIC, JITD_DTYPE_S32, "s32[2,3]"},
      {JITD_BINARY_SHIFT_RIGHT_LOGICAL, JITD_DTYPE_U32, "u32[2,3]"},
      {JITD_BINARY_COMPLEX, JITD_DTYPE_F32, "c64[2,3]"},
      {JITD_BINARY_COMPLEX, JITD_DTYPE_F64, "c128[2,3]"},
      {JITD_BINARY_NEXT_AFTER, JITD_DTYPE_F32, "f32[2,3]"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("binary op " + std::to_string(c.op) + " on dtype " + std::to_string(c.in));
    B b("binary");
    jitd_op_t x = b.Param(0, c.in, {2, 3});
    jitd_op_t y = b.Param(1, c.in, {2, 3});
    EXPECT_EQ(b.Shape(b.Binary(c.op, x, y)), c.out);
    b.Build();
  }
  B b;
  jitd_op_t f = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t i = b.Param(1, JITD_DTYPE_S32, {2, 3});
  jitd_op_t v = b.Param(2, JITD_DTYPE_F32, {4});
  jitd_op_t op{0};
  EXPECT_ERROR(jitd_builder_binary(b.get(), JITD_BINARY_ADD, f, v, nullptr, 0, &op),
               "Add: shapes f32[2,3] and f32[4] are incompatible");
  EXPECT_ERROR(jitd_builder_binary(b.get(), JITD_BINARY_ADD, f, i, nullptr, 0, &op),
               "Add: shapes f32[2,3] and s32[2,3] have different element types");
  EXPECT_ERROR(jitd_builder_binary(b.get(), JITD_BINARY_AND, f, f, nullptr, 0, &op),
               "And: shapes f32[2,3] and f32[2,3]: the element type must be a pred or integer");
  const int64_t bd1[] = {1};
  EXPECT_ERROR(jitd_builder_binary(b.get(), JITD_BINARY_MUL, f, v, bd1, 1, &op),
               "Mul: shapes f32[2,3] and f32[4] are incompatible: dimension 0 of size 4 does "
               "not match dimension 1 of size 3");
  const int64_t bd5[] = {5};
  EXPECT_ERROR(jitd_builder_binary(b.get(), JITD_BINARY_MUL, f, v, bd5, 1, &op),
               "must be increasing dimensions of the higher-rank operand");
}

TEST(BuilderTest, BinaryBroadcasting) {
  B b("broadcasting");
  jitd_op_t m = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t row = b.Param(1, JITD_DTYPE_F32, {3});
  jitd_op_t col = b.Param(2, JITD_DTYPE_F32, {2});
  jitd_op_t one = b.F32(1);
  jitd_op_t degenerate = b.Param(3, JITD_DTYPE_F32, {1, 3});
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_ADD, m, one)), "f32[2,3]");       // implicit scalar
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_SUB, one, m)), "f32[2,3]");
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_ADD, m, row, {1})), "f32[2,3]");  // row vector
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_ADD, col, m, {0})), "f32[2,3]");  // column vector
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_MAX, m, degenerate)), "f32[2,3]");  // size-1 dims
  jitd_op_t a = b.Param(4, JITD_DTYPE_F32, {2, 1});
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_MUL, a, degenerate)), "f32[2,3]");
  EXPECT_EQ(b.Shape(b.Binary(JITD_BINARY_LT, m, one)), "pred[2,3]");
  b.Build();
}

// ---- Shape ops ----------------------------------------------------------------------------

TEST(BuilderTest, ShapeOps) {
  B b("shape_ops");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t op{0};
  ASSERT_OK(jitd_builder_convert_element_type(b.get(), x, JITD_DTYPE_S32, &op));
  EXPECT_EQ(b.Shape(op), "s32[2,3]");
  ASSERT_OK(jitd_builder_bitcast_convert_type(b.get(), x, JITD_DTYPE_U32, &op));
  EXPECT_EQ(b.Shape(op), "u32[2,3]");
  ASSERT_OK(jitd_builder_bitcast_convert_type(b.get(), x, JITD_DTYPE_U8, &op));
  EXPECT_EQ(b.Shape(op), "u8[2,3,4]");
  jitd_op_t bytes = op;
  ASSERT_OK(jitd_builder_bitcast_convert_type(b.get(), bytes, JITD_DTYPE_F32, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  EXPECT_ERROR(jitd_builder_bitcast_convert_type(b.get(), x, JITD_DTYPE_F64, &op),
               "BitcastConvertType: bitcasting f32[2,3] to the wider f64 needs a last dimension of 2");
  const int64_t sizes[] = {4};
  ASSERT_OK(jitd_builder_broadcast(b.get(), x, sizes, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[4,2,3]");
  const int64_t out_dims[] = {2, 5, 3}, bd[] = {0, 2};
  ASSERT_OK(jitd_builder_broadcast_in_dim(b.get(), x, out_dims, 3, bd, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,5,3]");
  const int64_t bad_bd[] = {1, 2};
  EXPECT_ERROR(jitd_builder_broadcast_in_dim(b.get(), x, out_dims, 3, bad_bd, 2, &op),
               "BroadcastInDim: operand f32[2,3] dimension 0 cannot broadcast to dimension 1");
  const int64_t new_sizes[] = {3, 2};
  ASSERT_OK(jitd_builder_reshape(b.get(), x, nullptr, 0, new_sizes, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[3,2]");
  const int64_t order[] = {1, 0}, flat[] = {6};
  ASSERT_OK(jitd_builder_reshape(b.get(), x, order, 2, flat, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[6]");
  const int64_t seven[] = {7};
  EXPECT_ERROR(jitd_builder_reshape(b.get(), x, nullptr, 0, seven, 1, &op),
               "Reshape: cannot reshape f32[2,3] (6 elements) to f32[7] (7 elements)");
  ASSERT_OK(jitd_builder_transpose(b.get(), x, order, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[3,2]");
  const int64_t dup[] = {0, 0};
  EXPECT_ERROR(jitd_builder_transpose(b.get(), x, dup, 2, &op), "appears twice");
  const int64_t rev[] = {1};
  ASSERT_OK(jitd_builder_rev(b.get(), x, rev, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  const int64_t start[] = {0, 1}, limit[] = {2, 3}, strides[] = {1, 2};
  ASSERT_OK(jitd_builder_slice(b.get(), x, start, limit, strides, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,1]");
  const int64_t big_limit[] = {2, 4};
  EXPECT_ERROR(jitd_builder_slice(b.get(), x, start, big_limit, nullptr, 2, &op),
               "Slice: dimension 1: [1:4:1] is not within f32[2,3]");
  ASSERT_OK(jitd_builder_slice_in_dim(b.get(), x, 1, 3, 1, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,2]");
  jitd_op_t i0 = b.S32(0), i1 = b.S32(1);
  jitd_op_t idx[] = {i0, i1};
  const int64_t slice_sizes[] = {1, 2};
  ASSERT_OK(jitd_builder_dynamic_slice(b.get(), x, idx, 2, slice_sizes, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[1,2]");
  jitd_op_t update = op;
  ASSERT_OK(jitd_builder_dynamic_update_slice(b.get(), x, update, idx, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  EXPECT_ERROR(jitd_builder_dynamic_slice(b.get(), x, idx, 1, slice_sizes, 2, &op),
               "DynamicSlice: needs 2 start indices, got 1");
  jitd_op_t parts[] = {x, x, x};
  ASSERT_OK(jitd_builder_concatenate(b.get(), parts, 3, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,9]");
  jitd_op_t mixed[] = {x, update};
  EXPECT_ERROR(jitd_builder_concatenate(b.get(), mixed, 2, 0, &op),
               "ConcatInDim: shapes f32[2,3] and f32[1,2] cannot be concatenated in dimension 0");
  jitd_op_t zero = b.F32(0);
  const int64_t lo[] = {1, -1}, hi[] = {0, 2}, in[] = {1, 0};
  ASSERT_OK(jitd_builder_pad(b.get(), x, zero, lo, hi, in, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[4,4]");
  EXPECT_ERROR(jitd_builder_pad(b.get(), x, i0, lo, hi, in, 2, &op),
               "Pad: padding value s32[] must be a scalar of f32[2,3]'s element type");
  ASSERT_OK(jitd_builder_iota(b.get(), JITD_DTYPE_S32, 5, &op));
  EXPECT_EQ(b.Shape(op), "s32[5]");
  ShapePtr iota_shape = Array(JITD_DTYPE_F32, {2, 4});
  ASSERT_OK(jitd_builder_broadcasted_iota(b.get(), iota_shape.get(), 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,4]");
  jitd_op_t pred = b.Binary(JITD_BINARY_GT, x, zero);
  ASSERT_OK(jitd_builder_select(b.get(), pred, x, x, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  EXPECT_ERROR(jitd_builder_select(b.get(), x, x, x, &op), "Select: pred f32[2,3] must be a pred");
  jitd_op_t one = b.F32(1);
  ASSERT_OK(jitd_builder_clamp(b.get(), zero, x, one, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  EXPECT_ERROR(jitd_builder_clamp(b.get(), i0, x, one, &op), "Clamp: min s32[]");
  jitd_computation_t* c = nullptr;
  EXPECT_ERROR(jitd_builder_build(b.get(), op, &c), "BitcastConvertType");  // the first error
}

TEST(BuilderTest, ShapeOpsBuildValidModules) {
  B b("valid_shape_ops");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t op{0};
  std::vector<jitd_op_t> outs;
  ASSERT_OK(jitd_builder_convert_element_type(b.get(), x, JITD_DTYPE_F64, &op));
  outs.push_back(op);
  ASSERT_OK(jitd_builder_bitcast_convert_type(b.get(), x, JITD_DTYPE_U8, &op));
  outs.push_back(op);
  const int64_t sizes[] = {4};
  ASSERT_OK(jitd_builder_broadcast(b.get(), x, sizes, 1, &op));
  outs.push_back(op);
  const int64_t order[] = {1, 0}, flat[] = {6};
  ASSERT_OK(jitd_builder_reshape(b.get(), x, order, 2, flat, 1, &op));
  outs.push_back(op);
  const int64_t rev[] = {0, 1};
  ASSERT_OK(jitd_builder_rev(b.get(), x, rev, 2, &op));
  outs.push_back(op);
  const int64_t start[] = {0, 1}, limit[] = {2, 3};
  ASSERT_OK(jitd_builder_slice(b.get(), x, start, limit, nullptr, 2, &op));
  outs.push_back(op);
  jitd_op_t i0 = b.S32(0), i1 = b.S32(1);
  jitd_op_t idx[] = {i0, i1};
  const int64_t slice_sizes[] = {1, 2};
  ASSERT_OK(jitd_builder_dynamic_slice(b.get(), x, idx, 2, slice_sizes, 2, &op));
  outs.push_back(op);
  ASSERT_OK(jitd_builder_dynamic_update_slice(b.get(), x, op, idx, 2, &op));
  outs.push_back(op);
  jitd_op_t parts[] = {x, x};
  ASSERT_OK(jitd_builder_concatenate(b.get(), parts, 2, 0, &op));
  outs.push_back(op);
  jitd_op_t zero = b.F32(0);
  const int64_t lo[] = {1, 0}, hi[] = {0, 2}, in[] = {1, 0};
  ASSERT_OK(jitd_builder_pad(b.get(), x, zero, lo, hi, in, 2, &op));
  outs.push_back(op);
  ASSERT_OK(jitd_builder_iota(b.get(), JITD_DTYPE_S32, 5, &op));
  outs.push_back(op);
  jitd_op_t pred = b.Binary(JITD_BINARY_GT, x, zero);
  ASSERT_OK(jitd_builder_select(b.get(), pred, x, x, &op));
  outs.push_back(op);
  jitd_op_t one = b.F32(1);
  ASSERT_OK(jitd_builder_clamp(b.get(), zero, x, one, &op));
  outs.push_back(op);
  jitd_op_t t{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), outs.data(), outs.size(), &t));
  CompPtr c = b.Build();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(jitd_computation_num_parameters(c.get()), 1u);
  EXPECT_EQ(jitd_shape_tuple_size(jitd_computation_result_shape(c.get())), outs.size());
}

// ---- Linear algebra ----------------------------------------------------------------------

TEST(BuilderTest, DotAndConv) {
  B b("linalg");
  jitd_op_t m = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t n = b.Param(1, JITD_DTYPE_F32, {3, 4});
  jitd_op_t v = b.Param(2, JITD_DTYPE_F32, {3});
  jitd_op_t op{0};
  ASSERT_OK(jitd_builder_dot(b.get(), m, n, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,4]");
  ASSERT_OK(jitd_builder_dot(b.get(), m, v, &op));
  EXPECT_EQ(b.Shape(op), "f32[2]");
  ASSERT_OK(jitd_builder_dot(b.get(), v, v, &op));
  EXPECT_EQ(b.Shape(op), "f32[]");
  EXPECT_ERROR(jitd_builder_dot(b.get(), n, m, &op),
               "DotGeneral: shapes f32[3,4] and f32[2,3] are incompatible: contracting dimension "
               "1 of size 4 does not match dimension 0 of size 2");
  jitd_op_t bl = b.Param(3, JITD_DTYPE_F32, {5, 2, 3});
  jitd_op_t br = b.Param(4, JITD_DTYPE_F32, {5, 3, 7});
  const int64_t lc[] = {2}, rc[] = {1}, lb[] = {0}, rb[] = {0};
  jitd_dot_dimension_numbers_t dn = {lc, 1, rc, 1, lb, 1, rb, 1};
  ASSERT_OK(jitd_builder_dot_general(b.get(), bl, br, &dn, &op));
  EXPECT_EQ(b.Shape(op), "f32[5,2,7]");
  // NCHW input, OIHW kernel.
  jitd_op_t img = b.Param(5, JITD_DTYPE_F32, {1, 2, 5, 5});
  jitd_op_t k = b.Param(6, JITD_DTYPE_F32, {4, 2, 3, 3});
  const int64_t strides[] = {1, 1};
  ASSERT_OK(jitd_builder_conv(b.get(), img, k, strides, 2, JITD_PADDING_SAME, &op));
  EXPECT_EQ(b.Shape(op), "f32[1,4,5,5]");
  ASSERT_OK(jitd_builder_conv(b.get(), img, k, strides, 2, JITD_PADDING_VALID, &op));
  EXPECT_EQ(b.Shape(op), "f32[1,4,3,3]");
  // NHWC / HWIO with strides and dilation.
  jitd_op_t nhwc = b.Param(7, JITD_DTYPE_F32, {2, 8, 8, 3});
  jitd_op_t hwio = b.Param(8, JITD_DTYPE_F32, {3, 3, 3, 6});
  const int64_t sp_in[] = {1, 2}, sp_k[] = {0, 1}, sp_out[] = {1, 2};
  const int64_t ws[] = {2, 2}, plo[] = {1, 1}, phi[] = {1, 1}, rd[] = {2, 1};
  jitd_conv_options_t co = {};
  co.struct_size = JITD_CONV_OPTIONS_STRUCT_SIZE;
  co.num_spatial_dimensions = 2;
  co.window_strides = ws;
  co.padding_low = plo;
  co.padding_high = phi;
  co.rhs_dilation = rd;
  co.input_batch_dimension = 0;
  co.input_feature_dimension = 3;
  co.input_spatial_dimensions = sp_in;
  co.kernel_input_feature_dimension = 2;
  co.kernel_output_feature_dimension = 3;
  co.kernel_spatial_dimensions = sp_k;
  co.output_batch_dimension = 0;
  co.output_feature_dimension = 3;
  co.output_spatial_dimensions = sp_out;
  ASSERT_OK(jitd_builder_conv_general_dilated(b.get(), nhwc, hwio, &co, &op));
  // H: padded 10, dilated window 5 -> (10-5)/2+1 = 3; W: padded 10, window 3 -> 4.
  EXPECT_EQ(b.Shape(op), "f32[2,3,4,6]");
  co.feature_group_count = 2;
  EXPECT_ERROR(jitd_builder_conv_general_dilated(b.get(), nhwc, hwio, &co, &op),
               "ConvGeneralDilated: input f32[2,8,8,3] and kernel f32[3,3,3,6]: input features 3 "
               "must equal kernel input features 3 x feature_group_count 2");
  int64_t low[2], high[2];
  const int64_t in_dims[] = {5, 6}, win[] = {3, 3}, st[] = {2, 2};
  ASSERT_OK(jitd_padding_for_type(JITD_PADDING_SAME, in_dims, win, st, 2, low, high));
  EXPECT_EQ(low[0], 1);
  EXPECT_EQ(high[0], 1);
  EXPECT_EQ(low[1], 0);
  EXPECT_EQ(high[1], 1);
}

TEST(BuilderTest, LinalgBuildsValidModules) {
  B b("linalg_valid");
  jitd_op_t m = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t n = b.Param(1, JITD_DTYPE_F32, {3, 4});
  jitd_op_t img = b.Param(2, JITD_DTYPE_F32, {1, 2, 5, 5});
  jitd_op_t k = b.Param(3, JITD_DTYPE_F32, {4, 2, 3, 3});
  jitd_op_t d{0}, c{0};
  ASSERT_OK(jitd_builder_dot(b.get(), m, n, &d));
  const int64_t strides[] = {2, 1};
  ASSERT_OK(jitd_builder_conv(b.get(), img, k, strides, 2, JITD_PADDING_SAME, &c));
  jitd_op_t parts[] = {d, c};
  jitd_op_t t{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), parts, 2, &t));
  b.Build();
}

// ---- Embedded computations ------------------------------------------------------------------

TEST(BuilderTest, ReduceReduceWindowMapSort) {
  CompPtr add = ScalarBinary(JITD_BINARY_ADD);
  CompPtr max = ScalarBinary(JITD_BINARY_MAX);
  CompPtr add_s32 = ScalarBinary(JITD_BINARY_ADD, JITD_DTYPE_S32);
  ASSERT_NE(add, nullptr);
  B b("embedded");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t zero = b.F32(0);
  jitd_op_t op{0};
  const int64_t dim1[] = {1};
  ASSERT_OK(jitd_builder_reduce(b.get(), &x, &zero, 1, add.get(), dim1, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[2]");
  EXPECT_ERROR(jitd_builder_reduce(b.get(), &x, &zero, 1, add_s32.get(), dim1, 1, &op),
               "Reduce: reducer computation 'scalar_op' has signature (s32[], s32[]) -> (s32[]), "
               "expected (f32[], f32[]) -> (f32[])");
  const int64_t dim5[] = {5};
  EXPECT_ERROR(jitd_builder_reduce(b.get(), &x, &zero, 1, add.get(), dim5, 1, &op),
               "Reduce: dimensions [5]: dimension 5 is out of range for rank 2");
  const int64_t window[] = {1, 2}, wstrides[] = {1, 1}, plo[] = {0, 0}, phi[] = {0, 1};
  ASSERT_OK(jitd_builder_reduce_window(b.get(), &x, &zero, 1, max.get(), window, wstrides, nullptr,
                                       nullptr, plo, phi, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  const int64_t dims01[] = {0, 1};
  jitd_op_t xs[] = {x, x};
  ASSERT_OK(jitd_builder_map(b.get(), xs, 2, add.get(), dims01, 2, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  EXPECT_ERROR(jitd_builder_map(b.get(), &x, 1, add.get(), dims01, 2, &op),
               "Map: computation 'scalar_op' has signature (f32[], f32[]) -> (f32[]), expected "
               "(f32[]) -> (one scalar)");
  ASSERT_OK(jitd_builder_sort(b.get(), &x, 1, -1, nullptr, 1, &op));
  EXPECT_EQ(b.Shape(op), "f32[2,3]");
  // Sort with keys and values by a comparator of (k_lhs, k_rhs, v_lhs, v_rhs).
  B cmp("greater");
  jitd_op_t a = cmp.Param(0, JITD_DTYPE_F32, {});
  jitd_op_t c = cmp.Param(1, JITD_DTYPE_F32, {});
  cmp.Param(2, JITD_DTYPE_S32, {});
  cmp.Param(3, JITD_DTYPE_S32, {});
  cmp.Binary(JITD_BINARY_GT, a, c);
  CompPtr greater = cmp.Build();
  jitd_op_t iota{0};
  const int64_t iota_dims[] = {2, 3};
  ShapePtr is = Array(JITD_DTYPE_S32, {2, 3});
  ASSERT_OK(jitd_builder_broadcasted_iota(b.get(), is.get(), 1, &iota));
  jitd_op_t kv[] = {x, iota};
  ASSERT_OK(jitd_builder_sort(b.get(), kv, 2, 1, greater.get(), 0, &op));
  EXPECT_EQ(b.Shape(op), "(f32[2,3], s32[2,3])");
  (void)iota_dims;
  EXPECT_ERROR(jitd_builder_sort(b.get(), &x, 1, 1, greater.get(), 0, &op),
               "Sort: comparator computation 'greater' has signature");
  // Variadic reduce: (max, argmax) style, returning a tuple.
  B arg("argmax");
  jitd_op_t av = arg.Param(0, JITD_DTYPE_F32, {});
  jitd_op_t ai = arg.Param(1, JITD_DTYPE_S32, {});
  jitd_op_t bv = arg.Param(2, JITD_DTYPE_F32, {});
  jitd_op_t bi = arg.Param(3, JITD_DTYPE_S32, {});
  jitd_op_t gt = arg.Binary(JITD_BINARY_GT, av, bv);
  jitd_op_t sv{0}, si{0};
  ASSERT_OK(jitd_builder_select(arg.get(), gt, av, bv, &sv));
  ASSERT_OK(jitd_builder_select(arg.get(), gt, ai, bi, &si));
  jitd_op_t pair[] = {sv, si};
  jitd_op_t tp{0};
  ASSERT_OK(jitd_builder_tuple(arg.get(), pair, 2, &tp));
  CompPtr argmax = arg.Build();
  jitd_op_t ninf = b.F32(-INFINITY), izero = b.S32(0);
  jitd_op_t inits[] = {ninf, izero};
  ASSERT_OK(jitd_builder_reduce(b.get(), kv, inits, 2, argmax.get(), dim1, 1, &op));
  EXPECT_EQ(b.Shape(op), "(f32[2], s32[2])");
  jitd_op_t first{0};
  ASSERT_OK(jitd_builder_get_tuple_element(b.get(), op, 1, &first));
  EXPECT_EQ(b.Shape(first), "s32[2]");
}

TEST(BuilderTest, EmbeddedOpsBuildValidModules) {
  CompPtr add = ScalarBinary(JITD_BINARY_ADD);
  CompPtr max = ScalarBinary(JITD_BINARY_MAX);
  B b("embedded_valid");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {2, 3});
  jitd_op_t zero = b.F32(0);
  std::vector<jitd_op_t> outs;
  jitd_op_t op{0};
  const int64_t dim1[] = {1};
  ASSERT_OK(jitd_builder_reduce(b.get(), &x, &zero, 1, add.get(), dim1, 1, &op));
  outs.push_back(op);
  const int64_t window[] = {2, 2}, ws[] = {1, 1};
  ASSERT_OK(jitd_builder_reduce_window(b.get(), &x, &zero, 1, max.get(), window, ws, nullptr,
                                       nullptr, nullptr, nullptr, 2, &op));
  outs.push_back(op);
  const int64_t dims01[] = {0, 1};
  jitd_op_t xs[] = {x, x};
  ASSERT_OK(jitd_builder_map(b.get(), xs, 2, add.get(), dims01, 2, &op));
  outs.push_back(op);
  ASSERT_OK(jitd_builder_sort(b.get(), &x, 1, 0, nullptr, 1, &op));
  outs.push_back(op);
  jitd_op_t t{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), outs.data(), outs.size(), &t));
  b.Build();
}

// A while loop (i, acc) -> (i + 1, acc * 2) while i < 5.
struct Loop {
  CompPtr cond, body;
};
Loop MakeLoop() {
  Loop l;
  {
    B c("cond");
    ShapePtr s32 = Array(JITD_DTYPE_S32, {}), f32 = Array(JITD_DTYPE_F32, {3});
    const jitd_shape_t* parts[] = {s32.get(), f32.get()};
    jitd_shape_t* ts = nullptr;
    EXPECT_OK(jitd_shape_create_tuple(parts, 2, &ts));
    ShapePtr state(ts);
    jitd_op_t p{0}, i{0};
    EXPECT_OK(jitd_builder_parameter(c.get(), 0, state.get(), "state", &p));
    EXPECT_OK(jitd_builder_get_tuple_element(c.get(), p, 0, &i));
    c.Binary(JITD_BINARY_LT, i, c.S32(5));
    l.cond = c.Build();
  }
  {
    B b("body");
    ShapePtr s32 = Array(JITD_DTYPE_S32, {}), f32 = Array(JITD_DTYPE_F32, {3});
    const jitd_shape_t* parts[] = {s32.get(), f32.get()};
    jitd_shape_t* ts = nullptr;
    EXPECT_OK(jitd_shape_create_tuple(parts, 2, &ts));
    ShapePtr state(ts);
    jitd_op_t p{0}, i{0}, acc{0};
    EXPECT_OK(jitd_builder_parameter(b.get(), 0, state.get(), "state", &p));
    EXPECT_OK(jitd_builder_get_tuple_element(b.get(), p, 0, &i));
    EXPECT_OK(jitd_builder_get_tuple_element(b.get(), p, 1, &acc));
    jitd_op_t next[] = {b.Binary(JITD_BINARY_ADD, i, b.S32(1)),
                        b.Binary(JITD_BINARY_MUL, acc, b.F32(2))};
    jitd_op_t t{0};
    EXPECT_OK(jitd_builder_tuple(b.get(), next, 2, &t));
    l.body = b.Build();
  }
  return l;
}

TEST(BuilderTest, WhileAndConditional) {
  Loop loop = MakeLoop();
  ASSERT_NE(loop.cond, nullptr);
  ASSERT_NE(loop.body, nullptr);
  B b("control");
  jitd_op_t v = b.Param(0, JITD_DTYPE_F32, {3});
  jitd_op_t start[] = {b.S32(0), v};
  jitd_op_t init{0}, op{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), start, 2, &init));
  ASSERT_OK(jitd_builder_while(b.get(), loop.cond.get(), loop.body.get(), init, &op));
  EXPECT_EQ(b.Shape(op), "(s32[], f32[3])");
  B bad("bad");
  jitd_op_t bv = bad.Param(0, JITD_DTYPE_F32, {3});
  EXPECT_ERROR(jitd_builder_while(bad.get(), loop.cond.get(), loop.body.get(), bv, &op),
               "While: condition computation 'cond' has signature ((s32[], f32[3])) -> (pred[]), "
               "expected (f32[3]) -> (pred[])");
  // Conditional on a predicate: negate or exponentiate.
  B t("neg");
  t.Unary(JITD_UNARY_NEG, t.Param(0, JITD_DTYPE_F32, {3}));
  CompPtr neg = t.Build();
  B f("exp");
  f.Unary(JITD_UNARY_EXP, f.Param(0, JITD_DTYPE_F32, {3}));
  CompPtr exp = f.Build();
  jitd_op_t pred{0};
  ASSERT_OK(jitd_builder_constant_pred(b.get(), 1, &pred));
  ASSERT_OK(jitd_builder_conditional(b.get(), pred, v, neg.get(), v, exp.get(), &op));
  EXPECT_EQ(b.Shape(op), "f32[3]");
  EXPECT_ERROR(jitd_builder_conditional(bad.get(), bv, bv, neg.get(), bv, exp.get(), &op),
               "Conditional: predicate f32[3] must be a pred scalar");
  const jitd_computation_t* branches[] = {neg.get(), exp.get(), neg.get()};
  jitd_op_t operands[] = {v, v, v};
  ASSERT_OK(jitd_builder_conditional_indexed(b.get(), b.S32(1), branches, operands, 3, &op));
  EXPECT_EQ(b.Shape(op), "f32[3]");
  b.Build();
}

TEST(BuilderTest, NestedEmbeddingCapturesAcrossRegions) {
  // A conditional inside a computation that is then the body of a map,
  // inside a reduce's computation: captures must follow the inlining.
  B t("double");
  jitd_op_t tx = t.Param(0, JITD_DTYPE_F32, {});
  t.Binary(JITD_BINARY_MUL, tx, t.F32(2));
  CompPtr dbl = t.Build();
  B f("half");
  jitd_op_t fx = f.Param(0, JITD_DTYPE_F32, {});
  f.Binary(JITD_BINARY_DIV, fx, f.F32(2));
  CompPtr half = f.Build();
  B m("scale");
  jitd_op_t mx = m.Param(0, JITD_DTYPE_F32, {});
  jitd_op_t big = m.Binary(JITD_BINARY_GT, mx, m.F32(1));
  jitd_op_t op{0};
  ASSERT_OK(jitd_builder_conditional(m.get(), big, mx, half.get(), mx, dbl.get(), &op));
  CompPtr scale = m.Build();
  ASSERT_NE(scale, nullptr);
  B b("outer");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {4});
  const int64_t dims[] = {0};
  ASSERT_OK(jitd_builder_map(b.get(), &x, 1, scale.get(), dims, 1, &op));
  b.Build();
}

// ---- Tuples, gather / scatter, tokens, infeed / outfeed ----------------------------------

TEST(BuilderTest, GatherScatter) {
  CompPtr add = ScalarBinary(JITD_BINARY_ADD);
  B b("gather_scatter");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {3, 4});
  jitd_op_t idx = b.Param(1, JITD_DTYPE_S32, {2, 1});
  const int64_t offset[] = {1}, collapsed[] = {0}, start_map[] = {0};
  jitd_gather_dimension_numbers_t gd = {offset, 1, collapsed, 1, start_map, 1, 1};
  const int64_t slice[] = {1, 4};
  jitd_op_t g{0};
  ASSERT_OK(jitd_builder_gather(b.get(), x, idx, &gd, slice, 2, 0, &g));
  EXPECT_EQ(b.Shape(g), "f32[2,4]");
  const int64_t bad_slice[] = {2, 4};
  jitd_op_t op{0};
  EXPECT_ERROR(jitd_builder_gather(b.get(), x, idx, &gd, bad_slice, 2, 0, &op),
               "Gather: collapsed dimension 0 has slice size 2");
  const int64_t uwd[] = {1}, iwd[] = {0}, sdod[] = {0};
  jitd_scatter_dimension_numbers_t sd = {uwd, 1, iwd, 1, sdod, 1, 1};
  ASSERT_OK(jitd_builder_scatter(b.get(), x, idx, g, add.get(), &sd, 0, 0, &op));
  EXPECT_EQ(b.Shape(op), "f32[3,4]");
  jitd_op_t wrong = b.Param(2, JITD_DTYPE_F32, {2, 5, 1});
  EXPECT_ERROR(jitd_builder_scatter(b.get(), x, idx, wrong, add.get(), &sd, 0, 0, &op),
               "Scatter: updates f32[2,5,1] do not match operand f32[3,4]");
}

TEST(BuilderTest, GatherScatterBuildValidModules) {
  CompPtr add = ScalarBinary(JITD_BINARY_ADD);
  B b("gather_scatter_valid");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {3, 4});
  jitd_op_t idx = b.Param(1, JITD_DTYPE_S32, {2, 1});
  const int64_t offset[] = {1}, collapsed[] = {0}, start_map[] = {0};
  jitd_gather_dimension_numbers_t gd = {offset, 1, collapsed, 1, start_map, 1, 1};
  const int64_t slice[] = {1, 4};
  jitd_op_t g{0}, s{0};
  ASSERT_OK(jitd_builder_gather(b.get(), x, idx, &gd, slice, 2, 0, &g));
  const int64_t uwd[] = {1}, iwd[] = {0}, sdod[] = {0};
  jitd_scatter_dimension_numbers_t sd = {uwd, 1, iwd, 1, sdod, 1, 1};
  ASSERT_OK(jitd_builder_scatter(b.get(), x, idx, g, add.get(), &sd, 0, 0, &s));
  b.Build();
}

TEST(BuilderTest, TuplesTokensInfeedOutfeed) {
  B b("feeds");
  ShapePtr vec = Array(JITD_DTYPE_F32, {3});
  ShapePtr scalar = Array(JITD_DTYPE_S32, {});
  const jitd_shape_t* parts[] = {vec.get(), scalar.get()};
  jitd_shape_t* ts = nullptr;
  ASSERT_OK(jitd_shape_create_tuple(parts, 2, &ts));
  ShapePtr pair(ts);
  jitd_op_t v{0}, tok{0}, got{0}, op{0};
  ASSERT_OK(jitd_builder_infeed(b.get(), vec.get(), nullptr, &v));
  EXPECT_EQ(b.Shape(v), "f32[3]");
  ASSERT_OK(jitd_builder_infeed(b.get(), pair.get(), "cfg", &got));
  EXPECT_EQ(b.Shape(got), "(f32[3], s32[])");
  jitd_op_t doubled = b.Binary(JITD_BINARY_ADD, v, v);
  ASSERT_OK(jitd_builder_outfeed(b.get(), doubled, nullptr, &op));
  EXPECT_EQ(b.Shape(op), "token");
  ASSERT_OK(jitd_builder_create_token(b.get(), &tok));
  jitd_op_t toks[] = {tok, op};
  ASSERT_OK(jitd_builder_after_all(b.get(), toks, 2, &tok));
  ASSERT_OK(jitd_builder_infeed_with_token(b.get(), tok, vec.get(), nullptr, &op));
  EXPECT_EQ(b.Shape(op), "(f32[3], token)");
  jitd_op_t t2{0};
  ASSERT_OK(jitd_builder_get_tuple_element(b.get(), op, 1, &t2));
  ASSERT_OK(jitd_builder_outfeed_with_token(b.get(), got, t2, "out", &op));
  EXPECT_ERROR(jitd_builder_outfeed_with_token(b.get(), got, v, nullptr, &op),
               "Outfeed: token operand f32[3] is not a token");
  EXPECT_ERROR(jitd_builder_get_tuple_element(b.get(), got, 2, &op),
               "GetTupleElement: index 2 is out of range for (f32[3], s32[])");
  jitd_computation_t* c = nullptr;
  EXPECT_ERROR(jitd_builder_build(b.get(), doubled, &c), "Outfeed: token operand");
}

TEST(BuilderTest, InfeedOutfeedBuildValidModules) {
  B b("feeds_valid");
  ShapePtr vec = Array(JITD_DTYPE_F32, {3});
  jitd_op_t v{0}, op{0};
  ASSERT_OK(jitd_builder_infeed(b.get(), vec.get(), nullptr, &v));
  jitd_op_t doubled = b.Binary(JITD_BINARY_ADD, v, v);
  ASSERT_OK(jitd_builder_outfeed(b.get(), doubled, nullptr, &op));
  CompPtr c = b.Build(doubled);
  ASSERT_NE(c, nullptr);
  char* text = nullptr;
  ASSERT_OK(jitd_computation_to_text(c.get(), &text));
  const std::string t = text;
  jitd_string_free(text);
  EXPECT_NE(t.find("stablehlo.infeed"), std::string::npos);
  EXPECT_NE(t.find("stablehlo.outfeed"), std::string::npos);
}

TEST(BuilderTest, OpsOfAnotherBuilderAreRefused) {
  B a, b;
  jitd_op_t x = a.Param(0, JITD_DTYPE_F32, {2});
  jitd_op_t op{0};
  EXPECT_ERROR(jitd_builder_unary(b.get(), JITD_UNARY_NEG, x, &op),
               "Neg: an operand belongs to another builder");
  EXPECT_ERROR(jitd_builder_unary(b.get(), JITD_UNARY_NEG, jitd_op_t{0}, &op), "no op");
  EXPECT_ERROR(jitd_builder_unary(a.get(), JITD_UNARY_NEG, jitd_op_t{x.id + 100}, &op),
               "not a valid op");
  EXPECT_ERROR(jitd_builder_unary(nullptr, JITD_UNARY_NEG, x, &op), "builder is NULL");
  // Both builders are now in their error state.
  EXPECT_ERROR(jitd_builder_status(b.get()), "belongs to another builder");
  EXPECT_ERROR(jitd_builder_status(a.get()), "not a valid op");
}

TEST(BuilderTest, BuildChecksParameters) {
  B b;
  b.Param(1, JITD_DTYPE_F32, {});
  jitd_computation_t* c = nullptr;
  EXPECT_ERROR(jitd_builder_build(b.get(), jitd_op_t{0}, &c), "parameter 0 is missing");
  B empty;
  EXPECT_ERROR(jitd_builder_build(empty.get(), jitd_op_t{0}, &c), "has no ops");
}

TEST(BuilderTest, ParametersMayBeAddedOutOfOrder) {
  B b("out_of_order");
  jitd_op_t y = b.Param(1, JITD_DTYPE_F32, {2});
  jitd_op_t x = b.Param(0, JITD_DTYPE_S32, {2});
  jitd_op_t xf{0};
  ASSERT_OK(jitd_builder_convert_element_type(b.get(), x, JITD_DTYPE_F32, &xf));
  b.Binary(JITD_BINARY_SUB, xf, y);
  CompPtr c = b.Build();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(ShapeString(jitd_computation_parameter_shape(c.get(), 0)), "s32[2]");
  EXPECT_EQ(ShapeString(jitd_computation_parameter_shape(c.get(), 1)), "f32[2]");
}

TEST(BuilderTest, CallLinalgFftRngSelectAndScatter) {
  B inner("affine");
  jitd_op_t ix = inner.Param(0, JITD_DTYPE_F32, {3});
  jitd_op_t iy = inner.Param(1, JITD_DTYPE_F32, {3});
  jitd_op_t parts2[] = {inner.Binary(JITD_BINARY_MUL, ix, iy), ix};
  jitd_op_t it{0};
  ASSERT_OK(jitd_builder_tuple(inner.get(), parts2, 2, &it));
  CompPtr affine = inner.Build();
  CompPtr max = ScalarBinary(JITD_BINARY_MAX);
  CompPtr ge = ScalarBinary(JITD_BINARY_GE);
  CompPtr add = ScalarBinary(JITD_BINARY_ADD);
  B b("more_ops");
  jitd_op_t v = b.Param(0, JITD_DTYPE_F32, {3});
  jitd_op_t m = b.Param(1, JITD_DTYPE_F32, {2, 3, 3});
  jitd_op_t rhs = b.Param(2, JITD_DTYPE_F32, {2, 3, 4});
  jitd_op_t c = b.Param(3, JITD_DTYPE_C64, {8});
  jitd_op_t r = b.Param(4, JITD_DTYPE_F32, {4, 8});
  std::vector<jitd_op_t> outs;
  jitd_op_t op{0};
  jitd_op_t vv[] = {v, v};
  ASSERT_OK(jitd_builder_call(b.get(), affine.get(), vv, 2, &op));
  EXPECT_EQ(b.Shape(op), "(f32[3], f32[3])");
  outs.push_back(op);
  EXPECT_ERROR(jitd_builder_call(b.get(), affine.get(), &v, 1, &op),
               "Call: computation 'affine' takes (f32[3], f32[3]), got operands (f32[3])");
  B good("more_ops_valid");
  jitd_op_t gv = good.Param(0, JITD_DTYPE_F32, {3});
  jitd_op_t gm = good.Param(1, JITD_DTYPE_F32, {2, 3, 3});
  jitd_op_t grhs = good.Param(2, JITD_DTYPE_F32, {2, 3, 4});
  jitd_op_t gc = good.Param(3, JITD_DTYPE_C64, {8});
  jitd_op_t gr = good.Param(4, JITD_DTYPE_F32, {4, 8});
  jitd_op_t gvv[] = {gv, gv};
  ASSERT_OK(jitd_builder_call(good.get(), affine.get(), gvv, 2, &op));
  outs = {op};
  ASSERT_OK(jitd_builder_reduce_precision(good.get(), gv, 5, 10, &op));
  outs.push_back(op);
  ASSERT_OK(jitd_builder_replica_id(good.get(), &op));
  EXPECT_EQ(good.Shape(op), "u32[]");
  outs.push_back(op);
  ASSERT_OK(jitd_builder_cholesky(good.get(), gm, 1, &op));
  EXPECT_EQ(good.Shape(op), "f32[2,3,3]");
  outs.push_back(op);
  ASSERT_OK(jitd_builder_triangular_solve(good.get(), gm, grhs, 1, 1, 0, JITD_TRANSPOSE_NO, &op));
  EXPECT_EQ(good.Shape(op), "f32[2,3,4]");
  outs.push_back(op);
  const int64_t len8[] = {8};
  ASSERT_OK(jitd_builder_fft(good.get(), gc, JITD_FFT_FFT, len8, 1, &op));
  EXPECT_EQ(good.Shape(op), "c64[8]");
  outs.push_back(op);
  ASSERT_OK(jitd_builder_fft(good.get(), gr, JITD_FFT_RFFT, len8, 1, &op));
  EXPECT_EQ(good.Shape(op), "c64[4,5]");
  jitd_op_t spectrum = op;
  outs.push_back(op);
  ASSERT_OK(jitd_builder_fft(good.get(), spectrum, JITD_FFT_IRFFT, len8, 1, &op));
  EXPECT_EQ(good.Shape(op), "f32[4,8]");
  outs.push_back(op);
  ShapePtr rs = Array(JITD_DTYPE_F32, {2, 3});
  ASSERT_OK(jitd_builder_rng_uniform(good.get(), good.F32(0), good.F32(1), rs.get(), &op));
  EXPECT_EQ(good.Shape(op), "f32[2,3]");
  outs.push_back(op);
  ASSERT_OK(jitd_builder_rng_normal(good.get(), good.F32(0), good.F32(1), rs.get(), &op));
  outs.push_back(op);
  const int64_t window[] = {1, 2}, strides[] = {1, 2};
  jitd_op_t src = good.Param(5, JITD_DTYPE_F32, {4, 4});
  ASSERT_OK(jitd_builder_select_and_scatter(good.get(), gr, ge.get(), window, strides, nullptr,
                                            nullptr, 2, src, good.F32(0), add.get(), &op));
  EXPECT_EQ(good.Shape(op), "f32[4,8]");
  outs.push_back(op);
  jitd_op_t t{0};
  ASSERT_OK(jitd_builder_tuple(good.get(), outs.data(), outs.size(), &t));
  good.Build();
  // Errors.
  EXPECT_ERROR(jitd_builder_cholesky(b.get(), rhs, 1, &op), "Cholesky: operand f32[2,3,4]");
  EXPECT_ERROR(jitd_builder_triangular_solve(b.get(), m, v, 1, 1, 0, JITD_TRANSPOSE_NO, &op),
               "TriangularSolve: a f32[2,3,3]");
  EXPECT_ERROR(jitd_builder_fft(b.get(), r, JITD_FFT_FFT, len8, 1, &op),
               "Fft: FFT of f32[4,8] with fft_length [8]");
  ShapePtr is = Array(JITD_DTYPE_S32, {2});
  EXPECT_ERROR(jitd_builder_rng_normal(b.get(), b.S32(0), b.S32(1), is.get(), &op),
               "RngNormal: parameters s32[] and s32[] must be scalars");
  EXPECT_ERROR(jitd_builder_select_and_scatter(b.get(), r, ge.get(), window, strides, nullptr,
                                               nullptr, 2, v, b.F32(0), add.get(), &op),
               "SelectAndScatter: source f32[3] must be f32[4,4]");
  EXPECT_ERROR(jitd_builder_reduce_precision(b.get(), c, 5, 10, &op), "ReducePrecision");
  (void)max;
  (void)m;
}

TEST(BuilderTest, HostileArgumentsAreErrorsNotCrashes) {
  CompPtr max = ScalarBinary(JITD_BINARY_MAX);
  B b("hostile");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {4, 4});
  jitd_op_t zero = b.F32(0);
  jitd_op_t op{0};
  const int64_t big_lo[] = {INT64_MAX, 0}, hi[] = {1, 0};
  EXPECT_ERROR(jitd_builder_pad(b.get(), x, zero, big_lo, hi, nullptr, 2, &op), "Pad: dimension 0");
  const int64_t lo[] = {0, 0}, huge_interior[] = {INT64_MAX, 0};
  EXPECT_ERROR(jitd_builder_pad(b.get(), x, zero, lo, hi, huge_interior, 2, &op), "Pad:");
  const int64_t many[20] = {};
  EXPECT_ERROR(jitd_builder_broadcast(b.get(), x, many, 20, &op), "rank 22 exceeds the limit of 16");
  const int64_t neg[] = {-16};
  EXPECT_ERROR(jitd_builder_reshape(b.get(), x, nullptr, 0, neg, 1, &op), "negative dimension");
  EXPECT_ERROR(jitd_builder_iota(b.get(), JITD_DTYPE_S32, -1, &op), "negative dimension");
  EXPECT_ERROR(jitd_builder_slice_in_dim(b.get(), x, 0, 1, 1, INT64_MAX, &op), "out of range");
  const int64_t window[] = {4, 2}, dil[] = {INT64_MAX / 2, 1};  // 3 * 2^62 overflows
  EXPECT_ERROR(jitd_builder_reduce_window(b.get(), &x, &zero, 1, max.get(), window, nullptr,
                                          nullptr, dil, nullptr, nullptr, 2, &op),
               "ReduceWindow: padding or dilation of dimension 0");
  jitd_op_t img = b.Param(1, JITD_DTYPE_F32, {1, 1, 8, 8});
  jitd_op_t k = b.Param(2, JITD_DTYPE_F32, {1, 1, 3, 3});
  const int64_t sp[] = {2, 3}, rd[] = {INT64_MAX / 2 + 1, 1};  // 2 * 2^62 overflows
  jitd_conv_options_t co = {};
  co.struct_size = JITD_CONV_OPTIONS_STRUCT_SIZE;
  co.num_spatial_dimensions = 2;
  co.rhs_dilation = rd;
  co.input_feature_dimension = 1;
  co.input_spatial_dimensions = sp;
  co.kernel_input_feature_dimension = 1;
  co.kernel_spatial_dimensions = sp;
  co.output_feature_dimension = 1;
  co.output_spatial_dimensions = sp;
  EXPECT_ERROR(jitd_builder_conv_general_dilated(b.get(), img, k, &co, &op),
               "ConvGeneralDilated: input f32[1,1,8,8] and kernel f32[1,1,3,3]: padding or dilation");
  co.struct_size = 8;
  EXPECT_ERROR(jitd_builder_conv_general_dilated(b.get(), img, k, &co, &op), "struct_size is 8");
  EXPECT_ERROR(jitd_builder_concatenate(b.get(), nullptr, 2, 0, &op), "operands is NULL");
  EXPECT_ERROR(jitd_builder_binary(b.get(), JITD_BINARY_ADD, x, x, nullptr, 3, &op),
               "broadcast_dimensions is NULL");
  EXPECT_ERROR(jitd_builder_unary(b.get(), JITD_UNARY_NEG, x, nullptr), "out_op is NULL");
  const int64_t dims17[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const float one = 1;
  EXPECT_ERROR(jitd_builder_constant_array(b.get(), JITD_DTYPE_F32, dims17, 17, &one, 4, &op),
               "rank exceeds 16");
  EXPECT_ERROR(jitd_builder_constant_array(b.get(), JITD_DTYPE_F32, nullptr, 0, nullptr, 4, &op),
               "Constant: data is NULL");
}

// ---- Through a real daemon -------------------------------------------------------------------

class BuilderDaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = "/tmp/jitd_builder_test_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_ + "/run");
    socket_ = dir_ + "/run/jitd.sock";
    daemon_ = jitd::SpawnProcess({JITD_BINARY, "serve", "--socket", socket_, "--log-level", "error",
                                  "--cache-dir", dir_ + "/cache", "--segment-bytes", "8388608"});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline && !jitd::UnixSocketAccepts(socket_)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  static void TearDownTestSuite() {
    if (daemon_ > 0) {
      ::kill(daemon_, SIGTERM);
      int status = 0;
      for (int i = 0; i < 500 && ::waitpid(daemon_, &status, WNOHANG) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ::kill(daemon_, SIGKILL);
      ::waitpid(daemon_, &status, 0);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void SetUp() override {
    ASSERT_TRUE(jitd::UnixSocketAccepts(socket_)) << "jitd serve did not come up on " << socket_;
    jitd_client_options_t options{};
    options.struct_size = JITD_CLIENT_OPTIONS_STRUCT_SIZE;
    options.socket_path = socket_.c_str();
    options.timeout_ms = 60000;
    ASSERT_OK(jitd_client_connect(&options, &client_));
  }
  void TearDown() override { jitd_client_close(client_); }

  jitd_executable_t* Compile(const jitd_computation_t* c) {
    jitd_compile_options_t options{};
    options.struct_size = JITD_COMPILE_OPTIONS_STRUCT_SIZE;
    options.device = "interpreter";
    jitd_executable_t* exe = nullptr;
    EXPECT_OK(jitd_client_compile_computation(client_, c, &options, &exe));
    return exe;
  }

  // Runs `exe` on f32/s32 host arrays (bytes) and returns each result's bytes.
  std::vector<std::vector<uint8_t>> Run(jitd_executable_t* exe,
                                        const std::vector<std::vector<uint8_t>>& args) {
    std::vector<jitd_buffer_t*> in, out;
    for (size_t i = 0; i < args.size(); ++i) {
      jitd_dtype_t dtype;
      size_t rank;
      const int64_t* dims;
      EXPECT_OK(jitd_executable_argument_shape(exe, i, &dtype, &rank, &dims));
      jitd_buffer_t* buf = nullptr;
      EXPECT_OK(jitd_buffer_create(client_, dtype, dims, rank, &buf));
      EXPECT_EQ(jitd_buffer_size_bytes(buf), args[i].size());
      std::memcpy(jitd_buffer_data(buf), args[i].data(), args[i].size());
      in.push_back(buf);
    }
    for (size_t i = 0; i < jitd_executable_num_results(exe); ++i) {
      jitd_dtype_t dtype;
      size_t rank;
      const int64_t* dims;
      EXPECT_OK(jitd_executable_result_shape(exe, i, &dtype, &rank, &dims));
      jitd_buffer_t* buf = nullptr;
      EXPECT_OK(jitd_buffer_create(client_, dtype, dims, rank, &buf));
      out.push_back(buf);
    }
    EXPECT_OK(jitd_executable_execute(exe, in.data(), in.size(), out.data(), out.size(), nullptr));
    std::vector<std::vector<uint8_t>> results;
    for (jitd_buffer_t* b : out) {
      const uint8_t* p = static_cast<const uint8_t*>(jitd_buffer_data(b));
      results.emplace_back(p, p + jitd_buffer_size_bytes(b));
      jitd_buffer_destroy(b);
    }
    for (jitd_buffer_t* b : in) jitd_buffer_destroy(b);
    return results;
  }

  static std::string dir_, socket_;
  static pid_t daemon_;
  jitd_client_t* client_ = nullptr;
};
std::string BuilderDaemonTest::dir_;
std::string BuilderDaemonTest::socket_;
pid_t BuilderDaemonTest::daemon_ = -1;

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
template <typename T>
std::vector<T> Values(const std::vector<uint8_t>& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

TEST_F(BuilderDaemonTest, SmallMlp) {
  // y = sum(max(0, x . W + b), axis 1): dot + add (broadcast_dimensions) +
  // max with an implicitly broadcast scalar + reduce.
  CompPtr add = ScalarBinary(JITD_BINARY_ADD);
  B b("mlp");
  jitd_op_t x = b.Param(0, JITD_DTYPE_F32, {2, 3});
  const std::vector<float> w = {1, -1, 0.5f, 2, 0, 1, -2, 1, 3, 0.25f, -1, 0};
  const int64_t wd[] = {3, 4}, bd[] = {4};
  const std::vector<float> bias = {0.5f, -0.5f, 1, 0};
  jitd_op_t wc{0}, bc{0}, h{0}, y{0};
  ASSERT_OK(jitd_builder_constant_array(b.get(), JITD_DTYPE_F32, wd, 2, w.data(), 48, &wc));
  ASSERT_OK(jitd_builder_constant_array(b.get(), JITD_DTYPE_F32, bd, 1, bias.data(), 16, &bc));
  ASSERT_OK(jitd_builder_dot(b.get(), x, wc, &h));
  h = b.Binary(JITD_BINARY_ADD, h, bc, {1});
  h = b.Binary(JITD_BINARY_MAX, h, b.F32(0));
  jitd_op_t zero = b.F32(0);
  const int64_t dim1[] = {1};
  ASSERT_OK(jitd_builder_reduce(b.get(), &h, &zero, 1, add.get(), dim1, 1, &y));
  CompPtr c = b.Build(y);
  ASSERT_NE(c, nullptr);
  jitd_executable_t* exe = Compile(c.get());
  ASSERT_NE(exe, nullptr);
  const std::vector<float> xv = {1, 2, 3, -1, 0.5f, 2};
  auto out = Run(exe, {Bytes(xv)});
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> got = Values<float>(out[0]);
  std::vector<float> want(2, 0);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      float s = bias[j];
      for (int k = 0; k < 3; ++k) s += xv[i * 3 + k] * w[k * 4 + j];
      want[i] += std::max(s, 0.0f);
    }
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FLOAT_EQ(got[0], want[0]);
  EXPECT_FLOAT_EQ(got[1], want[1]);
  // The same computation again: a cache hit (fingerprint over the bytes).
  jitd_executable_t* again = Compile(c.get());
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(jitd_executable_cache_hit(again));
  EXPECT_EQ(std::memcmp(jitd_executable_fingerprint(exe), jitd_executable_fingerprint(again), 16), 0);
  jitd_executable_release(again);
  jitd_executable_release(exe);
}

TEST_F(BuilderDaemonTest, ControlFlowSortMapAndTupleResults) {
  Loop loop = MakeLoop();
  B t("neg");
  t.Unary(JITD_UNARY_NEG, t.Param(0, JITD_DTYPE_F32, {3}));
  CompPtr neg = t.Build();
  B f("exp");
  f.Unary(JITD_UNARY_SQRT, f.Param(0, JITD_DTYPE_F32, {3}));
  CompPtr sqrt = f.Build();
  CompPtr mul = ScalarBinary(JITD_BINARY_MUL);
  B b("control");
  jitd_op_t v = b.Param(0, JITD_DTYPE_F32, {3});
  jitd_op_t flag = b.Param(1, JITD_DTYPE_PRED, {});
  jitd_op_t start[] = {b.S32(0), v};
  jitd_op_t init{0}, w{0}, acc{0}, cond{0}, sorted{0}, mapped{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), start, 2, &init));
  ASSERT_OK(jitd_builder_while(b.get(), loop.cond.get(), loop.body.get(), init, &w));
  ASSERT_OK(jitd_builder_get_tuple_element(b.get(), w, 1, &acc));  // v * 32
  ASSERT_OK(jitd_builder_conditional(b.get(), flag, v, neg.get(), v, sqrt.get(), &cond));
  ASSERT_OK(jitd_builder_sort(b.get(), &v, 1, 0, nullptr, 1, &sorted));
  jitd_op_t vv[] = {v, v};
  const int64_t dims[] = {0};
  ASSERT_OK(jitd_builder_map(b.get(), vv, 2, mul.get(), dims, 1, &mapped));
  jitd_op_t outs[] = {acc, cond, sorted, mapped};
  jitd_op_t root{0};
  ASSERT_OK(jitd_builder_tuple(b.get(), outs, 4, &root));
  CompPtr c = b.Build(root);
  ASSERT_NE(c, nullptr);
  jitd_executable_t* exe = Compile(c.get());
  ASSERT_NE(exe, nullptr);
  ASSERT_EQ(jitd_executable_num_results(exe), 4u);
  const std::vector<float> in = {4, 1, 9};
  for (uint8_t flag_value : {uint8_t{1}, uint8_t{0}}) {
    auto out = Run(exe, {Bytes(in), std::vector<uint8_t>{flag_value}});
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{128, 32, 288}));
    if (flag_value) {
      EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{-4, -1, -9}));
    } else {
      EXPECT_EQ(Values<float>(out[1]), (std::vector<float>{2, 1, 3}));
    }
    EXPECT_EQ(Values<float>(out[2]), (std::vector<float>{1, 4, 9}));
    EXPECT_EQ(Values<float>(out[3]), (std::vector<float>{16, 1, 81}));
  }
  jitd_executable_release(exe);
}

TEST_F(BuilderDaemonTest, GatherConcatAndIndexedConditional) {
  B one("plus_one");
  jitd_op_t p = one.Param(0, JITD_DTYPE_S32, {2});
  one.Binary(JITD_BINARY_ADD, p, one.S32(1));
  CompPtr plus_one = one.Build();
  B two("times_ten");
  jitd_op_t q = two.Param(0, JITD_DTYPE_S32, {2});
  two.Binary(JITD_BINARY_MUL, q, two.S32(10));
  CompPtr times_ten = two.Build();
  B b("indexing");
  jitd_op_t x = b.Param(0, JITD_DTYPE_S32, {3, 2});
  jitd_op_t which = b.Param(1, JITD_DTYPE_S32, {});
  const int32_t idx_data[] = {2, 0};
  const int64_t idx_dims[] = {2, 1};
  jitd_op_t idx{0}, g{0}, row{0}, r{0}, cat{0};
  ASSERT_OK(jitd_builder_constant_array(b.get(), JITD_DTYPE_S32, idx_dims, 2, idx_data, 8, &idx));
  const int64_t offset[] = {1}, collapsed[] = {0}, start_map[] = {0};
  jitd_gather_dimension_numbers_t gd = {offset, 1, collapsed, 1, start_map, 1, 1};
  const int64_t slice[] = {1, 2};
  ASSERT_OK(jitd_builder_gather(b.get(), x, idx, &gd, slice, 2, 0, &g));  // rows 2, 0
  ASSERT_OK(jitd_builder_slice_in_dim(b.get(), x, 1, 2, 1, 0, &row));
  const int64_t flat[] = {2};
  ASSERT_OK(jitd_builder_reshape(b.get(), row, nullptr, 0, flat, 1, &row));
  const jitd_computation_t* branches[] = {plus_one.get(), times_ten.get()};
  jitd_op_t operands[] = {row, row};
  ASSERT_OK(jitd_builder_conditional_indexed(b.get(), which, branches, operands, 2, &r));
  ASSERT_OK(jitd_builder_reshape(b.get(), r, nullptr, 0, std::vector<int64_t>{1, 2}.data(), 2, &r));
  jitd_op_t parts[] = {g, r};
  ASSERT_OK(jitd_builder_concatenate(b.get(), parts, 2, 0, &cat));
  CompPtr c = b.Build(cat);
  ASSERT_NE(c, nullptr);
  jitd_executable_t* exe = Compile(c.get());
  ASSERT_NE(exe, nullptr);
  const std::vector<int32_t> xv = {1, 2, 3, 4, 5, 6};
  auto out = Run(exe, {Bytes(xv), Bytes(std::vector<int32_t>{1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{5, 6, 1, 2, 30, 40}));
  out = Run(exe, {Bytes(xv), Bytes(std::vector<int32_t>{0})});
  EXPECT_EQ(Values<int32_t>(out[0]), (std::vector<int32_t>{5, 6, 1, 2, 4, 5}));
  jitd_executable_release(exe);
}

TEST_F(BuilderDaemonTest, CallCholeskyAndRng) {
  B inner("twice");
  jitd_op_t ix = inner.Param(0, JITD_DTYPE_F32, {2, 2});
  inner.Binary(JITD_BINARY_ADD, ix, ix);
  CompPtr twice = inner.Build();
  B b("linalg_run");
  jitd_op_t a = b.Param(0, JITD_DTYPE_F32, {2, 2});
  jitd_op_t d{0}, l{0}, u{0}, root{0};
  ASSERT_OK(jitd_builder_call(b.get(), twice.get(), &a, 1, &d));  // 2a
  ASSERT_OK(jitd_builder_cholesky(b.get(), d, 1, &l));
  ShapePtr s = Array(JITD_DTYPE_F32, {64});
  ASSERT_OK(jitd_builder_rng_uniform(b.get(), b.F32(2), b.F32(3), s.get(), &u));
  jitd_op_t outs[] = {l, u};
  ASSERT_OK(jitd_builder_tuple(b.get(), outs, 2, &root));
  CompPtr c = b.Build(root);
  ASSERT_NE(c, nullptr);
  jitd_executable_t* exe = Compile(c.get());
  ASSERT_NE(exe, nullptr);
  auto out = Run(exe, {Bytes(std::vector<float>{2, 1, 1, 5})});  // 2a = [[4, 2], [2, 10]]
  ASSERT_EQ(out.size(), 2u);
  const std::vector<float> chol = Values<float>(out[0]);
  ASSERT_EQ(chol.size(), 4u);
  EXPECT_FLOAT_EQ(chol[0], 2);
  EXPECT_FLOAT_EQ(chol[2], 1);
  EXPECT_FLOAT_EQ(chol[3], 3);
  for (float x : Values<float>(out[1])) {
    EXPECT_GE(x, 2.0f);
    EXPECT_LT(x, 3.0f);
  }
  jitd_executable_release(exe);
}

TEST_F(BuilderDaemonTest, MalformedModulesAreRefusedAndTheDaemonStaysUp) {
  const uint8_t garbage[] = {1, 2, 3, 4, 5, 6, 7, 8, 'J', 'D', 'M', 'F', 0, 0, 0, 0};
  jitd_compile_options_t options{};
  options.struct_size = JITD_COMPILE_OPTIONS_STRUCT_SIZE;
  options.device = "interpreter";
  jitd_executable_t* exe = nullptr;
  EXPECT_ERROR(jitd_client_compile_module(client_, garbage, sizeof(garbage), &options, &exe),
               "flatbuffer module");
  EXPECT_EQ(exe, nullptr);
  // A valid computation still compiles afterwards.
  B b("after");
  b.Unary(JITD_UNARY_NEG, b.Param(0, JITD_DTYPE_F32, {2}));
  CompPtr c = b.Build();
  exe = Compile(c.get());
  ASSERT_NE(exe, nullptr);
  auto out = Run(exe, {Bytes(std::vector<float>{1, -2})});
  EXPECT_EQ(Values<float>(out[0]), (std::vector<float>{-1, 2}));
  jitd_executable_release(exe);
}

}  // namespace
