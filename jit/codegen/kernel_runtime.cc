#include "jit/codegen/kernel_runtime.h"

#include "jit/eval/scalar_math.h"
#include "jit/ir/dtype.h"

extern "C" uint64_t jitd_encode_float(int32_t dtype, double x) {
  const std::optional<jitd::ir::FloatFormat> format = jitd::ir::GetFloatFormat(static_cast<jitd::ir::DType>(dtype));
  return format ? jitd::ir::EncodeFloat(x, *format) : 0;
}

namespace jitd::codegen {

std::vector<std::pair<const char*, void*>> KernelRuntimeSymbols() {
  return {{kComplexUnarySymbol, reinterpret_cast<void*>(&jitd_eval_complex_unary)},
          {kComplexBinarySymbol, reinterpret_cast<void*>(&jitd_eval_complex_binary)},
          {kSpecialSymbol, reinterpret_cast<void*>(&jitd_eval_special)},
          {kEncodeFloatSymbol, reinterpret_cast<void*>(&jitd_encode_float)}};
}

}  // namespace jitd::codegen
