// The element-type classes of jit/codegen's element math (internal to
// jit/codegen): which StableHLO element types kernels compute, and in which
// form (see elemental_emitter.h for the semantics).
#ifndef JITD_JIT_CODEGEN_INTERNAL_ELEMENT_TYPES_H_
#define JITD_JIT_CODEGEN_INTERNAL_ELEMENT_TYPES_H_

#include "jit/ir/dtype.h"
#include "jit/ir/module.h"

namespace jitd::codegen::internal {

// The 8-bit floats kernels compute (in f32, like f16 / bf16): every one with
// a sign, a zero and round-to-nearest-even (not f8E8M0FNU, whose rounding
// of log2 would not survive a first rounding to f32). Their storage is read
// through a table of the 256 values and written by jit/ir's EncodeFloat.
inline bool IsNarrowFloat(ir::DType t) {
  switch (t) {
    case ir::DType::kF8E3M4:
    case ir::DType::kF8E4M3:
    case ir::DType::kF8E4M3FN:
    case ir::DType::kF8E4M3FNUZ:
    case ir::DType::kF8E4M3B11FNUZ:
    case ir::DType::kF8E5M2:
    case ir::DType::kF8E5M2FNUZ:
      return true;
    default:
      return false;
  }
}

// i2 / i4 / ui2 / ui4: computed as LLVM i2 / i4 (wrapping in their width, as
// jit/eval masks every result), stored one per byte, zero-extended (jit/ir's
// SetInt) and read back by truncation.
inline bool IsSubByteInt(ir::DType t) { return ir::IsInteger(t) && ir::BitWidth(t) < 8; }

// Every element type a kernel computes: pred, the integers, the floats
// above, f16, bf16, f32, f64 and both complex types (not f8E8M0FNU, f4, f6).
inline bool IsSupportedDType(ir::DType t) {
  switch (t) {
    case ir::DType::kPred:
    case ir::DType::kF16:
    case ir::DType::kBF16:
    case ir::DType::kF32:
    case ir::DType::kF64:
    case ir::DType::kC64:
    case ir::DType::kC128:
      return true;
    default:
      return ir::IsInteger(t) || IsNarrowFloat(t);
  }
}

// f16, bf16 and the 8-bit floats compute in f32 and round to their type
// after every op: f32 holds more than 2p + 2 of their bits, so + - * / sqrt
// rounded twice equal the interpreter's single rounding from double.
inline bool IsHalf(ir::DType t) { return t == ir::DType::kF16 || t == ir::DType::kBF16 || IsNarrowFloat(t); }
// The two 16-bit ones (whose storage bits kernels read raw, see HalfBits).
inline bool IsHalf16(ir::DType t) { return t == ir::DType::kF16 || t == ir::DType::kBF16; }
// A real float (f32, f64 or one computed in f32).
inline bool IsF(ir::DType t) { return t == ir::DType::kF32 || t == ir::DType::kF64 || IsHalf(t); }
inline bool IsInt(ir::DType t) { return ir::IsInteger(t); }
inline bool IsPredT(ir::DType t) { return t == ir::DType::kPred; }
inline bool IsCplx(ir::DType t) { return ir::IsComplex(t); }

// Whether every operand and result of `op` is a tensor of a type above
// (`narrow_floats`: the 8-bit floats too, TargetMath::HasNarrowFloats).
// Quantized tensors hold their storage integers (dtype()), but an op on
// them means dequantize -> op -> quantize (jit/eval/quantized.cc): never the
// storage type's own arithmetic, so no kernel computes them -- except
// bitcast_convert, which reinterprets the storage bits (what
// jit/passes/lower_quantized.h leaves at function boundaries).
inline bool TensorTypesSupported(const ir::Op& op, bool narrow_floats) {
  const bool storage_bits = op.code() == ir::OpCode::kBitcastConvert;
  auto ok = [&](const ir::Type& t) {
    return t.is_tensor() && (storage_bits || !t.is_quantized()) && IsSupportedDType(t.dtype()) &&
           (narrow_floats || !IsNarrowFloat(t.dtype()));
  };
  for (const ir::Value* v : op.operands()) {
    if (!ok(v->type())) return false;
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    if (!ok(op.result(i)->type())) return false;
  }
  return true;
}

}  // namespace jitd::codegen::internal

#endif  // JITD_JIT_CODEGEN_INTERNAL_ELEMENT_TYPES_H_
