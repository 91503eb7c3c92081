// TargetMath: what the element math of a kernel (elemental_emitter.h) needs
// from the machine it runs on. The emitter computes jit/eval's semantics
// with LLVM instructions and intrinsics every target lowers; the rest —
// libm-style functions, complex arithmetic in extended precision, calls of
// the host's jit/eval functions — goes through these hooks, and the support
// predicates (IsFusibleOp, IsEmittableReduce) ask the same object, so what a
// target can fuse is exactly what its emitter can compute.
//
// Implementations: cpu/cpu_target_math.h (the host: libm, x87 long double,
// jit/eval's functions by symbol) and nvptx/nvptx_target_math.h (libdevice's
// __nv_* functions; nothing of the host). Stateless and thread-safe; the
// objects outlive every emitter that uses them.
#ifndef JITD_JIT_CODEGEN_TARGET_MATH_H_
#define JITD_JIT_CODEGEN_TARGET_MATH_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "jit/ir/dtype.h"
#include "llvm/IR/IRBuilder.h"

namespace jitd::codegen {

using Builder = llvm::IRBuilder<>;

class TargetMath {
 public:
  virtual ~TargetMath() = default;

  // "cpu", "nvptx": for error messages.
  virtual std::string_view name() const = 0;

  // The function computing libm's `base` ("sin", "expm1", "pow", ...) in
  // f32 (`f32`) or f64, with libm's signature: "sinf" on the host,
  // "__nv_sinf" on NVPTX (libdevice, linked into the module later).
  virtual std::string MathFunction(std::string_view base, bool f32) const = 0;

  // Whether kernels may call the host process's functions of
  // kernel_runtime.h (jit/eval's complex transcendentals and special
  // functions, EncodeFloat for 8-bit float results). A target without
  // them does not fuse the ops that need them.
  virtual bool HasHostRuntime() const = 0;

  // Complex multiply, divide and abs exactly as jit/eval computes them
  // (std::complex<long double>): false where the target has no such long
  // double; those ops are then not fused. `t` is kC64 or kC128; values are
  // <2 x float> / <2 x double> (real, imaginary); abs returns the part type.
  virtual bool HasExtendedComplex() const = 0;
  virtual llvm::Value* ComplexMultiply(Builder& b, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                                       ir::DType t) const = 0;
  virtual llvm::Value* ComplexDivide(Builder& b, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                                     ir::DType t) const = 0;
  virtual llvm::Value* ComplexAbs(Builder& b, llvm::Module& m, llvm::Value* z, ir::DType t) const = 0;

  // The interpreter's per-element functions (jit/eval/scalar_math.h) computed
  // by the target's own code where it has no host runtime to call them
  // (HasHostRuntime false): `fn` is an eval::ComplexFn (unary), ComplexFn2
  // (binary) or SpecialFn. Complex values in and out are <2 x double>
  // (real, imaginary), real ones double, as the host calls take them; the
  // emitter widens before and rounds after, as it does around the host
  // calls. Has* says which functions the target has; the others are not
  // fused. Their results may differ from the host's in the last bits (the
  // target documents its accuracy).
  virtual bool HasComplexUnary(int32_t /*fn*/) const { return false; }
  virtual llvm::Value* ComplexUnary(Builder& /*b*/, llvm::Module& /*m*/, int32_t /*fn*/, llvm::Value* /*z*/) const {
    return nullptr;
  }
  virtual bool HasComplexBinary(int32_t /*fn*/) const { return false; }
  virtual llvm::Value* ComplexBinary(Builder& /*b*/, llvm::Module& /*m*/, int32_t /*fn*/, llvm::Value* /*x*/,
                                     llvm::Value* /*y*/) const {
    return nullptr;
  }
  virtual bool HasSpecial(int32_t /*fn*/) const { return false; }
  virtual llvm::Value* Special(Builder& /*b*/, llvm::Module& /*m*/, int32_t /*fn*/, llvm::Value* /*x*/) const {
    return nullptr;
  }

  // Whether the 8-bit float types (f8E4M3FN & co) are handled: reading
  // them needs a table in the module, writing needs the host's EncodeFloat.
  virtual bool HasNarrowFloats() const { return HasHostRuntime(); }

  // Whether f32 tanh calls the target's f32 function. The host's (libmvec)
  // meets the corpus's 3 ULP; where it does not, tanh is computed in f64
  // and rounded once.
  virtual bool HasAccurateF32Tanh() const { return true; }
};

// The host's TargetMath (cpu/cpu_target_math.h): the default of every
// predicate and emitter that takes none.
const TargetMath& HostTargetMath();

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_TARGET_MATH_H_
