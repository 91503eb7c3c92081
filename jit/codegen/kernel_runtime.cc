#include "jit/codegen/kernel_runtime.h"

#include "jit/eval/scalar_math.h"

namespace jitd::codegen {

std::vector<std::pair<const char*, void*>> KernelRuntimeSymbols() {
  return {{kComplexUnarySymbol, reinterpret_cast<void*>(&jitd_eval_complex_unary)},
          {kComplexBinarySymbol, reinterpret_cast<void*>(&jitd_eval_complex_binary)},
          {kSpecialSymbol, reinterpret_cast<void*>(&jitd_eval_special)}};
}

}  // namespace jitd::codegen
