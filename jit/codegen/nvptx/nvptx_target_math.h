// NVPTX's TargetMath (target_math.h): libm-style functions are libdevice's
// __nv_* (linked into the module, only what is called, by nvptx_backend.h).
// The host's functions (jit/eval's complex transcendentals and special
// functions, EncodeFloat for 8-bit floats) and x87 long double do not exist
// on the GPU; this target computes them itself in double precision:
//   - complex multiply / divide / abs: in double (f32 parts: exact products,
//     one rounding; f64 parts: products with fma, divide scaled as C99
//     Annex G's __divdc3, abs by libdevice's hypot), with the infinity /
//     NaN recovery of Annex G;
//   - complex transcendentals (eval::ComplexFn / ComplexFn2 but cbrt,
//     atan2, remainder): textbook formulas on libdevice's real functions;
//   - lgamma, erf_inv: libdevice; bessel_i1e: libdevice's I1 times
//     exp(-|x|) (an asymptotic series past 700); digamma: recurrence then
//     the asymptotic series; CHLO cosh / sinh: the interpreter's lowering
//     with libdevice's exp / expm1.
// Accuracy contract (docs/ARCHITECTURE.md 13b): these results are not the
// cpu device's bits; f64 within a few ulps of the interpreter, f32 and
// narrower within one ulp, except near the branch cuts and zeros of the
// complex inverse functions, where the formulas lose relative accuracy.
// 8-bit floats are still not handled here (HasNarrowFloats false).
#ifndef JITD_JIT_CODEGEN_NVPTX_NVPTX_TARGET_MATH_H_
#define JITD_JIT_CODEGEN_NVPTX_NVPTX_TARGET_MATH_H_

#include "jit/codegen/target_math.h"

namespace jitd::codegen {

class NvptxTargetMath final : public TargetMath {
 public:
  std::string_view name() const override { return "nvptx"; }
  std::string MathFunction(std::string_view base, bool f32) const override;
  bool HasHostRuntime() const override { return false; }
  bool HasNarrowFloats() const override { return false; }
  // libdevice's tanhf is up to 2 ULP from exact: 4 from XLA's rounding on
  // tanh_float32_20_20 of the corpus, run on an H200 (2026-11-29).
  bool HasAccurateF32Tanh() const override { return false; }
  // Complex multiply / divide / abs in double (see above), not x87.
  bool HasExtendedComplex() const override { return true; }
  llvm::Value* ComplexMultiply(Builder& ir, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                               ir::DType t) const override;
  llvm::Value* ComplexDivide(Builder& ir, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                             ir::DType t) const override;
  llvm::Value* ComplexAbs(Builder& ir, llvm::Module& m, llvm::Value* z, ir::DType t) const override;

  bool HasComplexUnary(int32_t fn) const override;
  llvm::Value* ComplexUnary(Builder& ir, llvm::Module& m, int32_t fn, llvm::Value* z) const override;
  bool HasComplexBinary(int32_t fn) const override;
  llvm::Value* ComplexBinary(Builder& ir, llvm::Module& m, int32_t fn, llvm::Value* x,
                             llvm::Value* y) const override;
  bool HasSpecial(int32_t fn) const override;
  llvm::Value* Special(Builder& ir, llvm::Module& m, int32_t fn, llvm::Value* x) const override;
};

// The process's one NvptxTargetMath.
const TargetMath& NvptxMath();

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_NVPTX_TARGET_MATH_H_
