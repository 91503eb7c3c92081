// Functions outside the generated code that kernels call by name: jit/eval's
// per-element math (jit/eval/scalar_math.h) for complex transcendentals and
// real special functions, and jit/ir's EncodeFloat for 8-bit float results,
// so kernels compute exactly what the interpreter computes. A JIT that runs kernels must define these symbols
// (KernelRuntimeSymbols) before linking them; the names are part of the
// object files a serialized executable keeps.
#ifndef JITD_JIT_CODEGEN_KERNEL_RUNTIME_H_
#define JITD_JIT_CODEGEN_KERNEL_RUNTIME_H_

#include <utility>
#include <vector>

namespace jitd::codegen {

// {double re, double im} jitd_eval_complex_unary(i32 fn, double re, double im)
inline constexpr char kComplexUnarySymbol[] = "jitd_eval_complex_unary";
// {double, double} jitd_eval_complex_binary(i32 fn, double, double, double, double)
inline constexpr char kComplexBinarySymbol[] = "jitd_eval_complex_binary";
// double jitd_eval_special(i32 fn, double x)
inline constexpr char kSpecialSymbol[] = "jitd_eval_special";
// i64 jitd_encode_float(i32 dtype, double x): jit/ir's EncodeFloat into the
// float type `dtype` (an ir::DType), the interpreter's rounding.
inline constexpr char kEncodeFloatSymbol[] = "jitd_encode_float";

// Every symbol above with its address in this process.
std::vector<std::pair<const char*, void*>> KernelRuntimeSymbols();

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_RUNTIME_H_
