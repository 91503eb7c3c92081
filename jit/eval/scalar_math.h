// Per-element math of jit/eval's kernels for the functions they compute in
// long double or through Boost.Math (complex transcendentals, complex sign
// and power, lgamma, digamma, erf_inv, bessel_i1e, CHLO's cosh / sinh),
// exported so JIT-compiled kernels call the very same code: their results
// are the interpreter's bit for bit.
//
// Values in and out are doubles: what the interpreter's kernels read
// (narrower floats widen exactly) and what they write before rounding into
// the result type (f32 / complex<f32> parts: one rounding to nearest; f16 /
// bf16: one rounding from the double). Pure and thread-safe.
#ifndef JITD_JIT_EVAL_SCALAR_MATH_H_
#define JITD_JIT_EVAL_SCALAR_MATH_H_

#include <complex>
#include <cstdint>

namespace jitd::eval {

// Unary functions of a complex value (the interpreter's complex_ext forms:
// std::complex<long double>, narrowed to double).
enum class ComplexFn : int32_t {
  kExp, kExpm1, kLog, kLog1p, kLogistic, kSqrt, kRsqrt, kCbrt, kSin, kCos, kTan, kTanh, kSign,
  kAcos, kAcosh, kAsin, kAsinh, kAtan, kAtanh, kCosh, kSinh, kSquare,
};
std::complex<double> ComplexUnary(ComplexFn fn, std::complex<double> z);

// Binary functions of complex values.
enum class ComplexFn2 : int32_t { kPower, kAtan2, kRemainder };
std::complex<double> ComplexBinary(ComplexFn2 fn, std::complex<double> a, std::complex<double> b);

// Real special functions. cosh / sinh follow CHLO's lowering in f32 (the
// interpreter's form for f32, f16 and bf16) or f64.
enum class SpecialFn : int32_t {
  kLgamma, kDigamma, kErfInv, kBesselI1e, kCoshF32, kCoshF64, kSinhF32, kSinhF64,
};
double Special(SpecialFn fn, double x);

}  // namespace jitd::eval

// The C entry points JIT-compiled code calls (symbol names in
// jit/codegen's KernelRuntimeSymbols). `fn` is one of the enums above.
extern "C" {
struct JitdComplexDouble {
  double re, im;
};
JitdComplexDouble jitd_eval_complex_unary(int32_t fn, double re, double im);
JitdComplexDouble jitd_eval_complex_binary(int32_t fn, double a_re, double a_im, double b_re, double b_im);
double jitd_eval_special(int32_t fn, double x);
}

#endif  // JITD_JIT_EVAL_SCALAR_MATH_H_
