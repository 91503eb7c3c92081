// The host's TargetMath (target_math.h): libm by name, complex multiply /
// divide / abs in x87 extended precision as jit/eval's long double code
// (x86 hosts only), jit/eval's own functions called by symbol
// (kernel_runtime.h). The cpu device's kernels use it.
#ifndef JITD_JIT_CODEGEN_CPU_CPU_TARGET_MATH_H_
#define JITD_JIT_CODEGEN_CPU_CPU_TARGET_MATH_H_

#include "jit/codegen/target_math.h"

namespace jitd::codegen {

class CpuTargetMath final : public TargetMath {
 public:
  std::string_view name() const override { return "cpu"; }
  std::string MathFunction(std::string_view base, bool f32) const override;
  bool HasHostRuntime() const override { return true; }
  bool HasExtendedComplex() const override;
  llvm::Value* ComplexMultiply(Builder& b, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                               ir::DType t) const override;
  llvm::Value* ComplexDivide(Builder& b, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                             ir::DType t) const override;
  llvm::Value* ComplexAbs(Builder& b, llvm::Module& m, llvm::Value* z, ir::DType t) const override;
};

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_CPU_CPU_TARGET_MATH_H_
