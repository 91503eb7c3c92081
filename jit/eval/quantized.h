// Quantized dot_general and convolution in integers (quantization.md; the
// spec's dequantize_op_quantize over real numbers).
//
// When the result's scale is the product of the operands' scales (per
// result channel), the real-valued result of dequantize -> op -> quantize
// is an integer: sum((lhs - lhs_zp) * (rhs - rhs_zp)) + result_zp, clamped
// to the result's storage range (the double product rounds at most 2^-53
// relative, far below half a unit of any sum that fits in 32 bits). jit/eval
// computes that exactly, and jit/passes' lower-quantized pass emits the
// same sum as an i32 dot_general / convolution, so both agree bit for bit.
// Other quantized dot_general / convolution ops run in the expressed float
// type like every other quantized op.
#ifndef JITD_JIT_EVAL_QUANTIZED_H_
#define JITD_JIT_EVAL_QUANTIZED_H_

#include <cstdint>

#include "jit/ir/module.h"

namespace jitd::eval {

// Whether `op` (a dot_general or convolution) is computed in integers:
// both operands and the result quantized with static shapes, lhs per-tensor,
// rhs per-tensor or per-axis on a dimension that reaches the result (for
// convolution: its output feature dimension), the result's scales equal to
// lhs_scale * rhs_scale channel by channel (as doubles), and
// |sum| + |result_zp| bounded by 2^31 - 1 for every possible input (so an
// i32 accumulator never overflows: contracted elements times the largest
// |storage - zero_point| of each operand).
bool UsesQuantizedIntegerForm(const ir::Op& op);

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_QUANTIZED_H_
