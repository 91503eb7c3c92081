// Quantized element types in the evaluator (quantized.cc).
#ifndef JITD_JIT_EVAL_INTERNAL_QUANTIZED_H_
#define JITD_JIT_EVAL_INTERNAL_QUANTIZED_H_

#include <cstdint>

#include "jit/eval/internal/kernels.h"

namespace jitd::eval::internal {

// The spec's dequantize(x): a literal of x's expressed type.
StatusOr<ir::Literal> DequantizeLiteral(const ir::Literal& q, int64_t max_bytes);
// The spec's quantize(x, result_type) for a float literal `x`.
StatusOr<ir::Literal> QuantizeLiteral(const ir::Literal& x, const ir::Type& result_type,
                                      int64_t max_bytes);

// Whether an operand or result of `op` has a quantized element type.
bool HasQuantizedValues(const ir::Op& op);

// Runs `ctx.op()` as the spec's dequantize_op_quantize: dequantizes its
// quantized operands, evaluates the op on the expressed type, and quantizes
// the results whose type is quantized.
KernelResult EvalDequantizeOpQuantize(OpContext& ctx);

void RegisterQuantizedKernels(KernelTable& table);

}  // namespace jitd::eval::internal

#endif  // JITD_JIT_EVAL_INTERNAL_QUANTIZED_H_
