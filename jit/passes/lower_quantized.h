// lower-quantized: rewrites ops on quantized element types (!quant.uniform,
// quantization.md) into plain integer and float StableHLO that computes
// exactly what jit/eval computes for them (jit/eval/quantized.cc):
//
//   uniform_quantize(x)    x / scale + zero_point in f32 (f64 for f64
//                          expressed types), NaN -> zero_point, clamp to
//                          the storage range, round_nearest_even, convert
//                          to the storage type
//   uniform_dequantize(q)  (convert(q) - zero_point) * scale, in f32/f64,
//                          then converted to the expressed type
//   requantize             dequantize, then quantize
//   dot_general, convolution in eval::UsesQuantizedIntegerForm's case: the
//                          same op in i32 on (storage - zero_point) -- an
//                          i8 x i8 -> i32 dot_general / convolution when
//                          both zero points are 0, which the cpu device's
//                          int8 GEMM takes; an i8 dot_general whose lhs
//                          alone has a zero point as that product less
//                          zero_point x the rhs sums -- plus the result's
//                          zero point, clamped
//   any other op without regions: dequantize its quantized operands, the op
//                          on the expressed type, quantize its quantized
//                          results (the spec's dequantize_op_quantize)
//   constants              the same bytes as a constant of the storage type
//
// Per-tensor and per-axis parameters (per-axis ones as a constant vector
// broadcast along the quantized dimension). Quantized values keep their
// types where they cross a function's boundary (arguments, func.return,
// func.call, ops without results such as check.expect_*), through
// stablehlo.bitcast_convert, which reinterprets the storage bits. A function with a quantized value inside an op with regions
// (reduce, while, ...) is left unchanged: its ops stay quantized and a
// device runs them as it did before (the cpu device: its interpreter).
#ifndef JITD_JIT_PASSES_LOWER_QUANTIZED_H_
#define JITD_JIT_PASSES_LOWER_QUANTIZED_H_

#include <memory>

#include "jit/passes/pass_manager.h"

namespace jitd::passes {

std::unique_ptr<Pass> CreateLowerQuantizedPass();

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_LOWER_QUANTIZED_H_
