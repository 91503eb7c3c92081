// NVPTX's TargetMath (target_math.h): libm-style functions are libdevice's
// __nv_* (linked into the module, only what is called, by nvptx_backend.h);
// the host's functions (jit/eval's complex transcendentals and special
// functions, EncodeFloat for 8-bit floats) and x87 long double do not
// exist on the GPU, so the ops that need them are not fused for this
// target (the cuda compiler refuses them by name).
#ifndef JITD_JIT_CODEGEN_NVPTX_NVPTX_TARGET_MATH_H_
#define JITD_JIT_CODEGEN_NVPTX_NVPTX_TARGET_MATH_H_

#include "jit/codegen/target_math.h"

namespace jitd::codegen {

class NvptxTargetMath final : public TargetMath {
 public:
  std::string_view name() const override { return "nvptx"; }
  std::string MathFunction(std::string_view base, bool f32) const override;
  bool HasHostRuntime() const override { return false; }
  bool HasExtendedComplex() const override { return false; }
  // Never called (HasExtendedComplex is false): nullptr.
  llvm::Value* ComplexMultiply(Builder& ir, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                               ir::DType t) const override;
  llvm::Value* ComplexDivide(Builder& ir, llvm::Module& m, llvm::Value* x, llvm::Value* y,
                             ir::DType t) const override;
  llvm::Value* ComplexAbs(Builder& ir, llvm::Module& m, llvm::Value* z, ir::DType t) const override;
};

// The process's one NvptxTargetMath.
const TargetMath& NvptxMath();

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_NVPTX_TARGET_MATH_H_
