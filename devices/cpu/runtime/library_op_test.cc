// Differential tests of the CPU runtime library against jit/eval: each test
// builds a small module whose last op before the return is the op under
// test, fills its arguments with seeded random values, and compares the
// LibraryOp's results with the interpreter's on the same operand bytes.
//
// Tolerances (see differential_testing.h for the exact rule):
// - exact (bitwise) for integer and boolean results, for sort (a
//   permutation), and for dot/convolution products below
//   internal::kBlasMinMultiplyAdds multiply-adds, which run in the
//   interpreter's own summation order;
// - OpenBLAS products (larger float ones) are reordered sums of K products:
//   f32 within 1e-5 of the tensor's largest magnitude (K <= 600 here, f32
//   epsilon 6e-8), f64 within 1e-13, f16/bf16 results within 1e-2 (their
//   epsilon is 1e-3 / 8e-3: the f32 sum may round to a neighbouring value);
// - fft (KISS FFT in double / long double vs the interpreter's long double
//   DFT, both rounded once): 1e-6 (f32) and 1e-13 (f64);
// - triangular_solve / cholesky (LAPACK in double vs long double
//   substitution) on well-conditioned inputs: 1e-6 (f32 and narrower are
//   computed in double, so they are within an ulp) and 1e-12 (f64).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "devices/cpu/runtime/differential_testing.h"
#include "devices/cpu/runtime/internal/gemm.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd::cpu {
namespace {

using testing::Tolerance;

constexpr Tolerance kExact{0};

// Parses and verifies `text`, then runs the differential on the op just
// before the return of its entry function. `args` default to seeded random
// values of the argument types.
void ExpectMatchesInterpreter(std::string_view text, Tolerance tolerance,
                              std::vector<ir::Literal> args = {}, uint64_t seed = 7,
                              const LibraryOpOptions& options = {},
                              const RunContext& context = {}) {
  auto module = frontend::ParseModule(text);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  ASSERT_TRUE(ir::VerifyModule(**module).ok()) << ir::VerifyModule(**module).ToString();
  ir::Function& fn = *(*module)->EntryFunction();
  std::vector<eval::RuntimeValue> values;
  if (args.empty()) {
    for (size_t i = 0; i < fn.arg_types().size(); ++i) {
      auto lit = eval::RandomLiteral(fn.arg_types()[i], seed * 1000 + i);
      ASSERT_TRUE(lit.ok());
      values.emplace_back(std::move(lit).value());
    }
  } else {
    for (ir::Literal& a : args) values.emplace_back(std::move(a));
  }
  const size_t index = fn.entry()->ops().size() - 2;
  auto d = testing::RunDifferential(**module, fn, index, std::move(values), tolerance, options,
                                    context);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->mismatch, "") << text;
}

// A one-op function: `body` is the op line, %0 its result.
std::string Fn(std::string_view args, std::string_view result, std::string_view body) {
  return "func.func @main(" + std::string(args) + ") -> " + std::string(result) + " {\n  " +
         std::string(body) + "\n  return %0 : " + std::string(result) + "\n}\n";
}

// ---- dot_general, dot ------------------------------------------------------

std::string MatMul(int64_t m, int64_t k, int64_t n, std::string_view t, std::string_view rt = "") {
  const std::string r = rt.empty() ? std::string(t) : std::string(rt);
  const std::string a = "tensor<" + std::to_string(m) + "x" + std::to_string(k) + "x" +
                        std::string(t) + ">";
  const std::string b = "tensor<" + std::to_string(k) + "x" + std::to_string(n) + "x" +
                        std::string(t) + ">";
  const std::string c = "tensor<" + std::to_string(m) + "x" + std::to_string(n) + "x" + r + ">";
  return Fn("%a: " + a + ", %b: " + b, c,
            "%0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (" + a + ", " + b +
                ") -> " + c);
}

TEST(DotTest, SmallProductsAreBitIdenticalForEveryType) {
  for (std::string_view t : {"f32", "f64", "f16", "bf16", "complex<f32>", "complex<f64>", "i8",
                             "i16", "i32", "i64", "ui8", "ui32", "ui64", "i1", "i4"}) {
    SCOPED_TRACE(t);
    ExpectMatchesInterpreter(MatMul(4, 3, 6, t), kExact);
    ExpectMatchesInterpreter(MatMul(5, 17, 9, t), kExact);
  }
}

TEST(DotTest, IntegerProductsWrapInTheResultTypeAtAnySize) {
  for (std::string_view t : {"i8", "ui16", "i32", "i64"}) {
    SCOPED_TRACE(t);
    ExpectMatchesInterpreter(MatMul(40, 70, 50, t), kExact);
  }
}

TEST(DotTest, LargeFloatProductsUseBlasWithinTolerance) {
  ASSERT_GE(40 * 60 * 50, internal::kBlasMinMultiplyAdds);
  ExpectMatchesInterpreter(MatMul(40, 600, 50, "f32"), Tolerance{1e-5});
  ExpectMatchesInterpreter(MatMul(40, 600, 50, "f64"), Tolerance{1e-13});
  ExpectMatchesInterpreter(MatMul(33, 65, 47, "complex<f32>"), Tolerance{1e-5});
  ExpectMatchesInterpreter(MatMul(33, 65, 47, "complex<f64>"), Tolerance{1e-13});
  ExpectMatchesInterpreter(MatMul(40, 60, 50, "f16"), Tolerance{1e-2});
  ExpectMatchesInterpreter(MatMul(40, 60, 50, "bf16"), Tolerance{1e-2});
}

TEST(DotTest, BatchingAndEveryOperandLayout) {
  struct Case {
    const char* lhs;
    const char* rhs;
    const char* out;
    const char* dims;
  };
  // lhs [b, m, k] / [b, k, m] / permuted; rhs [b, k, n] / [b, n, k] / permuted.
  const Case cases[] = {
      {"2x3x4", "2x4x5", "2x3x5", "batching_dims = [0] x [0], contracting_dims = [2] x [1]"},
      {"2x4x3", "2x4x5", "2x3x5", "batching_dims = [0] x [0], contracting_dims = [1] x [1]"},
      {"2x3x4", "2x5x4", "2x3x5", "batching_dims = [0] x [0], contracting_dims = [2] x [2]"},
      {"3x2x4", "4x5x2", "2x3x5", "batching_dims = [1] x [2], contracting_dims = [2] x [0]"},
      {"2x4x3x6", "6x5x4", "2x3x5", "contracting_dims = [1, 3] x [2, 0]"},
      {"2x3x4x5", "4x2x5x6", "2x4x3x6", "batching_dims = [0, 2] x [1, 0], contracting_dims = [3] x [2]"},
      {"7", "7", "", "contracting_dims = [0] x [0]"},
      {"3", "4", "3x4", "contracting_dims = [] x []"},
  };
  for (const Case& c : cases) {
    for (std::string_view t : {"f32", "i32"}) {
      const std::string a = std::string("tensor<") + c.lhs + "x" + std::string(t) + ">";
      const std::string b = std::string("tensor<") + c.rhs + "x" + std::string(t) + ">";
      const std::string o = std::string("tensor<") + c.out + (*c.out ? "x" : "") + std::string(t) + ">";
      SCOPED_TRACE(a + " " + b + " " + c.dims);
      ExpectMatchesInterpreter(Fn("%a: " + a + ", %b: " + b, o,
                                  "%0 = stablehlo.dot_general %a, %b, " + std::string(c.dims) +
                                      " : (" + a + ", " + b + ") -> " + o),
                               kExact);
    }
  }
  // The same layouts large enough for BLAS.
  ExpectMatchesInterpreter(
      Fn("%a: tensor<3x64x40xf32>, %b: tensor<3x50x64xf32>", "tensor<3x40x50xf32>",
         "%0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [1] x "
         "[2] : (tensor<3x64x40xf32>, tensor<3x50x64xf32>) -> tensor<3x40x50xf32>"),
      Tolerance{1e-5});
  ExpectMatchesInterpreter(
      Fn("%a: tensor<40x3x64xf64>, %b: tensor<64x50x3xf64>", "tensor<3x40x50xf64>",
         "%0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [2], contracting_dims = [2] x "
         "[0] : (tensor<40x3x64xf64>, tensor<64x50x3xf64>) -> tensor<3x40x50xf64>"),
      Tolerance{1e-13});
}

TEST(DotTest, LegacyDotOfVectorsAndMatrices) {
  ExpectMatchesInterpreter(Fn("%a: tensor<5xf32>, %b: tensor<5xf32>", "tensor<f32>",
                              "%0 = stablehlo.dot %a, %b : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>"),
                           kExact);
  ExpectMatchesInterpreter(
      Fn("%a: tensor<5xi32>, %b: tensor<5x3xi32>", "tensor<3xi32>",
         "%0 = stablehlo.dot %a, %b : (tensor<5xi32>, tensor<5x3xi32>) -> tensor<3xi32>"),
      kExact);
  ExpectMatchesInterpreter(
      Fn("%a: tensor<4x5xf64>, %b: tensor<5xf64>", "tensor<4xf64>",
         "%0 = stablehlo.dot %a, %b : (tensor<4x5xf64>, tensor<5xf64>) -> tensor<4xf64>"),
      kExact);
}

TEST(DotTest, ZeroSizedDimensions) {
  ExpectMatchesInterpreter(MatMul(3, 0, 4, "f32"), kExact);
  ExpectMatchesInterpreter(MatMul(0, 3, 4, "i32"), kExact);
}

TEST(DotTest, NonFiniteValuesPropagateLikeTheInterpreter) {
  ir::Literal a = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2, 2}));
  ir::Literal b = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {2, 2}));
  a.SetDouble(0, INFINITY);
  a.SetDouble(1, 0);
  a.SetDouble(2, NAN);
  a.SetDouble(3, -1);
  b.SetDouble(0, 0);
  b.SetDouble(1, 2);
  b.SetDouble(2, 3);
  b.SetDouble(3, -0.0);
  std::vector<ir::Literal> args;
  args.push_back(std::move(a));
  args.push_back(std::move(b));
  ExpectMatchesInterpreter(MatMul(2, 2, 2, "f32"), kExact, std::move(args));
}

// ---- convolution -------------------------------------------------------------

std::string Conv(std::string_view lhs, std::string_view rhs, std::string_view out,
                 std::string_view t, std::string_view dims, std::string_view window,
                 int64_t feature_groups = 1, int64_t batch_groups = 1) {
  const std::string a = "tensor<" + std::string(lhs) + "x" + std::string(t) + ">";
  const std::string b = "tensor<" + std::string(rhs) + "x" + std::string(t) + ">";
  const std::string o = "tensor<" + std::string(out) + "x" + std::string(t) + ">";
  return Fn("%a: " + a + ", %b: " + b, o,
            "%0 = stablehlo.convolution(%a, %b) dim_numbers = " + std::string(dims) +
                ", window = {" + std::string(window) + "} {batch_group_count = " +
                std::to_string(batch_groups) + " : i64, feature_group_count = " +
                std::to_string(feature_groups) + " : i64} : (" + a + ", " + b + ") -> " + o);
}

TEST(ConvolutionTest, EveryWindowAttributeSmallIsBitIdentical) {
  for (std::string_view t : {"f32", "f64", "f16", "i32", "i8", "complex<f32>"}) {
    SCOPED_TRACE(t);
    // NHWC, stride and asymmetric padding.
    ExpectMatchesInterpreter(Conv("1x7x6x2", "3x3x2x3", "1x3x3x3", t, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
                                  "stride = [2, 1], pad = [[1, 0], [0, -1]]"),
                             kExact);
    // NCHW with lhs and rhs dilation and reversal.
    ExpectMatchesInterpreter(
        Conv("2x2x5x4", "3x2x2x2", "2x3x11x4", t, "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
             "pad = [[1, 2], [1, 1]], lhs_dilate = [2, 1], rhs_dilate = [1, 2], reverse = [true, false]"),
        kExact);
    // An output layout the product cannot write in place.
    ExpectMatchesInterpreter(
        Conv("3x4x5x2", "2x3x2x4", "2x4x1x4", t, "[0, b, 1, f]x[i, 0, 1, o]->[1, f, 0, b]",
             "stride = [1, 2]"),
        kExact);
    // Feature groups and batch groups.
    ExpectMatchesInterpreter(Conv("2x4x6", "6x2x3", "2x6x4", t, "[b, f, 0]x[o, i, 0]->[b, f, 0]", "", 2),
                             kExact);
    ExpectMatchesInterpreter(Conv("4x3x6", "6x3x3", "2x6x4", t, "[b, f, 0]x[o, i, 0]->[b, f, 0]", "", 1, 2),
                             kExact);
    // 1x1 windows: stride 1 reads the image as the patch matrix; stride 2
    // and padding do not.
    ExpectMatchesInterpreter(Conv("2x5x4x6", "1x1x6x3", "2x5x4x3", t, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", ""),
                             kExact);
    ExpectMatchesInterpreter(Conv("2x5x4x6", "1x1x6x3", "2x3x2x3", t, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
                                  "stride = [2, 2]"),
                             kExact);
    ExpectMatchesInterpreter(Conv("2x5x4x6", "1x1x6x3", "2x6x4x3", t, "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]",
                                  "pad = [[1, 0], [0, 0]]"),
                             kExact);
    // Three spatial dimensions.
    ExpectMatchesInterpreter(Conv("1x4x3x5x2", "2x2x2x2x2", "1x3x2x4x2", t,
                                  "[b, 0, 1, 2, f]x[0, 1, 2, i, o]->[b, 0, 1, 2, f]", ""),
                             kExact);
  }
}

TEST(ConvolutionTest, LargeFloatConvolutionsUseBlasWithinTolerance) {
  // ResNet-like 3x3, NHWC and NCHW; grouped; f16 through f32.
  ExpectMatchesInterpreter(Conv("2x12x12x32", "3x3x32x16", "2x12x12x16", "f32",
                                "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "pad = [[1, 1], [1, 1]]"),
                           Tolerance{1e-5});
  ExpectMatchesInterpreter(Conv("2x32x12x12", "16x32x3x3", "2x16x6x6", "f64",
                                "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]",
                                "stride = [2, 2], pad = [[1, 1], [1, 1]]"),
                           Tolerance{1e-13});
  ExpectMatchesInterpreter(Conv("1x16x16x32", "3x3x8x32", "1x14x14x32", "f32",
                                "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "", 4),
                           Tolerance{1e-5});
  ExpectMatchesInterpreter(Conv("2x28x28x64", "1x1x64x32", "2x28x28x32", "f32",
                                "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", ""),
                           Tolerance{1e-5});
  ExpectMatchesInterpreter(Conv("1x16x16x32", "3x3x32x16", "1x14x14x16", "f16",
                                "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", ""),
                           Tolerance{1e-2});
}

// ---- fft ---------------------------------------------------------------------

TEST(FftTest, AllFourKindsInOneTwoAndThreeDimensions) {
  struct Case {
    const char* in;
    const char* out;
    const char* type;
    const char* length;
  };
  const Case cases[] = {
      {"8xcomplex<T>", "8xcomplex<T>", "FFT", "8"},
      {"3x7xcomplex<T>", "3x7xcomplex<T>", "IFFT", "7"},
      {"2x6x5xcomplex<T>", "2x6x5xcomplex<T>", "FFT", "6, 5"},
      {"3x4x5xcomplex<T>", "3x4x5xcomplex<T>", "IFFT", "3, 4, 5"},
      {"4x17xT", "4x9xcomplex<T>", "RFFT", "17"},
      {"3x12xT", "3x7xcomplex<T>", "RFFT", "3, 12"},
      {"4x9xcomplex<T>", "4x17xT", "IRFFT", "17"},
      {"2x3x7xcomplex<T>", "2x3x12xT", "IRFFT", "2, 3, 12"},
      {"100xcomplex<T>", "100xcomplex<T>", "FFT", "100"},
      {"1xcomplex<T>", "1xcomplex<T>", "FFT", "1"},
  };
  for (const auto& [t, tol] : {std::pair<std::string, double>{"f32", 1e-6}, {"f64", 1e-13}}) {
    for (const Case& c : cases) {
      auto sub = [&](std::string s) {
        for (size_t p; (p = s.find('T')) != std::string::npos;) s.replace(p, 1, t);
        return s;
      };
      const std::string a = "tensor<" + sub(c.in) + ">", o = "tensor<" + sub(c.out) + ">";
      SCOPED_TRACE(a + " " + c.type);
      ExpectMatchesInterpreter(Fn("%a: " + a, o,
                                  "%0 = stablehlo.fft %a, type = " + std::string(c.type) +
                                      ", length = [" + c.length + "] : (" + a + ") -> " + o),
                               Tolerance{tol});
    }
  }
}

// ---- triangular_solve, cholesky ------------------------------------------------

// Seeded random matrices with `boost` added to each diagonal element, so
// triangles and x x^H + boost*I are well conditioned.
ir::Literal Matrices(ir::DType t, std::vector<int64_t> dims, uint64_t seed, double boost) {
  ir::Literal lit = *eval::RandomLiteral(ir::Type::Tensor(t, dims), seed);
  const int64_t n = dims.back(), rows = dims[dims.size() - 2];
  for (int64_t i = 0; i < lit.num_elements(); ++i) {
    if ((i / n) % rows == i % n) lit.SetComplex(i, lit.GetComplex(i) + boost);
  }
  return lit;
}

TEST(TriangularSolveTest, EveryOrientationAndType) {
  for (const auto& [t, dt, tol] :
       {std::tuple<std::string, ir::DType, double>{"f32", ir::DType::kF32, 1e-6},
        {"f64", ir::DType::kF64, 1e-12},
        {"complex<f32>", ir::DType::kC64, 1e-6},
        {"complex<f64>", ir::DType::kC128, 1e-12},
        {"f16", ir::DType::kF16, 1e-6}}) {
    for (bool left : {false, true}) {
      for (bool lower : {false, true}) {
        for (bool unit : {false, true}) {
          for (std::string_view transpose : {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}) {
            const std::string a = "tensor<2x5x5x" + t + ">";
            const std::string b = left ? "tensor<2x5x3x" + t + ">" : "tensor<2x3x5x" + t + ">";
            SCOPED_TRACE(b + (left ? " left" : " right") + (lower ? " lower" : " upper") +
                         (unit ? " unit " : " ") + std::string(transpose));
            std::vector<ir::Literal> args;
            args.push_back(Matrices(dt, {2, 5, 5}, 3, 4.0));
            args.push_back(*eval::RandomLiteral(ir::Type::Tensor(dt, left ? std::vector<int64_t>{2, 5, 3}
                                                                           : std::vector<int64_t>{2, 3, 5}),
                                                4));
            ExpectMatchesInterpreter(
                Fn("%a: " + a + ", %b: " + b, b,
                   "%0 = \"stablehlo.triangular_solve\"(%a, %b) <{left_side = " +
                       std::string(left ? "true" : "false") +
                       ", lower = " + (lower ? "true" : "false") +
                       ", transpose_a = #stablehlo<transpose " + std::string(transpose) +
                       ">, unit_diagonal = " + (unit ? "true" : "false") + "}> : (" + a + ", " +
                       b + ") -> " + b),
                Tolerance{tol}, std::move(args));
          }
        }
      }
    }
  }
}

TEST(CholeskyTest, LowerAndUpperFactorsAndNonPositiveDefiniteInput) {
  for (const auto& [t, dt, tol] :
       {std::tuple<std::string, ir::DType, double>{"f32", ir::DType::kF32, 1e-6},
        {"f64", ir::DType::kF64, 1e-12},
        {"complex<f32>", ir::DType::kC64, 1e-6},
        {"complex<f64>", ir::DType::kC128, 1e-12}}) {
    for (bool lower : {false, true}) {
      const std::string a = "tensor<3x6x6x" + t + ">";
      SCOPED_TRACE(a + (lower ? " lower" : " upper"));
      // x x^H + 6 I is positive definite: computed in the module so it is
      // Hermitian to the last bit.
      const std::string text =
          "func.func @main(%x: " + a + ", %d: " + a + ") -> " + a + " {\n" +
          "  %xh = stablehlo.dot_general %x, %x, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (" +
          a + ", " + a + ") -> " + a + "\n" + "  %s = stablehlo.add %xh, %d : " + a + "\n" +
          "  %0 = \"stablehlo.cholesky\"(%s) <{lower = " + (lower ? "true" : "false") + "}> : (" +
          a + ") -> " + a + "\n  return %0 : " + a + "\n}\n";
      std::vector<ir::Literal> args;
      args.push_back(*eval::RandomLiteral(ir::Type::Tensor(dt, {3, 6, 6}), 5));
      ir::Literal diag = *ir::Literal::Create(ir::Type::Tensor(dt, {3, 6, 6}));
      for (int64_t i = 0; i < diag.num_elements(); ++i) {
        if ((i / 6) % 6 == i % 6) diag.SetDouble(i, 6.0);
      }
      args.push_back(std::move(diag));
      if (ir::IsComplex(dt)) {
        // Hermitian needs x conj(x)^T; a real x keeps the test simple.
        for (int64_t i = 0; i < args[0].num_elements(); ++i) {
          args[0].SetComplex(i, args[0].GetComplex(i).real());
        }
      }
      ExpectMatchesInterpreter(text, Tolerance{tol}, std::move(args));
      // Not positive definite: the interpreter's NaN pattern.
      ExpectMatchesInterpreter(
          Fn("%a: " + a, a,
             "%0 = \"stablehlo.cholesky\"(%a) <{lower = " + std::string(lower ? "true" : "false") +
                 "}> : (" + a + ") -> " + a),
          Tolerance{tol});
    }
  }
}

// ---- sort ----------------------------------------------------------------------

std::string SortText(std::string_view type, int64_t dimension, std::string_view direction,
                     bool with_values = false, std::string_view compare_type = "") {
  const std::string t = "tensor<" + std::string(type) + ">";
  std::string scalar(type.substr(type.rfind('x') + 1));
  const std::string s = "tensor<" + scalar + ">";
  const std::string cmp_type =
      compare_type.empty() ? "" : ", " + std::string(compare_type);
  if (!with_values) {
    return Fn("%a: " + t, t,
              "%0 = \"stablehlo.sort\"(%a) <{dimension = " + std::to_string(dimension) +
                  " : i64, is_stable = true}> ({\n  ^bb0(%x: " + s + ", %y: " + s +
                  "):\n    %c = stablehlo.compare " + std::string(direction) + ", %x, %y" +
                  cmp_type + " : (" + s + ", " + s + ") -> tensor<i1>\n    stablehlo.return %c : tensor<i1>\n  }) : (" +
                  t + ") -> " + t);
  }
  const std::string v = "tensor<" + std::string(type.substr(0, type.rfind('x'))) + "xi32>";
  return "func.func @main(%a: " + t + ", %b: " + v + ") -> " + t + " {\n" +
         "  %0:2 = \"stablehlo.sort\"(%a, %b) <{dimension = " + std::to_string(dimension) +
         " : i64}> ({\n  ^bb0(%x: " + s + ", %y: " + s +
         ", %p: tensor<i32>, %q: tensor<i32>):\n    %c = stablehlo.compare " +
         std::string(direction) + ", %x, %y : (" + s + ", " + s +
         ") -> tensor<i1>\n    stablehlo.return %c : tensor<i1>\n  }) : (" + t + ", " + v +
         ") -> (" + t + ", " + v + ")\n  return %0#0 : " + t + "\n}\n";
}

TEST(SortTest, DimensionsDirectionsTypesAndVariadicOperands) {
  for (std::string_view t : {"f32", "f64", "f16", "bf16", "i8", "i32", "ui64", "i1"}) {
    for (int64_t dim : {0, 1, -1}) {
      for (std::string_view dir : {"LT", "GT", "LE"}) {
        SCOPED_TRACE(std::string(t) + " " + std::to_string(dim) + " " + std::string(dir));
        ExpectMatchesInterpreter(SortText("5x33x" + std::string(t), dim, dir), kExact);
        ExpectMatchesInterpreter(SortText("17x4x" + std::string(t), dim, dir, true), kExact);
      }
    }
  }
  ExpectMatchesInterpreter(SortText("6x9xf32", 1, "LT", false, "TOTALORDER"), kExact);
}

TEST(SortTest, InconsistentComparatorGivesTheInterpreterPermutation) {
  // "x < y or y < x" is not a strict weak order (everything unequal is less
  // than everything else).
  const std::string text = R"(
func.func @main(%a: tensor<37xi32>) -> tensor<37xi32> {
  %0 = "stablehlo.sort"(%a) <{dimension = 0 : i64}> ({
  ^bb0(%x: tensor<i32>, %y: tensor<i32>):
    %c = stablehlo.compare NE, %x, %y : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) : (tensor<37xi32>) -> tensor<37xi32>
  return %0 : tensor<37xi32>
})";
  ExpectMatchesInterpreter(text, kExact);
}

TEST(SortTest, CompiledComparatorOption) {
  LibraryOpOptions options;
  options.comparator = [](const void* const* lhs, const void* const* rhs) {
    float a, b;
    std::memcpy(&a, lhs[0], 4);
    std::memcpy(&b, rhs[0], 4);
    return a > b;
  };
  ExpectMatchesInterpreter(SortText("9x40xf32", 1, "GT"), kExact, {}, 7, options);
}

// A consistent comparator as compiled code would be: descending.
uint8_t GreaterF32(const void* const* lhs, const void* const* rhs) {
  float a, b;
  std::memcpy(&a, lhs[0], 4);
  std::memcpy(&b, rhs[0], 4);
  return a > b;
}

TEST(SortTest, LongSliceSortsInParallelWithTheSequentialComparisons) {
  auto module = frontend::ParseModule(SortText("200003xf32", 0, "LT"));
  ASSERT_TRUE(module.ok());
  const ir::Op& sort = *(*module)->EntryFunction()->entry()->ops()[0];
  std::vector<ir::Literal> operands;
  operands.push_back(*eval::RandomLiteral(sort.operand(0)->type(), 5));
  ParallelFor parallel_for = [&](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    std::vector<std::thread> threads;
    const int64_t chunk = (n + 2) / 3;
    for (int64_t b = 0; b < n; b += chunk) {
      threads.emplace_back([&fn, b, e = std::min(n, b + chunk)] { fn(b, e); });
    }
    for (auto& t : threads) t.join();
  };
  RunContext parallel;
  parallel.parallel_for = &parallel_for;

  // Compiled (a function pointer read through its slot): the stable order.
  const ComparatorFn greater = &GreaterF32;
  LibraryOpOptions compiled;
  compiled.compiled_comparator = &greater;
  auto out = testing::RunLibrary(sort, operands, compiled, parallel);
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<float> expected(static_cast<size_t>(operands[0].num_elements()));
  std::memcpy(expected.data(), operands[0].bytes().data(), expected.size() * 4);
  std::stable_sort(expected.begin(), expected.end(), [](float a, float b) { return a > b; });
  EXPECT_EQ(std::memcmp((*out)[0].bytes().data(), expected.data(), expected.size() * 4), 0);

  // An inconsistent comparator: the same permutation as the sequential sort
  // (the same comparisons in the same order).
  LibraryOpOptions inconsistent;
  inconsistent.comparator = [](const void* const* lhs, const void* const* rhs) {
    uint32_t a, b;
    std::memcpy(&a, lhs[0], 4);
    std::memcpy(&b, rhs[0], 4);
    return ((a ^ b) & 4) != 0 ? a < b : (a % 7) > (b % 5);
  };
  auto sequential = testing::RunLibrary(sort, operands, inconsistent);
  auto in_parallel = testing::RunLibrary(sort, operands, inconsistent, parallel);
  ASSERT_TRUE(sequential.ok() && in_parallel.ok());
  EXPECT_EQ((*sequential)[0], (*in_parallel)[0]);
}

TEST(SortTest, HonoursTheDeadline) {
  auto module = frontend::ParseModule(SortText("100000xf32", 0, "LT"));
  ASSERT_TRUE(module.ok());
  const ir::Op& sort = *(*module)->EntryFunction()->entry()->ops()[0];
  std::vector<ir::Literal> operands;
  operands.push_back(*eval::RandomLiteral(sort.operand(0)->type(), 1));
  RunContext context;
  context.deadline = std::chrono::steady_clock::now();
  auto r = testing::RunLibrary(sort, operands, {}, context);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
}

// ---- reduce_window --------------------------------------------------------------

std::string ReduceWindowText(std::string_view in, std::string_view out, std::string_view t,
                             std::string_view body, std::string_view attrs) {
  const std::string a = "tensor<" + std::string(in) + "x" + std::string(t) + ">";
  const std::string o = "tensor<" + std::string(out) + "x" + std::string(t) + ">";
  const std::string s = "tensor<" + std::string(t) + ">";
  return "func.func @main(%a: " + a + ", %i: " + s + ") -> " + o + " {\n" +
         "  %0 = \"stablehlo.reduce_window\"(%a, %i) <{" + std::string(attrs) + "}> ({\n" +
         "  ^bb0(%x: " + s + ", %y: " + s + "):\n    %r = " + std::string(body) + " %x, %y : " + s +
         "\n    stablehlo.return %r : " + s + "\n  }) : (" + a + ", " + s + ") -> " + o +
         "\n  return %0 : " + o + "\n}\n";
}

TEST(ReduceWindowTest, PoolingWithEveryWindowAttribute) {
  for (std::string_view t : {"f32", "f64", "f16", "bf16", "i32", "i8", "ui8", "ui64"}) {
    for (std::string_view body :
         {"stablehlo.add", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.multiply"}) {
      SCOPED_TRACE(std::string(t) + " " + std::string(body));
      // 3x3 max-pool style: stride 2, padding 1.
      ExpectMatchesInterpreter(
          ReduceWindowText("2x9x8x3", "2x5x4x3", t, body,
                           "padding = dense<[[0, 0], [1, 1], [1, 0], [0, 0]]> : tensor<4x2xi64>, "
                           "window_dimensions = array<i64: 1, 3, 3, 1>, "
                           "window_strides = array<i64: 1, 2, 2, 1>"),
          kExact);
      // Base and window dilation.
      ExpectMatchesInterpreter(
          ReduceWindowText("5x6", "8x2", t, body,
                           "base_dilations = array<i64: 2, 1>, padding = dense<[[1, 0], [0, 0]]> : "
                           "tensor<2x2xi64>, window_dilations = array<i64: 1, 2>, "
                           "window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 1, 2>"),
          kExact);
    }
  }
  for (std::string_view body : {"stablehlo.or", "stablehlo.and", "stablehlo.xor"}) {
    ExpectMatchesInterpreter(ReduceWindowText("7x6", "6x5", "i1", body,
                                              "window_dimensions = array<i64: 2, 2>"),
                             kExact);
    // The last dimension passing through (the row-at-a-time path), bool.
    ExpectMatchesInterpreter(ReduceWindowText("5x6x7", "3x3x7", "i1", body,
                                              "padding = dense<[[1, 0], [0, 0], [0, 0]]> : "
                                              "tensor<3x2xi64>, "
                                              "window_dimensions = array<i64: 2, 2, 1>, "
                                              "window_strides = array<i64: 2, 2, 1>"),
                             kExact);
  }
  // Rank 1 with a window of 1 (the row path with no outer dimensions).
  ExpectMatchesInterpreter(ReduceWindowText("9", "9", "f32", "stablehlo.add",
                                            "window_dimensions = array<i64: 1>"),
                           kExact);
}

// NaN, signed zeros and infinities through the row-at-a-time path (its
// branch-free max / min must pick what jit/eval's fold picks).
TEST(ReduceWindowTest, RowPathSpecialValues) {
  const double specials[] = {std::nan(""), -0.0, 0.0, 1.0, -1.0, INFINITY, -INFINITY, 0.5, -0.0};
  for (int zeros_only = 0; zeros_only < 2; ++zeros_only) {
    for (std::string_view t : {"f32", "f64"}) {
      for (std::string_view body :
           {"stablehlo.add", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.multiply"}) {
        SCOPED_TRACE(std::string(t) + " " + std::string(body) + (zeros_only ? " zeros" : ""));
        const ir::DType dtype = t == "f32" ? ir::DType::kF32 : ir::DType::kF64;
        ir::Literal a = *ir::Literal::Create(ir::Type::Tensor(dtype, {4, 3, 8}));
        for (int64_t i = 0; i < a.num_elements(); ++i) {
          // zeros_only: +0 in row 0 of dimension 1, -0 elsewhere (windows of
          // mixed-sign zeros, where max / min must pick by sign).
          a.SetDouble(i, zeros_only ? ((i / 8) % 3 == 0 ? 0.0 : -0.0) : specials[(i * 5) % 9]);
        }
        ir::Literal init = *ir::Literal::Create(ir::Type::Tensor(dtype, {}));
        init.SetDouble(0, -0.0);
        std::vector<ir::Literal> args;
        args.push_back(std::move(a));
        args.push_back(std::move(init));
        ExpectMatchesInterpreter(ReduceWindowText("4x3x8", "3x2x8", t, body,
                                                  "window_dimensions = array<i64: 2, 2, 1>"),
                                 kExact, std::move(args));
      }
    }
  }
}

TEST(ReduceWindowTest, DeclinesBodiesItDoesNotRecognize) {
  auto module = frontend::ParseModule(R"(
func.func @main(%a: tensor<4xf32>, %i: tensor<f32>) -> tensor<3xf32> {
  %0 = "stablehlo.reduce_window"(%a, %i) <{window_dimensions = array<i64: 2>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.subtract %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
})");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto op = CreateLibraryOp(*(*module)->EntryFunction()->entry()->ops()[0]);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(*op, nullptr);
}

// Its position tables would hold 2^22 * 4096 entries (terabytes): it used
// to throw std::bad_alloc out of the cpu device's compile (a valid program
// that killed the daemon); now declined, the interpreter's op runs it.
TEST(ReduceWindowTest, DeclinesWindowsWhosePositionTablesWouldBeHuge) {
  auto module = frontend::ParseModule(ReduceWindowText("4194304", "4190209", "f32", "stablehlo.add",
                                                       "window_dimensions = array<i64: 4096>"));
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto op = CreateLibraryOp(*(*module)->EntryFunction()->entry()->ops()[0]);
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  EXPECT_EQ(*op, nullptr);
}

// ---- gather, scatter --------------------------------------------------------------

// Index values from RandomLiteral are -4..4 (signed) or 0..7 (unsigned): some
// out of bounds, so clamping (gather) and skipping (scatter) are exercised.
TEST(GatherTest, DimensionNumbersBatchingAndClamping) {
  const char* cases[] = {
      // Two-component index vectors, one collapsed dimension.
      R"(func.func @main(%x: tensor<5x6xT>, %i: tensor<4x2xI>) -> tensor<4x3xT> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>}> : (tensor<5x6xT>, tensor<4x2xI>) -> tensor<4x3xT>
  return %0 : tensor<4x3xT>
})",
      // Implicit index vector dimension, offset dims first.
      R"(func.func @main(%x: tensor<3x7xT>, %i: tensor<5xI>) -> tensor<3x5xT> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 3, 1>}> : (tensor<3x7xT>, tensor<5xI>) -> tensor<3x5xT>
  return %0 : tensor<3x5xT>
})",
      // Batching dimensions and the index vector in the middle.
      R"(func.func @main(%x: tensor<2x6x3xT>, %i: tensor<2x1x4xI>) -> tensor<2x4x2xT> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, 2>}> : (tensor<2x6x3xT>, tensor<2x1x4xI>) -> tensor<2x4x2xT>
  return %0 : tensor<2x4x2xT>
})",
  };
  for (std::string_view t : {"f32", "i8", "complex<f64>", "bf16", "i1"}) {
    for (std::string_view index : {"i32", "ui8", "i64", "ui64"}) {
      for (const char* c : cases) {
        std::string text = c;
        for (size_t p; (p = text.find("xT>")) != std::string::npos;) text.replace(p, 3, "x" + std::string(t) + ">");
        for (size_t p; (p = text.find("xI>")) != std::string::npos;) text.replace(p, 3, "x" + std::string(index) + ">");
        SCOPED_TRACE(text);
        ExpectMatchesInterpreter(text, kExact);
      }
    }
  }
}

TEST(ScatterTest, FoldsReplaceDuplicatesAndOutOfBoundsUpdates) {
  const char* cases[] = {
      R"(func.func @main(%x: tensor<6xT>, %i: tensor<9x1xI>, %u: tensor<9xT>) -> tensor<6xT> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<T>, %b: tensor<T>):
    BODY
  }) : (tensor<6xT>, tensor<9x1xI>, tensor<9xT>) -> tensor<6xT>
  return %0 : tensor<6xT>
})",
      R"(func.func @main(%x: tensor<3x7x4xT>, %i: tensor<5xI>, %u: tensor<3x5x2xT>) -> tensor<3x7x4xT> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 2], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<T>, %b: tensor<T>):
    BODY
  }) : (tensor<3x7x4xT>, tensor<5xI>, tensor<3x5x2xT>) -> tensor<3x7x4xT>
  return %0 : tensor<3x7x4xT>
})",
      R"(func.func @main(%x: tensor<2x5x3xT>, %i: tensor<2x4x1xI>, %u: tensor<2x4x3xT>) -> tensor<2x5x3xT> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>}> ({
  ^bb0(%a: tensor<T>, %b: tensor<T>):
    BODY
  }) : (tensor<2x5x3xT>, tensor<2x4x1xI>, tensor<2x4x3xT>) -> tensor<2x5x3xT>
  return %0 : tensor<2x5x3xT>
})",
  };
  for (std::string_view t : {"f32", "f16", "i32", "ui8", "i1"}) {
    for (std::string_view body : {"add", "maximum", "minimum", "multiply", "replace"}) {
      for (std::string_view index : {"i32", "ui64"}) {
        for (const char* c : cases) {
          std::string text = c;
          const std::string b = body == "replace"
                                    ? std::string("stablehlo.return %b : tensor<T>")
                                    : "%s = stablehlo." + std::string(body) +
                                          " %a, %b : tensor<T>\n    stablehlo.return %s : tensor<T>";
          text.replace(text.find("BODY"), 4, b);
          for (size_t p; (p = text.find("xT>")) != std::string::npos;) text.replace(p, 3, "x" + std::string(t) + ">");
          for (size_t p; (p = text.find("<T>")) != std::string::npos;) text.replace(p, 3, "<" + std::string(t) + ">");
          for (size_t p; (p = text.find("xI>")) != std::string::npos;) text.replace(p, 3, "x" + std::string(index) + ">");
          SCOPED_TRACE(text);
          ExpectMatchesInterpreter(text, kExact);
        }
      }
    }
  }
}

// ---- select_and_scatter ------------------------------------------------------------

TEST(SelectAndScatterTest, MaxPoolGradientsAndOtherSelections) {
  for (std::string_view t : {"f32", "f64", "bf16", "i32", "ui8"}) {
    for (std::string_view select : {"GE", "GT", "LE", "LT"}) {
      for (bool swapped : {false, true}) {
        for (std::string_view scatter : {"add", "maximum"}) {
          const std::string s = "tensor<" + std::string(t) + ">";
          const std::string a = "tensor<2x9x8x" + std::string(t) + ">";
          const std::string src = "tensor<2x5x4x" + std::string(t) + ">";
          const std::string text =
              "func.func @main(%x: " + a + ", %s: " + src + ", %i: " + s + ") -> " + a + " {\n" +
              "  %0 = \"stablehlo.select_and_scatter\"(%x, %s, %i) <{padding = dense<[[0, 0], [1, 1], [1, 0]]> : tensor<3x2xi64>, "
              "window_dimensions = array<i64: 1, 3, 3>, window_strides = array<i64: 1, 2, 2>}> ({\n" +
              "  ^bb0(%p: " + s + ", %q: " + s + "):\n    %c = stablehlo.compare " + std::string(select) +
              (swapped ? ", %q, %p" : ", %p, %q") + " : (" + s + ", " + s + ") -> tensor<i1>\n" +
              "    stablehlo.return %c : tensor<i1>\n  }, {\n  ^bb0(%p: " + s + ", %q: " + s +
              "):\n    %r = stablehlo." + std::string(scatter) + " %p, %q : " + s +
              "\n    stablehlo.return %r : " + s + "\n  }) : (" + a + ", " + src + ", " + s + ") -> " + a +
              "\n  return %0 : " + a + "\n}\n";
          SCOPED_TRACE(text);
          ExpectMatchesInterpreter(text, kExact);
        }
      }
    }
  }
}

// ---- rng_bit_generator -----------------------------------------------------------

std::string RngText(std::string_view algorithm, int64_t state_size, std::string_view output) {
  const std::string st = "tensor<" + std::to_string(state_size) + "xui64>";
  const std::string out = "tensor<" + std::string(output) + ">";
  return "func.func @main(%s: " + st + ") -> (" + st + ", " + out + ") {\n" +
         "  %0, %1 = stablehlo.rng_bit_generator %s, algorithm = " + std::string(algorithm) + " : (" +
         st + ") -> (" + st + ", " + out + ")\n  return %0, %1 : " + st + ", " + out + "\n}\n";
}

TEST(RngBitGeneratorTest, EveryAlgorithmTypeAndShapeGivesTheInterpretersBits) {
  // Shapes: scalar, odd and even splits (THREE_FRY halves the first even
  // dimension, else the largest), sizes that leave a partial Philox block,
  // zero-sized ones.
  const char* shapes[] = {"", "1x", "7x", "8x", "3x5x", "5x4x3x", "3x7x5x", "100x", "0x4x"};
  const char* types[] = {"ui64", "i64", "f64", "ui32", "i32", "f32", "ui16", "f16", "bf16",
                         "ui8", "i8", "i4", "ui2", "f8E4M3FN"};
  struct Algo {
    const char* name;
    std::vector<int64_t> sizes;
  };
  const Algo algos[] = {{"THREE_FRY", {2}}, {"PHILOX", {2, 3}}, {"DEFAULT", {2, 3}}};
  for (const Algo& a : algos) {
    for (int64_t size : a.sizes) {
      for (const char* shape : shapes) {
        for (const char* t : types) {
          const std::string text = RngText(a.name, size, std::string(shape) + t);
          SCOPED_TRACE(text);
          // Counters near the 64-bit wrap exercise Philox's 128-bit carry.
          ir::Literal state = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kU64, {size}));
          for (int64_t i = 0; i < size; ++i) {
            state.SetBits(i, i == 1 ? ~uint64_t{0} - 5 : 0x0123456789ABCDEFull * static_cast<uint64_t>(i + 1));
          }
          std::vector<ir::Literal> args;
          args.push_back(std::move(state));
          ExpectMatchesInterpreter(text, kExact, std::move(args));
        }
      }
    }
  }
}

TEST(RngBitGeneratorTest, LargeOutputsSplitOverThreadsGiveTheSameBits) {
  std::atomic<int> calls{0};
  ParallelFor parallel_for = [&](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    ++calls;
    std::vector<std::thread> threads;
    const int64_t chunk = (n + 2) / 3;
    for (int64_t b = 0; b < n; b += chunk) {
      threads.emplace_back([&fn, b, e = std::min(n, b + chunk)] { fn(b, e); });
    }
    for (auto& t : threads) t.join();
  };
  RunContext context;
  context.parallel_for = &parallel_for;
  for (const char* algorithm : {"THREE_FRY", "PHILOX"}) {
    for (const char* output : {"301x257xui32", "300x100xf64", "3x999xui8"}) {
      ExpectMatchesInterpreter(RngText(algorithm, 2, output), kExact, {}, 7, {}, context);
    }
  }
  EXPECT_GT(calls.load(), 0);
}

// ---- running on a thread pool ----------------------------------------------------

TEST(ParallelTest, ResultsDoNotDependOnTheParallelFor) {
  // A ParallelFor over plain threads, chunks of n / 3.
  std::atomic<int> calls{0};
  ParallelFor parallel_for = [&](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    ++calls;
    std::vector<std::thread> threads;
    const int64_t chunk = (n + 2) / 3;
    for (int64_t b = 0; b < n; b += chunk) {
      threads.emplace_back([&fn, b, e = std::min(n, b + chunk)] { fn(b, e); });
    }
    for (auto& t : threads) t.join();
  };
  RunContext context;
  context.parallel_for = &parallel_for;
  ExpectMatchesInterpreter(MatMul(64, 64, 64, "i32"), kExact, {}, 7, {}, context);
  ExpectMatchesInterpreter(SortText("300x100xf32", 1, "LT"), kExact, {}, 7, {}, context);
  ExpectMatchesInterpreter(Conv("2x12x12x32", "3x3x32x16", "2x12x12x16", "i32",
                                "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "pad = [[1, 1], [1, 1]]"),
                           kExact, {}, 7, {}, context);
  ExpectMatchesInterpreter(
      ReduceWindowText("64x64x16", "32x32x16", "f32", "stablehlo.add",
                       "window_dimensions = array<i64: 3, 3, 1>, window_strides = array<i64: 2, 2, 1>, "
                       "padding = dense<[[1, 0], [1, 0], [0, 0]]> : tensor<3x2xi64>"),
      kExact, {}, 7, {}, context);
  EXPECT_GT(calls.load(), 0);
}

// ---- concurrent runs ------------------------------------------------------------------

TEST(ConcurrencyTest, OneLibraryOpRunsOnSeveralThreadsAtOnce) {
  // Run may be called concurrently: the BLAS path (OpenBLAS from several
  // threads), the FFT (per-run KISS FFT objects) and the sort adapter (one
  // RegionEvaluator per run) must give every thread the single-thread result.
  const std::string texts[] = {MatMul(96, 128, 80, "f32"),
                               Fn("%a: tensor<6x64xcomplex<f32>>", "tensor<6x64xcomplex<f32>>",
                                  "%0 = stablehlo.fft %a, type = FFT, length = [64] : "
                                  "(tensor<6x64xcomplex<f32>>) -> tensor<6x64xcomplex<f32>>"),
                               SortText("8x50xf32", 1, "LT")};
  for (const std::string& text : texts) {
    SCOPED_TRACE(text);
    auto module = frontend::ParseModule(text);
    ASSERT_TRUE(module.ok());
    const ir::Op& op = *(*module)->EntryFunction()->entry()->ops()[0];
    auto library = CreateLibraryOp(op);
    ASSERT_TRUE(library.ok() && *library);
    std::vector<ir::Literal> operands;
    for (size_t i = 0; i < op.num_operands(); ++i) {
      operands.push_back(*eval::RandomLiteral(op.operand(i)->type(), 3 + i));
    }
    std::vector<const void*> in;
    for (const ir::Literal& l : operands) in.push_back(l.bytes().data());
    auto run = [&](ir::Literal& out) {
      void* results[] = {out.mutable_bytes().data()};
      return (*library)->Run(in, results, {});
    };
    ir::Literal expected = *ir::Literal::Create(op.result(0)->type());
    ASSERT_TRUE(run(expected).ok());
    constexpr int kThreads = 4, kRounds = 20;
    std::vector<ir::Literal> outs;
    for (int t = 0; t < kThreads; ++t) outs.push_back(*ir::Literal::Create(op.result(0)->type()));
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < kRounds; ++r) {
          if (!run(outs[t]).ok() || !(outs[t] == expected)) ++mismatches;
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0);
  }
}

// ---- what the library declines -----------------------------------------------------

TEST(CreateLibraryOpTest, ReturnsNullForOpsItDoesNotImplement) {
  auto module = frontend::ParseModule(
      Fn("%a: tensor<4xf32>", "tensor<4xf32>", "%0 = stablehlo.add %a, %a : tensor<4xf32>"));
  ASSERT_TRUE(module.ok());
  auto op = CreateLibraryOp(*(*module)->EntryFunction()->entry()->ops()[0]);
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(*op, nullptr);
}

}  // namespace
}  // namespace jitd::cpu
