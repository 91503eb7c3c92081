#include "jit/codegen/nvptx/nvptx_target_math.h"

namespace jitd::codegen {

std::string NvptxTargetMath::MathFunction(std::string_view base, bool f32) const {
  return "__nv_" + std::string(base) + (f32 ? "f" : "");
}

llvm::Value* NvptxTargetMath::ComplexMultiply(Builder&, llvm::Module&, llvm::Value*, llvm::Value*, ir::DType) const {
  return nullptr;
}

llvm::Value* NvptxTargetMath::ComplexDivide(Builder&, llvm::Module&, llvm::Value*, llvm::Value*, ir::DType) const {
  return nullptr;
}

llvm::Value* NvptxTargetMath::ComplexAbs(Builder&, llvm::Module&, llvm::Value*, ir::DType) const { return nullptr; }

const TargetMath& NvptxMath() {
  static const NvptxTargetMath* math = new NvptxTargetMath();
  return *math;
}

}  // namespace jitd::codegen
