// Edge semantics of the elementwise kernels, with hand-computed expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/eval/testing.h"

namespace jitd::eval {
namespace {

using ir::Literal;
using testing::Doubles;
using testing::Ints;
using testing::TensorResult;
using testing::UInts;

constexpr double kInf = std::numeric_limits<double>::infinity();

// `"stablehlo.OP"(%a) {attrs} : (TYPE) -> RESULT` on a constant operand.
StatusOr<Literal> Unary(const std::string& op, const std::string& type, const std::string& values,
                        const std::string& result = "", const std::string& attrs = "") {
  const std::string r = result.empty() ? type : result;
  return TensorResult("func.func @main() -> " + r + " {\n  %a = stablehlo.constant dense<" + values +
                  "> : " + type + "\n  %r = \"" + op + "\"(%a) " + attrs + " : (" + type + ") -> " +
                  r + "\n  return %r : " + r + "\n}\n");
}

// `"stablehlo.OP"(%a, %b) {attrs} : (TYPE, TYPE) -> RESULT` on constants.
StatusOr<Literal> Binary(const std::string& op, const std::string& type, const std::string& lhs,
                         const std::string& rhs, const std::string& result = "",
                         const std::string& attrs = "") {
  const std::string r = result.empty() ? type : result;
  return TensorResult("func.func @main() -> " + r + " {\n  %a = stablehlo.constant dense<" + lhs +
                  "> : " + type + "\n  %b = stablehlo.constant dense<" + rhs + "> : " + type +
                  "\n  %r = \"" + op + "\"(%a, %b) " + attrs + " : (" + type + ", " + type +
                  ") -> " + r + "\n  return %r : " + r + "\n}\n");
}

std::vector<bool> Preds(const Literal& lit) {
  std::vector<bool> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetPred(i));
  return out;
}

float F32At(const Literal& lit, int64_t i) {
  float f;
  std::memcpy(&f, lit.element_ptr(i), 4);
  return f;
}

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                       \
  auto lhs##_or = (expr);                                     \
  ASSERT_TRUE(lhs##_or.ok()) << lhs##_or.status().ToString(); \
  const Literal& lhs = *lhs##_or

// ---- Integer arithmetic ---------------------------------------------------

TEST(ElementwiseTest, IntegerArithmeticWraps) {
  ASSERT_OK_AND_ASSIGN(add,
                       Binary("stablehlo.add", "tensor<3xi8>", "[127, -128, 100]", "[1, -1, 100]"));
  EXPECT_EQ(Ints(add), (std::vector<int64_t>{-128, 127, -56}));
  ASSERT_OK_AND_ASSIGN(mul, Binary("stablehlo.multiply", "tensor<2xi64>",
                                   "[9223372036854775807, -9223372036854775808]", "[2, -1]"));
  EXPECT_EQ(Ints(mul), (std::vector<int64_t>{-2, std::numeric_limits<int64_t>::min()}));
  ASSERT_OK_AND_ASSIGN(sub, Binary("stablehlo.subtract", "tensor<2xui8>", "[0, 5]", "[1, 10]"));
  EXPECT_EQ(UInts(sub), (std::vector<uint64_t>{255, 251}));
  ASSERT_OK_AND_ASSIGN(neg, Unary("stablehlo.negate", "tensor<3xi32>", "[-2147483648, 5, 0]"));
  EXPECT_EQ(Ints(neg), (std::vector<int64_t>{-2147483648, -5, 0}));
  ASSERT_OK_AND_ASSIGN(abs, Unary("stablehlo.abs", "tensor<3xi8>", "[-128, -7, 7]"));
  EXPECT_EQ(Ints(abs), (std::vector<int64_t>{-128, 7, 7}));
}

TEST(ElementwiseTest, IntegerDivisionEdgeCases) {
  // x / 0 = -1, INT_MIN / -1 = INT_MIN; x % 0 = x, INT_MIN % -1 = 0.
  ASSERT_OK_AND_ASSIGN(div, Binary("stablehlo.divide", "tensor<5xi32>",
                                   "[7, -7, -2147483648, -7, 0]", "[0, 2, -1, -2, 0]"));
  EXPECT_EQ(Ints(div), (std::vector<int64_t>{-1, -3, -2147483648, 3, -1}));
  ASSERT_OK_AND_ASSIGN(rem, Binary("stablehlo.remainder", "tensor<5xi32>",
                                   "[7, -7, -2147483648, 7, -7]", "[0, 2, -1, -3, 3]"));
  EXPECT_EQ(Ints(rem), (std::vector<int64_t>{7, -1, 0, 1, -1}));
  ASSERT_OK_AND_ASSIGN(
      div64, Binary("stablehlo.divide", "tensor<2xi64>", "[-9223372036854775808, 9]", "[-1, 0]"));
  EXPECT_EQ(Ints(div64), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1}));
  ASSERT_OK_AND_ASSIGN(
      rem64, Binary("stablehlo.remainder", "tensor<1xi64>", "[-9223372036854775808]", "[-1]"));
  EXPECT_EQ(Ints(rem64), (std::vector<int64_t>{0}));
  ASSERT_OK_AND_ASSIGN(udiv,
                       Binary("stablehlo.divide", "tensor<3xui16>", "[7, 65535, 9]", "[0, 2, 4]"));
  EXPECT_EQ(UInts(udiv), (std::vector<uint64_t>{65535, 32767, 2}));
  ASSERT_OK_AND_ASSIGN(urem, Binary("stablehlo.remainder", "tensor<2xui64>",
                                    "[18446744073709551615, 10]", "[0, 4]"));
  EXPECT_EQ(UInts(urem), (std::vector<uint64_t>{18446744073709551615ull, 2}));
}

TEST(ElementwiseTest, IntegerPower) {
  ASSERT_OK_AND_ASSIGN(p, Binary("stablehlo.power", "tensor<7xi32>", "[2, -1, -1, 1, 2, 0, 3]",
                                 "[10, -3, -2, -5, -1, 0, 21]"));
  // 3^21 = 10460353203 wraps modulo 2^32 to 1870418611.
  EXPECT_EQ(Ints(p), (std::vector<int64_t>{1024, -1, 1, 1, 0, 1, 1870418611}));
  ASSERT_OK_AND_ASSIGN(u, Binary("stablehlo.power", "tensor<2xui8>", "[2, 3]", "[8, 255]"));
  // 2^8 = 256 wraps to 0; 3^255 mod 256 = 171.
  EXPECT_EQ(UInts(u), (std::vector<uint64_t>{0, 171}));
}

TEST(ElementwiseTest, Shifts) {
  // Amounts >= the bit width, or negative (read as unsigned), shift all bits out.
  ASSERT_OK_AND_ASSIGN(shl, Binary("stablehlo.shift_left", "tensor<5xi8>", "[1, 1, 1, -1, 3]",
                                   "[7, 8, -1, 100, 2]"));
  EXPECT_EQ(Ints(shl), (std::vector<int64_t>{-128, 0, 0, 0, 12}));
  ASSERT_OK_AND_ASSIGN(srl, Binary("stablehlo.shift_right_logical", "tensor<4xi8>",
                                   "[-128, -1, -1, 64]", "[7, 8, -3, 1]"));
  EXPECT_EQ(Ints(srl), (std::vector<int64_t>{1, 0, 0, 32}));
  ASSERT_OK_AND_ASSIGN(sra, Binary("stablehlo.shift_right_arithmetic", "tensor<5xi8>",
                                   "[-128, -128, 64, 64, -5]", "[7, 8, 8, -1, 1]"));
  EXPECT_EQ(Ints(sra), (std::vector<int64_t>{-1, -1, 0, 0, -3}));
  // Unsigned: the arithmetic shift still replicates the top bit.
  ASSERT_OK_AND_ASSIGN(usra, Binary("stablehlo.shift_right_arithmetic", "tensor<3xui8>",
                                    "[128, 128, 127]", "[1, 9, 1]"));
  EXPECT_EQ(UInts(usra), (std::vector<uint64_t>{192, 255, 63}));
  ASSERT_OK_AND_ASSIGN(shl64, Binary("stablehlo.shift_left", "tensor<3xui64>", "[1, 1, 1]",
                                     "[63, 64, 18446744073709551615]"));
  EXPECT_EQ(UInts(shl64), (std::vector<uint64_t>{uint64_t{1} << 63, 0, 0}));
}

TEST(ElementwiseTest, BitCounting) {
  ASSERT_OK_AND_ASSIGN(clz,
                       Unary("stablehlo.count_leading_zeros", "tensor<4xi8>", "[0, 1, -1, 16]"));
  EXPECT_EQ(Ints(clz), (std::vector<int64_t>{8, 7, 0, 3}));
  ASSERT_OK_AND_ASSIGN(clz64, Unary("stablehlo.count_leading_zeros", "tensor<2xui64>", "[0, 1]"));
  EXPECT_EQ(UInts(clz64), (std::vector<uint64_t>{64, 63}));
  ASSERT_OK_AND_ASSIGN(pop, Unary("stablehlo.popcnt", "tensor<3xi16>", "[-1, 0, 257]"));
  EXPECT_EQ(Ints(pop), (std::vector<int64_t>{16, 0, 2}));
  ASSERT_OK_AND_ASSIGN(nt, Unary("stablehlo.not", "tensor<2xui8>", "[0, 15]"));
  EXPECT_EQ(UInts(nt), (std::vector<uint64_t>{255, 240}));
  ASSERT_OK_AND_ASSIGN(bnot, Unary("stablehlo.not", "tensor<2xi1>", "[true, false]"));
  EXPECT_EQ(Preds(bnot), (std::vector<bool>{false, true}));
}

TEST(ElementwiseTest, BooleanArithmetic) {
  ASSERT_OK_AND_ASSIGN(add, Binary("stablehlo.add", "tensor<4xi1>", "[true, true, false, false]",
                                   "[true, false, true, false]"));
  EXPECT_EQ(Preds(add), (std::vector<bool>{true, true, true, false}));
  ASSERT_OK_AND_ASSIGN(mul, Binary("stablehlo.multiply", "tensor<4xi1>",
                                   "[true, true, false, false]", "[true, false, true, false]"));
  EXPECT_EQ(Preds(mul), (std::vector<bool>{true, false, false, false}));
  ASSERT_OK_AND_ASSIGN(x, Binary("stablehlo.xor", "tensor<4xi1>", "[true, true, false, false]",
                                 "[true, false, true, false]"));
  EXPECT_EQ(Preds(x), (std::vector<bool>{false, true, true, false}));
}

// ---- Float semantics --------------------------------------------------------

TEST(ElementwiseTest, MaximumAndMinimumPropagateNaNAndOrderZeros) {
  ASSERT_OK_AND_ASSIGN(mx, Binary("stablehlo.maximum", "tensor<4xf32>",
                                  "[0x7FC00000, 1.0, -0.0, 2.0]", "[1.0, 0x7FC00000, 0.0, -3.0]"));
  EXPECT_TRUE(std::isnan(mx.GetDouble(0)));
  EXPECT_TRUE(std::isnan(mx.GetDouble(1)));
  EXPECT_FALSE(std::signbit(mx.GetDouble(2)));
  EXPECT_EQ(mx.GetDouble(3), 2.0);
  ASSERT_OK_AND_ASSIGN(mn, Binary("stablehlo.minimum", "tensor<3xf64>",
                                  "[0.0, 0x7FF8000000000000, 2.0]", "[-0.0, 1.0, -3.0]"));
  EXPECT_TRUE(std::signbit(mn.GetDouble(0)));
  EXPECT_TRUE(std::isnan(mn.GetDouble(1)));
  EXPECT_EQ(mn.GetDouble(2), -3.0);
  // Complex: lexicographic on (real, imag).
  ASSERT_OK_AND_ASSIGN(cm, Binary("stablehlo.maximum", "tensor<2xcomplex<f32>>",
                                  "[(1.0, 5.0), (2.0, 1.0)]", "[(1.0, 6.0), (1.0, 9.0)]"));
  EXPECT_EQ(cm.GetComplex(0), std::complex<double>(1, 6));
  EXPECT_EQ(cm.GetComplex(1), std::complex<double>(2, 1));
}

TEST(ElementwiseTest, FloatRemainderKeepsTheDividendSign) {
  ASSERT_OK_AND_ASSIGN(r, Binary("stablehlo.remainder", "tensor<4xf32>", "[5.5, -5.5, 5.5, 1.0]",
                                 "[2.0, 2.0, -2.0, 0.0]"));
  EXPECT_EQ(r.GetDouble(0), 1.5);
  EXPECT_EQ(r.GetDouble(1), -1.5);
  EXPECT_EQ(r.GetDouble(2), 1.5);
  EXPECT_TRUE(std::isnan(r.GetDouble(3)));
}

TEST(ElementwiseTest, Rounding) {
  const std::string values = "[2.5, -2.5, 0.5, 1.5, -0.4, 3.7]";
  ASSERT_OK_AND_ASSIGN(even, Unary("stablehlo.round_nearest_even", "tensor<6xf32>", values));
  EXPECT_EQ(Doubles(even), (std::vector<double>{2, -2, 0, 2, -0.0, 4}));
  EXPECT_TRUE(std::signbit(even.GetDouble(4)));
  ASSERT_OK_AND_ASSIGN(afz, Unary("stablehlo.round_nearest_afz", "tensor<6xf32>", values));
  EXPECT_EQ(Doubles(afz), (std::vector<double>{3, -3, 1, 2, -0.0, 4}));
  ASSERT_OK_AND_ASSIGN(ceil, Unary("stablehlo.ceil", "tensor<2xbf16>", "[-0.5, 1.25]"));
  EXPECT_EQ(Doubles(ceil), (std::vector<double>{-0.0, 2}));
  EXPECT_TRUE(std::signbit(ceil.GetDouble(0)));
  ASSERT_OK_AND_ASSIGN(floor, Unary("stablehlo.floor", "tensor<2xf16>", "[-0.5, 1.25]"));
  EXPECT_EQ(Doubles(floor), (std::vector<double>{-1, 1}));
}

TEST(ElementwiseTest, Sign) {
  ASSERT_OK_AND_ASSIGN(
      s, Unary("stablehlo.sign", "tensor<5xf32>", "[-0.0, 0.0, -3.0, 7.0, 0x7FC00000]"));
  EXPECT_TRUE(std::signbit(s.GetDouble(0)) && s.GetDouble(0) == 0);
  EXPECT_TRUE(!std::signbit(s.GetDouble(1)) && s.GetDouble(1) == 0);
  EXPECT_EQ(s.GetDouble(2), -1);
  EXPECT_EQ(s.GetDouble(3), 1);
  EXPECT_TRUE(std::isnan(s.GetDouble(4)));
  ASSERT_OK_AND_ASSIGN(i, Unary("stablehlo.sign", "tensor<3xi32>", "[-5, 0, 9]"));
  EXPECT_EQ(Ints(i), (std::vector<int64_t>{-1, 0, 1}));
  ASSERT_OK_AND_ASSIGN(
      c, Unary("stablehlo.sign", "tensor<2xcomplex<f64>>", "[(3.0, 4.0), (0.0, 0.0)]"));
  EXPECT_NEAR(c.GetComplex(0).real(), 0.6, 1e-15);
  EXPECT_NEAR(c.GetComplex(0).imag(), 0.8, 1e-15);
  EXPECT_EQ(c.GetComplex(1), std::complex<double>(0, 0));
}

TEST(ElementwiseTest, AbsOfComplexIsReal) {
  ASSERT_OK_AND_ASSIGN(a, Unary("stablehlo.abs", "tensor<2xcomplex<f32>>",
                                "[(3.0, -4.0), (0.0, 0.0)]", "tensor<2xf32>"));
  EXPECT_EQ(Doubles(a), (std::vector<double>{5, 0}));
  ASSERT_OK_AND_ASSIGN(
      re, Unary("stablehlo.real", "tensor<1xcomplex<f64>>", "[(1.5, -2.5)]", "tensor<1xf64>"));
  EXPECT_EQ(re.GetDouble(0), 1.5);
  ASSERT_OK_AND_ASSIGN(
      im, Unary("stablehlo.imag", "tensor<1xcomplex<f64>>", "[(1.5, -2.5)]", "tensor<1xf64>"));
  EXPECT_EQ(im.GetDouble(0), -2.5);
  ASSERT_OK_AND_ASSIGN(im_real, Unary("stablehlo.imag", "tensor<1xf32>", "[7.0]"));
  EXPECT_EQ(im_real.GetDouble(0), 0);
}

TEST(ElementwiseTest, TranscendentalsAreAccurate) {
  // exp(1) and log(10) in f64 to the last bit; logistic saturates cleanly.
  ASSERT_OK_AND_ASSIGN(e, Unary("stablehlo.exponential", "tensor<1xf64>", "[1.0]"));
  EXPECT_EQ(e.GetDouble(0), 2.718281828459045);
  ASSERT_OK_AND_ASSIGN(l, Unary("stablehlo.log", "tensor<1xf64>", "[10.0]"));
  EXPECT_EQ(l.GetDouble(0), 2.302585092994046);
  ASSERT_OK_AND_ASSIGN(lg, Unary("stablehlo.logistic", "tensor<3xf32>", "[0.0, -1000.0, 1000.0]"));
  EXPECT_EQ(Doubles(lg), (std::vector<double>{0.5, 0, 1}));
  ASSERT_OK_AND_ASSIGN(rs, Unary("stablehlo.rsqrt", "tensor<3xf32>", "[4.0, 0.0, -1.0]"));
  EXPECT_EQ(rs.GetDouble(0), 0.5);
  EXPECT_EQ(rs.GetDouble(1), kInf);
  EXPECT_TRUE(std::isnan(rs.GetDouble(2)));
  ASSERT_OK_AND_ASSIGN(cb, Unary("stablehlo.cbrt", "tensor<2xf64>", "[-27.0, 8.0]"));
  EXPECT_EQ(Doubles(cb), (std::vector<double>{-3, 2}));
  // log1p and expm1 keep their precision near zero.
  ASSERT_OK_AND_ASSIGN(l1p, Unary("stablehlo.log_plus_one", "tensor<1xf64>", "[1.0e-20]"));
  EXPECT_EQ(l1p.GetDouble(0), 1e-20);
  ASSERT_OK_AND_ASSIGN(
      em1, Unary("stablehlo.exponential_minus_one", "tensor<1xcomplex<f64>>", "[(1.0e-20, 0.0)]"));
  EXPECT_EQ(em1.GetComplex(0), std::complex<double>(1e-20, 0));
}

TEST(ElementwiseTest, ComplexFunctions) {
  ASSERT_OK_AND_ASSIGN(
      e, Unary("stablehlo.exponential", "tensor<1xcomplex<f64>>", "[(0.0, 3.141592653589793)]"));
  EXPECT_EQ(e.GetComplex(0).real(), -1);
  EXPECT_NEAR(e.GetComplex(0).imag(), 1.2246467991473532e-16, 1e-30);
  ASSERT_OK_AND_ASSIGN(s, Unary("stablehlo.sqrt", "tensor<1xcomplex<f32>>", "[(-4.0, 0.0)]"));
  EXPECT_EQ(s.GetComplex(0), std::complex<double>(0, 2));
  ASSERT_OK_AND_ASSIGN(
      l1p, Unary("stablehlo.log_plus_one", "tensor<1xcomplex<f64>>", "[(1.0e-20, 1.0e-20)]"));
  EXPECT_EQ(l1p.GetComplex(0).real(), 1e-20);
  EXPECT_EQ(l1p.GetComplex(0).imag(), 1e-20);
  // Complex power: 0^0 = 1, 0^2 = 0, i^2 = -1.
  ASSERT_OK_AND_ASSIGN(
      p, Binary("stablehlo.power", "tensor<3xcomplex<f64>>", "[(0.0, 0.0), (0.0, 0.0), (0.0, 1.0)]",
                "[(0.0, 0.0), (2.0, 0.0), (2.0, 0.0)]"));
  EXPECT_EQ(p.GetComplex(0), std::complex<double>(1, 0));
  EXPECT_EQ(p.GetComplex(1), std::complex<double>(0, 0));
  EXPECT_NEAR(p.GetComplex(2).real(), -1, 1e-15);
  EXPECT_NEAR(p.GetComplex(2).imag(), 0, 1e-15);
  ASSERT_OK_AND_ASSIGN(
      d, Binary("stablehlo.divide", "tensor<1xcomplex<f32>>", "[(1.0, 2.0)]", "[(3.0, 4.0)]"));
  EXPECT_NEAR(d.GetComplex(0).real(), 0.44, 1e-7);
  EXPECT_NEAR(d.GetComplex(0).imag(), 0.08, 1e-7);
}

// ---- convert ----------------------------------------------------------------

TEST(ElementwiseTest, FloatToIntegerTruncatesAndSaturates) {
  ASSERT_OK_AND_ASSIGN(
      i, Unary("stablehlo.convert", "tensor<7xf32>",
               "[2.9, -2.9, 0x7FC00000, 1.0e10, -1.0e10, 0x7F800000, -0.5]", "tensor<7xi32>"));
  EXPECT_EQ(Ints(i), (std::vector<int64_t>{2, -2, 0, 2147483647, -2147483648, 2147483647, 0}));
  ASSERT_OK_AND_ASSIGN(u, Unary("stablehlo.convert", "tensor<5xf64>",
                                "[-3.7, 300.5, 255.9, -0.9, 1.0e30]", "tensor<5xui8>"));
  EXPECT_EQ(UInts(u), (std::vector<uint64_t>{0, 255, 255, 0, 255}));
  ASSERT_OK_AND_ASSIGN(i64, Unary("stablehlo.convert", "tensor<4xf64>",
                                  "[9.3e18, -9.3e18, 9.2233720368547758e18, 9.2233720368547748e18]",
                                  "tensor<4xi64>"));
  // 2^63 saturates; the largest double below it converts exactly.
  EXPECT_EQ(Ints(i64), (std::vector<int64_t>{
                           std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                           std::numeric_limits<int64_t>::max(), 9223372036854774784}));
  ASSERT_OK_AND_ASSIGN(
      u64, Unary("stablehlo.convert", "tensor<2xf32>", "[1.0e20, 1.8e19]", "tensor<2xui64>"));
  EXPECT_EQ(UInts(u64), (std::vector<uint64_t>{~uint64_t{0}, 18000000404716257280ull}));
}

TEST(ElementwiseTest, IntegerToFloatRoundsOnce) {
  // 2^60 + 2^36 + 1 is just above the half-way point between two f32 values
  // (2^60 and 2^60 + 2^37): it rounds up. Rounding to f64 first would land
  // on the tie and round down to even.
  ASSERT_OK_AND_ASSIGN(
      f, Unary("stablehlo.convert", "tensor<3xi64>",
               "[1152921573326323713, -1152921573326323713, 16777217]", "tensor<3xf32>"));
  EXPECT_EQ(F32At(f, 0), 0x1p60f + 0x1p37f);
  EXPECT_EQ(F32At(f, 1), -(0x1p60f + 0x1p37f));
  EXPECT_EQ(F32At(f, 2), 16777216.0f);  // tie to even
  ASSERT_OK_AND_ASSIGN(
      u, Unary("stablehlo.convert", "tensor<1xui64>", "[18446744073709551615]", "tensor<1xf32>"));
  EXPECT_EQ(F32At(u, 0), 0x1p64f);
  ASSERT_OK_AND_ASSIGN(
      h, Unary("stablehlo.convert", "tensor<2xi32>", "[70000, 2049]", "tensor<2xf16>"));
  EXPECT_EQ(h.GetDouble(0), kInf);
  EXPECT_EQ(h.GetDouble(1), 2048);
}

TEST(ElementwiseTest, ConvertBooleansAndComplex) {
  ASSERT_OK_AND_ASSIGN(b, Unary("stablehlo.convert", "tensor<4xf32>",
                                "[0.0, -0.0, 0x7FC00000, 0.1]", "tensor<4xi1>"));
  EXPECT_EQ(Preds(b), (std::vector<bool>{false, false, true, true}));
  ASSERT_OK_AND_ASSIGN(
      fb, Unary("stablehlo.convert", "tensor<2xi1>", "[true, false]", "tensor<2xf32>"));
  EXPECT_EQ(Doubles(fb), (std::vector<double>{1, 0}));
  ASSERT_OK_AND_ASSIGN(cr, Unary("stablehlo.convert", "tensor<2xcomplex<f32>>",
                                 "[(1.5, 2.0), (0.0, 3.0)]", "tensor<2xf64>"));
  EXPECT_EQ(Doubles(cr), (std::vector<double>{1.5, 0}));
  ASSERT_OK_AND_ASSIGN(cb, Unary("stablehlo.convert", "tensor<2xcomplex<f32>>",
                                 "[(1.5, 2.0), (0.0, 3.0)]", "tensor<2xi1>"));
  EXPECT_EQ(Preds(cb), (std::vector<bool>{true, false}));
  ASSERT_OK_AND_ASSIGN(
      ic, Unary("stablehlo.convert", "tensor<1xi8>", "[-5]", "tensor<1xcomplex<f64>>"));
  EXPECT_EQ(ic.GetComplex(0), std::complex<double>(-5, 0));
  ASSERT_OK_AND_ASSIGN(cc, Unary("stablehlo.convert", "tensor<1xcomplex<f64>>", "[(0.1, -0.2)]",
                                 "tensor<1xcomplex<f32>>"));
  EXPECT_EQ(cc.GetComplex(0), std::complex<double>(0.1f, -0.2f));
  ASSERT_OK_AND_ASSIGN(ii,
                       Unary("stablehlo.convert", "tensor<2xi32>", "[300, -1]", "tensor<2xui8>"));
  EXPECT_EQ(UInts(ii), (std::vector<uint64_t>{44, 255}));
}

// ---- bitcast_convert and reduce_precision -------------------------------------

TEST(ElementwiseTest, BitcastConvertAcrossWidths) {
  // The spec's example: little-endian halves of an f64.
  ASSERT_OK_AND_ASSIGN(
      h, Unary("stablehlo.bitcast_convert", "tensor<f64>", "0x0123456789ABCDEF", "tensor<4xf16>"));
  EXPECT_EQ(h.GetBits(0), 0xCDEFu);
  EXPECT_EQ(h.GetBits(1), 0x89ABu);
  EXPECT_EQ(h.GetBits(2), 0x4567u);
  EXPECT_EQ(h.GetBits(3), 0x0123u);
  ASSERT_OK_AND_ASSIGN(j, Unary("stablehlo.bitcast_convert", "tensor<2x2xi16>", "[[1, 2], [-1, 0]]",
                                "tensor<2xi32>"));
  EXPECT_EQ(Ints(j), (std::vector<int64_t>{0x00020001, 0x0000FFFF}));
  ASSERT_OK_AND_ASSIGN(
      f, Unary("stablehlo.bitcast_convert", "tensor<1xf32>", "[1.0]", "tensor<1xui32>"));
  EXPECT_EQ(f.GetUInt(0), 0x3F800000u);
  // Sub-byte: an i8 splits into two i4 nibbles, low nibble first.
  ASSERT_OK_AND_ASSIGN(
      n, Unary("stablehlo.bitcast_convert", "tensor<1xi8>", "[-16]", "tensor<1x2xi4>"));
  EXPECT_EQ(Ints(n), (std::vector<int64_t>{0, -1}));
  ASSERT_OK_AND_ASSIGN(
      m, Unary("stablehlo.bitcast_convert", "tensor<2xui4>", "[15, 1]", "tensor<ui8>"));
  EXPECT_EQ(m.GetUInt(0), 0x1Fu);
  ASSERT_OK_AND_ASSIGN(c, Unary("stablehlo.bitcast_convert", "tensor<2xcomplex<f32>>",
                                "[(1.0, 2.0), (3.0, 4.0)]", "tensor<complex<f64>>"));
  double parts[2];
  std::memcpy(parts, c.element_ptr(0), 16);
  uint64_t real_bits;
  std::memcpy(&real_bits, &parts[0], 8);
  EXPECT_EQ(real_bits, 0x400000003F800000u);  // f32 1.0 low, f32 2.0 high
}

TEST(ElementwiseTest, ReducePrecision) {
  const std::string attrs = "{exponent_bits = 5 : i32, mantissa_bits = 10 : i32}";
  // To f16's format: round to nearest even, overflow to inf, flush tiny
  // values to signed zero, keep NaN.
  ASSERT_OK_AND_ASSIGN(
      r,
      Unary("stablehlo.reduce_precision", "tensor<6xf32>",
            "[1.00048828125, 1.000732421875, 70000.0, -1.0e-8, 0x7FC00001, 65504.0]", "", attrs));
  EXPECT_EQ(r.GetDouble(0), 1.0);           // 1 + 2^-11: tie, to even
  EXPECT_EQ(r.GetDouble(1), 1.0009765625);  // 1 + 3 * 2^-12: rounds up
  EXPECT_EQ(r.GetDouble(2), kInf);
  EXPECT_EQ(r.GetDouble(3), 0);
  EXPECT_TRUE(std::signbit(r.GetDouble(3)));
  EXPECT_EQ(r.GetBits(4), 0x7FC00001u);
  EXPECT_EQ(r.GetDouble(5), 65504.0);
  // bf16-like reduction of f64 (8 exponent bits, 7 mantissa bits).
  ASSERT_OK_AND_ASSIGN(
      b, Unary("stablehlo.reduce_precision", "tensor<2xf64>", "[1.00390625, 3.0e39]", "",
               "{exponent_bits = 8 : i32, mantissa_bits = 7 : i32}"));
  EXPECT_EQ(b.GetDouble(0), 1.0);  // 1 + 2^-8 is a tie
  EXPECT_EQ(b.GetDouble(1), kInf);
}

// ---- compare, select, clamp ---------------------------------------------------

TEST(ElementwiseTest, CompareFloatAndTotalOrder) {
  const std::string lhs = "[-0.0, 0x7FC00000, 0x7FC00000, 1.0, 0xFFC00000]";
  const std::string rhs = "[0.0, 0x7FC00000, 1.0, 2.0, 0xFF800000]";
  auto cmp = [&](const std::string& dir, const std::string& type) {
    return Binary("stablehlo.compare", "tensor<5xf32>", lhs, rhs, "tensor<5xi1>",
                  "{comparison_direction = #stablehlo<comparison_direction " + dir +
                      ">, compare_type = #stablehlo<comparison_type " + type + ">}");
  };
  ASSERT_OK_AND_ASSIGN(eq, cmp("EQ", "FLOAT"));
  EXPECT_EQ(Preds(eq), (std::vector<bool>{true, false, false, false, false}));
  ASSERT_OK_AND_ASSIGN(ne, cmp("NE", "FLOAT"));
  EXPECT_EQ(Preds(ne), (std::vector<bool>{false, true, true, true, true}));
  ASSERT_OK_AND_ASSIGN(lt, cmp("LT", "TOTALORDER"));
  // -0 < +0; NaN = NaN; +NaN > 1; -NaN < -inf.
  EXPECT_EQ(Preds(lt), (std::vector<bool>{true, false, false, true, true}));
  ASSERT_OK_AND_ASSIGN(teq, cmp("EQ", "TOTALORDER"));
  EXPECT_EQ(Preds(teq), (std::vector<bool>{false, true, false, false, false}));
}

TEST(ElementwiseTest, CompareDefaultsPerElementType) {
  const std::string attrs = "{comparison_direction = #stablehlo<comparison_direction LT>}";
  ASSERT_OK_AND_ASSIGN(
      s, Binary("stablehlo.compare", "tensor<2xi8>", "[-1, 1]", "[1, -1]", "tensor<2xi1>", attrs));
  EXPECT_EQ(Preds(s), (std::vector<bool>{true, false}));
  ASSERT_OK_AND_ASSIGN(u, Binary("stablehlo.compare", "tensor<2xui8>", "[255, 1]", "[1, 255]",
                                 "tensor<2xi1>", attrs));
  EXPECT_EQ(Preds(u), (std::vector<bool>{false, true}));
  ASSERT_OK_AND_ASSIGN(b, Binary("stablehlo.compare", "tensor<2xi1>", "[false, true]",
                                 "[true, false]", "tensor<2xi1>", attrs));
  EXPECT_EQ(Preds(b), (std::vector<bool>{true, false}));
  ASSERT_OK_AND_ASSIGN(c, Binary("stablehlo.compare", "tensor<3xcomplex<f32>>",
                                 "[(1.0, 5.0), (1.0, 1.0), (0.0, 9.0)]",
                                 "[(1.0, 6.0), (1.0, 1.0), (1.0, 0.0)]", "tensor<3xi1>", attrs));
  EXPECT_EQ(Preds(c), (std::vector<bool>{true, false, true}));
}

TEST(ElementwiseTest, SelectWithScalarAndElementwisePredicates) {
  auto r = TensorResult(R"(
func.func @main() -> (tensor<3xi32>) {
  %p = stablehlo.constant dense<false> : tensor<i1>
  %q = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>
  %s = "stablehlo.select"(%p, %a, %b) : (tensor<i1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %t = "stablehlo.select"(%q, %a, %s) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %t : tensor<3xi32>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Ints(*r), (std::vector<int64_t>{1, 20, 3}));
}

TEST(ElementwiseTest, ClampBroadcastsScalarBounds) {
  auto r = TensorResult(R"(
func.func @main() -> (tensor<4xf32>) {
  %lo = stablehlo.constant dense<-1.0> : tensor<f32>
  %x = stablehlo.constant dense<[-5.0, 0.5, 9.0, 0x7FC00000]> : tensor<4xf32>
  %hi = stablehlo.constant dense<[2.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %c = "stablehlo.clamp"(%lo, %x, %hi) : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->GetDouble(0), -1);
  EXPECT_EQ(r->GetDouble(1), 0.5);
  EXPECT_EQ(r->GetDouble(2), 3);
  EXPECT_TRUE(std::isnan(r->GetDouble(3)));
  auto u = TensorResult(R"(
func.func @main() -> (tensor<3xui8>) {
  %lo = stablehlo.constant dense<10> : tensor<ui8>
  %x = stablehlo.constant dense<[5, 200, 50]> : tensor<3xui8>
  %hi = stablehlo.constant dense<100> : tensor<ui8>
  %c = "stablehlo.clamp"(%lo, %x, %hi) : (tensor<ui8>, tensor<3xui8>, tensor<ui8>) -> tensor<3xui8>
  return %c : tensor<3xui8>
})");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(UInts(*u), (std::vector<uint64_t>{10, 100, 50}));
}

// ---- CHLO ---------------------------------------------------------------------

TEST(ElementwiseTest, ChloSpecialFunctions) {
  ASSERT_OK_AND_ASSIGN(lg, Unary("chlo.lgamma", "tensor<4xf64>", "[0.0, -2.0, 3.0, 0.5]"));
  EXPECT_EQ(lg.GetDouble(0), kInf);
  EXPECT_EQ(lg.GetDouble(1), kInf);
  EXPECT_NEAR(lg.GetDouble(2), std::log(2.0), 1e-15);
  EXPECT_NEAR(lg.GetDouble(3), 0.5723649429247001, 1e-15);  // log(sqrt(pi))
  ASSERT_OK_AND_ASSIGN(dg, Unary("chlo.digamma", "tensor<3xf64>", "[1.0, 0.0, -1.0]"));
  EXPECT_NEAR(dg.GetDouble(0), -0.5772156649015329, 1e-15);  // -Euler's gamma
  EXPECT_TRUE(std::isnan(dg.GetDouble(1)));
  EXPECT_TRUE(std::isnan(dg.GetDouble(2)));
  ASSERT_OK_AND_ASSIGN(ei, Unary("chlo.erf_inv", "tensor<4xf32>", "[1.0, -1.0, 2.0, 0.5]"));
  EXPECT_EQ(ei.GetDouble(0), kInf);
  EXPECT_EQ(ei.GetDouble(1), -kInf);
  EXPECT_TRUE(std::isnan(ei.GetDouble(2)));
  EXPECT_NEAR(ei.GetDouble(3), 0.4769362762044699, 1e-7);
  ASSERT_OK_AND_ASSIGN(erf, Unary("chlo.erf", "tensor<2xf64>", "[0.5, -3.0]"));
  EXPECT_NEAR(erf.GetDouble(0), 0.5204998778130465, 1e-16);
  ASSERT_OK_AND_ASSIGN(erfc, Unary("chlo.erfc", "tensor<1xf64>", "[10.0]"));
  EXPECT_NEAR(erfc.GetDouble(0) / 2.088487583762545e-45, 1, 1e-14);
  ASSERT_OK_AND_ASSIGN(i1e, Unary("chlo.bessel_i1e", "tensor<4xf64>", "[1.0, -1.0, 0.0, 1.0e6]"));
  EXPECT_NEAR(i1e.GetDouble(0), 0.2079104153497085, 1e-15);
  EXPECT_NEAR(i1e.GetDouble(1), -0.2079104153497085, 1e-15);
  EXPECT_EQ(i1e.GetDouble(2), 0);
  EXPECT_NEAR(i1e.GetDouble(3), 3.989421307980308e-4, 1e-17);  // asymptotic series
  const double pi2_6 = M_PI * M_PI / 6;
  ASSERT_OK_AND_ASSIGN(
      z, Binary("chlo.zeta", "tensor<4xf64>", "[2.0, 1.0, 0.5, 3.0]", "[1.0, 1.0, 1.0, -2.0]"));
  EXPECT_NEAR(z.GetDouble(0), pi2_6, 1e-15);
  EXPECT_EQ(z.GetDouble(1), kInf);
  EXPECT_TRUE(std::isnan(z.GetDouble(2)));
  EXPECT_EQ(z.GetDouble(3), kInf);
  ASSERT_OK_AND_ASSIGN(
      pg, Binary("chlo.polygamma", "tensor<3xf64>", "[1.0, 0.0, 1.5]", "[1.0, 1.0, 1.0]"));
  EXPECT_NEAR(pg.GetDouble(0), pi2_6, 1e-15);
  EXPECT_NEAR(pg.GetDouble(1), -0.5772156649015329, 1e-15);
  EXPECT_TRUE(std::isnan(pg.GetDouble(2)));
}

// zeta and polygamma against values that follow from identities, with the
// constants they need written out: pi, zeta(3) (Apery's constant), zeta(5),
// Catalan's constant G and the Stieltjes constants gamma_0, gamma_1.
constexpr long double kPi = std::numbers::pi_v<long double>;
constexpr long double kZeta3 = 1.20205690315959428539973816151144999L;
constexpr long double kZeta5 = 1.03692775514336992633136548645703417L;
constexpr long double kCatalan = 0.91596559417721901505460351493238411L;
constexpr long double kEulerGamma = 0.57721566490153286060651209008240243L;
constexpr long double kStieltjes1 = -0.07281584548367672486058637587490131L;

void ExpectRelative(double got, long double want, double tolerance) {
  EXPECT_LE(std::fabs((got - want) / want), tolerance) << "got " << got << ", want " << want;
}

TEST(ElementwiseTest, ChloZetaAgreesWithClosedForms) {
  // zeta(2n, 1) from Euler's values; zeta(s, 1/2) = (2^s - 1) zeta(s);
  // zeta(s, 2) = zeta(s) - 1; zeta(2, 1/4) = pi^2 + 8G and
  // zeta(2, 3/4) = pi^2 - 8G; sum_{r=1..4} zeta(s, r/4) = 4^s zeta(s) gives
  // zeta(3, 1/4) + zeta(3, 3/4) = 56 zeta(3) (checked below); for negative
  // q the first terms are peeled by hand: zeta(2, -1/2) = 4 + zeta(2, 1/2)
  // and zeta(3, -3/2) = -8/27 - 8 + zeta(3, 1/2).
  const std::string s = "[2.0, 4.0, 6.0, 8.0, 3.0, 5.0, 2.0, 4.0, 5.0, 2.0, 2.0, 2.0, 2.0, 3.0]";
  const std::string q =
      "[1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 2.0, 0.25, 0.75, -0.5, -1.5]";
  ASSERT_OK_AND_ASSIGN(z, Binary("chlo.zeta", "tensor<14xf64>", s, q));
  const long double pi2 = kPi * kPi;
  const long double want[] = {pi2 / 6,
                              pi2 * pi2 / 90,
                              pi2 * pi2 * pi2 / 945,
                              pi2 * pi2 * pi2 * pi2 / 9450,
                              kZeta3,
                              31 * kZeta5,
                              3 * pi2 / 6,
                              15 * pi2 * pi2 / 90,
                              31 * kZeta5,
                              pi2 / 6 - 1,
                              pi2 + 8 * kCatalan,
                              pi2 - 8 * kCatalan,
                              4 + 3 * pi2 / 6,
                              -8.0L / 27 - 8 + 7 * kZeta3};
  for (int i = 0; i < 14; ++i) {
    SCOPED_TRACE(i);
    ExpectRelative(z.GetDouble(i), want[i], 4e-16);
  }
  ASSERT_OK_AND_ASSIGN(quarters,
                       Binary("chlo.zeta", "tensor<2xf64>", "[3.0, 3.0]", "[0.25, 0.75]"));
  ExpectRelative(quarters.GetDouble(0) + quarters.GetDouble(1), 56 * kZeta3, 4e-16);
}

TEST(ElementwiseTest, ChloZetaAcrossItsRange) {
  // zeta(s, q) - zeta(s, q + 1) = q^-s, for q small, moderate and large and
  // s near 1, moderate and large (q and q + 1 exact in binary).
  const std::string s = "[1.0625, 1.0625, 2.5, 2.5, 3.5, 3.5, 20.0, 20.0, 7.0, 7.0]";
  const std::string q = "[0.375, 1.375, 0.375, 1.375, 1000.125, 1001.125, 0.875, 1.875, "
                        "-2.25, -1.25]";
  ASSERT_OK_AND_ASSIGN(z, Binary("chlo.zeta", "tensor<10xf64>", s, q));
  const double exponent[] = {1.0625, 2.5, 3.5, 20.0, 7.0};
  const double base[] = {0.375, 0.375, 1000.125, 0.875, -2.25};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    const long double step = std::pow(static_cast<long double>(base[i]), -exponent[i]);
    const double difference = z.GetDouble(2 * i) - z.GetDouble(2 * i + 1);
    // The two values round separately: allow an ULP of the larger.
    const double larger =
        std::max(std::fabs(z.GetDouble(2 * i)), std::fabs(z.GetDouble(2 * i + 1)));
    EXPECT_NEAR(difference, static_cast<double>(step), 3e-16 * larger);
  }
  // Near the pole: zeta(1 + e, 1) = 1/e + gamma_0 - gamma_1 e + O(e^2).
  // Far from it: zeta(40, 1) = 1 + 2^-40 + 3^-40 + O(4^-40), and
  // zeta(30, 2) is a short direct sum.
  ASSERT_OK_AND_ASSIGN(
      edges, Binary("chlo.zeta", "tensor<3xf64>", "[1.00000095367431640625, 40.0, 30.0]",
                    "[1.0, 1.0, 2.0]"));
  const long double e = 1.0L / (1 << 20);
  ExpectRelative(edges.GetDouble(0), 1 / e + kEulerGamma - kStieltjes1 * e, 3e-16);
  ExpectRelative(edges.GetDouble(1), 1 + std::pow(2.0L, -40) + std::pow(3.0L, -40), 2e-16);
  long double direct = 0;
  for (int k = 200; k >= 2; --k) direct += std::pow(static_cast<long double>(k), -30);
  ExpectRelative(edges.GetDouble(2), direct, 2e-16);
  // f32 operands are computed the same way and rounded once.
  ASSERT_OK_AND_ASSIGN(f, Binary("chlo.zeta", "tensor<2xf32>", "[2.0, 4.0]", "[1.0, 0.5]"));
  EXPECT_EQ(F32At(f, 0), static_cast<float>(kPi * kPi / 6));
  EXPECT_EQ(F32At(f, 1), static_cast<float>(kPi * kPi * kPi * kPi / 6));
}

TEST(ElementwiseTest, ChloZetaDomain) {
  // NaN in; s = 1 (pole); s < 1; q = 0 and q = -3 (poles); negative q with
  // a non-integer s; infinite s or q (the limits).
  const std::string nan = "0x7FF8000000000000";
  const std::string inf = "0x7FF0000000000000";
  const std::string s = "[" + nan + ", 2.0, 1.0, 0.5, -3.0, 2.0, 2.0, 2.5, " + inf + ", " + inf +
                        ", " + inf + ", 2.0, 1.0]";
  const std::string q = "[1.0, " + nan + ", 3.0, 1.0, 1.0, 0.0, -3.0, -0.5, 1.0, 0.5, 2.0, " +
                        inf + ", -0.5]";
  ASSERT_OK_AND_ASSIGN(z, Binary("chlo.zeta", "tensor<13xf64>", s, q));
  EXPECT_TRUE(std::isnan(z.GetDouble(0)));
  EXPECT_TRUE(std::isnan(z.GetDouble(1)));
  EXPECT_EQ(z.GetDouble(2), kInf);
  EXPECT_TRUE(std::isnan(z.GetDouble(3)));
  EXPECT_TRUE(std::isnan(z.GetDouble(4)));
  EXPECT_EQ(z.GetDouble(5), kInf);
  EXPECT_EQ(z.GetDouble(6), kInf);
  EXPECT_TRUE(std::isnan(z.GetDouble(7)));
  EXPECT_EQ(z.GetDouble(8), 1.0);
  EXPECT_EQ(z.GetDouble(9), kInf);
  EXPECT_EQ(z.GetDouble(10), 0.0);
  EXPECT_EQ(z.GetDouble(11), 0.0);
  EXPECT_EQ(z.GetDouble(12), kInf);
}

TEST(ElementwiseTest, ChloPolygammaFromZeta) {
  // psi_n(x) = (-1)^(n+1) n! zeta(n + 1, x): psi_1(1/2) = pi^2/2,
  // psi_1(2) = pi^2/6 - 1, psi_2(1) = -2 zeta(3), psi_3(1) = pi^4/15,
  // psi_4(1/2) = -24 * 31 zeta(5).
  ASSERT_OK_AND_ASSIGN(pg, Binary("chlo.polygamma", "tensor<5xf64>", "[1.0, 1.0, 2.0, 3.0, 4.0]",
                                  "[0.5, 2.0, 1.0, 1.0, 0.5]"));
  const long double pi2 = kPi * kPi;
  const long double want[] = {pi2 / 2, pi2 / 6 - 1, -2 * kZeta3, pi2 * pi2 / 15,
                              -24 * 31 * kZeta5};
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE(i);
    ExpectRelative(pg.GetDouble(i), want[i], 4e-16);
  }
}

TEST(ElementwiseTest, ChloPredicatesAndNextAfter) {
  ASSERT_OK_AND_ASSIGN(
      inf, Unary("chlo.is_inf", "tensor<3xf32>", "[0x7F800000, 0xFF800000, 1.0]", "tensor<3xi1>"));
  EXPECT_EQ(Preds(inf), (std::vector<bool>{true, true, false}));
  ASSERT_OK_AND_ASSIGN(
      pos, Unary("chlo.is_pos_inf", "tensor<2xf16>", "[0x7C00, 0xFC00]", "tensor<2xi1>"));
  EXPECT_EQ(Preds(pos), (std::vector<bool>{true, false}));
  ASSERT_OK_AND_ASSIGN(
      neg, Unary("chlo.is_neg_inf", "tensor<2xbf16>", "[0x7F80, 0xFF80]", "tensor<2xi1>"));
  EXPECT_EQ(Preds(neg), (std::vector<bool>{false, true}));
  ASSERT_OK_AND_ASSIGN(fin,
                       Unary("stablehlo.is_finite", "tensor<3xf64>",
                             "[0x7FF8000000000000, 0x7FF0000000000000, -1.0e308]", "tensor<3xi1>"));
  EXPECT_EQ(Preds(fin), (std::vector<bool>{false, false, true}));
  ASSERT_OK_AND_ASSIGN(na, Binary("chlo.next_after", "tensor<4xf32>", "[1.0, 0.0, -0.0, 1.0]",
                                  "[2.0, -1.0, 1.0, 1.0]"));
  EXPECT_EQ(F32At(na, 0), std::nextafter(1.0f, 2.0f));
  EXPECT_EQ(F32At(na, 1), -std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(F32At(na, 2), std::numeric_limits<float>::denorm_min());
  EXPECT_EQ(F32At(na, 3), 1.0f);
  ASSERT_OK_AND_ASSIGN(nh,
                       Binary("chlo.next_after", "tensor<2xbf16>", "[1.0, -1.0]", "[0.0, -2.0]"));
  EXPECT_EQ(nh.GetBits(0), 0x3F7Fu);
  EXPECT_EQ(nh.GetBits(1), 0xBF81u);
}

TEST(ElementwiseTest, ChloTrigonometryAndSquare) {
  ASSERT_OK_AND_ASSIGN(sq, Unary("chlo.square", "tensor<1xcomplex<f64>>", "[(1.0, 2.0)]"));
  EXPECT_EQ(sq.GetComplex(0), std::complex<double>(-3, 4));
  ASSERT_OK_AND_ASSIGN(cj, Unary("chlo.conj", "tensor<1xcomplex<f32>>", "[(1.0, 2.0)]"));
  EXPECT_EQ(cj.GetComplex(0), std::complex<double>(1, -2));
  ASSERT_OK_AND_ASSIGN(ac, Unary("chlo.acos", "tensor<2xf64>", "[-1.0, 2.0]"));
  EXPECT_EQ(ac.GetDouble(0), M_PI);
  EXPECT_TRUE(std::isnan(ac.GetDouble(1)));
  ASSERT_OK_AND_ASSIGN(at, Unary("chlo.atanh", "tensor<2xf32>", "[1.0, 0.5]"));
  EXPECT_EQ(at.GetDouble(0), kInf);
  EXPECT_NEAR(at.GetDouble(1), 0.5493061443340549, 1e-7);
  ASSERT_OK_AND_ASSIGN(ch, Unary("chlo.cosh", "tensor<2xf64>", "[0.0, 1.0]"));
  EXPECT_EQ(ch.GetDouble(0), 1);
  EXPECT_NEAR(ch.GetDouble(1), 1.5430806348152437, 1e-15);
  // chlo.sinh follows its lowering: e^(x + log(1/2)) - e^(-x + log(1/2)) in
  // f32, each step rounded, for |x| >= 1 (corpus values were recorded so).
  ASSERT_OK_AND_ASSIGN(sh, Unary("chlo.sinh", "tensor<2xf32>", "[-8.744041442871094, 0.5]"));
  EXPECT_EQ(F32At(sh, 0), -3136.59716796875f);
  EXPECT_NEAR(sh.GetDouble(1), 0.5210953054937474, 1e-7);
  ASSERT_OK_AND_ASSIGN(ca, Unary("chlo.asin", "tensor<1xcomplex<f64>>", "[(2.0, 0.0)]"));
  EXPECT_NEAR(ca.GetComplex(0).real(), M_PI / 2, 1e-15);
  EXPECT_NEAR(std::fabs(ca.GetComplex(0).imag()), 1.3169578969248166, 1e-15);
}

}  // namespace
}  // namespace jitd::eval
