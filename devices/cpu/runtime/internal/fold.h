// Reducer bodies the runtime library folds directly (internal to
// devices/cpu/runtime): a region that is one elementwise add, multiply,
// maximum, minimum, and, or or xor of its two arguments, exactly as
// jit/eval's RecognizeFold (jit/eval/fold.h) and ApplyFold compute it, and the element codecs that
// round the accumulator to the element type after every step.
#ifndef JITD_DEVICES_CPU_RUNTIME_INTERNAL_FOLD_H_
#define JITD_DEVICES_CPU_RUNTIME_INTERNAL_FOLD_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "jit/eval/fold.h"
#include "jit/ir/dtype.h"
#include "jit/ir/module.h"

namespace jitd::cpu::internal {

using ir::DType;

using eval::FoldOp;
using eval::RecognizeFold;

// One fold step in the value type V (float, double, int64_t, uint64_t,
// bool), as jit/eval's ApplyFold.
template <typename V>
inline V Apply(FoldOp op, V l, V r) {
  if constexpr (std::is_floating_point_v<V>) {
    switch (op) {
      case FoldOp::kAdd: return l + r;
      case FoldOp::kMultiply: return l * r;
      case FoldOp::kMaximum:
      case FoldOp::kMinimum:
        if (std::isnan(l)) return l;
        if (std::isnan(r)) return r;
        if (l == r) return ((op == FoldOp::kMaximum) != std::signbit(l)) ? l : r;
        return (op == FoldOp::kMaximum) == (l > r) ? l : r;
      default: return l;
    }
  } else if constexpr (std::is_same_v<V, bool>) {
    switch (op) {
      case FoldOp::kAdd: case FoldOp::kOr: case FoldOp::kMaximum: return l || r;
      case FoldOp::kMultiply: case FoldOp::kAnd: case FoldOp::kMinimum: return l && r;
      case FoldOp::kXor: return l != r;
    }
    return l;
  } else {
    const uint64_t ul = static_cast<uint64_t>(l), ur = static_cast<uint64_t>(r);
    switch (op) {
      case FoldOp::kAdd: return static_cast<V>(ul + ur);
      case FoldOp::kMultiply: return static_cast<V>(ul * ur);
      case FoldOp::kMaximum: return l < r ? r : l;
      case FoldOp::kMinimum: return l < r ? l : r;
      case FoldOp::kAnd: return static_cast<V>(ul & ur);
      case FoldOp::kOr: return static_cast<V>(ul | ur);
      case FoldOp::kXor: return static_cast<V>(ul ^ ur);
    }
    return l;
  }
}

// Storage type S <-> value type V.
template <typename S, typename V, DType kType>
struct Codec {
  using Storage = S;
  using Value = V;
  static V Load(const S& s) {
    if constexpr (kType == DType::kF16) {
      return ir::HalfToFloat(s);
    } else if constexpr (kType == DType::kBF16) {
      return ir::BFloat16ToFloat(s);
    } else if constexpr (kType == DType::kPred) {
      return s != 0;
    } else {
      return static_cast<V>(s);
    }
  }
  static S Store(V v) {
    if constexpr (kType == DType::kF16) {
      return ir::FloatToHalf(v);
    } else if constexpr (kType == DType::kBF16) {
      return ir::FloatToBFloat16(v);
    } else if constexpr (kType == DType::kPred) {
      return v ? 1 : 0;
    } else {
      return static_cast<S>(v);
    }
  }
  // The value after storing it (the accumulator is rounded each step).
  static V Round(V v) { return Load(Store(v)); }
};

// Calls fn.template operator()<C>() with C the Codec of `t`; false when
// the type has none (complex, sub-byte integers, f8 and narrower floats).
template <typename F>
bool WithCodec(DType t, F&& fn) {
  switch (t) {
    case DType::kF32: fn.template operator()<Codec<float, float, DType::kF32>>(); return true;
    case DType::kF64: fn.template operator()<Codec<double, double, DType::kF64>>(); return true;
    case DType::kF16: fn.template operator()<Codec<uint16_t, float, DType::kF16>>(); return true;
    case DType::kBF16: fn.template operator()<Codec<uint16_t, float, DType::kBF16>>(); return true;
    case DType::kPred: fn.template operator()<Codec<uint8_t, bool, DType::kPred>>(); return true;
    case DType::kS8: fn.template operator()<Codec<int8_t, int64_t, DType::kS8>>(); return true;
    case DType::kS16: fn.template operator()<Codec<int16_t, int64_t, DType::kS16>>(); return true;
    case DType::kS32: fn.template operator()<Codec<int32_t, int64_t, DType::kS32>>(); return true;
    case DType::kS64: fn.template operator()<Codec<int64_t, int64_t, DType::kS64>>(); return true;
    case DType::kU8: fn.template operator()<Codec<uint8_t, uint64_t, DType::kU8>>(); return true;
    case DType::kU16: fn.template operator()<Codec<uint16_t, uint64_t, DType::kU16>>(); return true;
    case DType::kU32: fn.template operator()<Codec<uint32_t, uint64_t, DType::kU32>>(); return true;
    case DType::kU64: fn.template operator()<Codec<uint64_t, uint64_t, DType::kU64>>(); return true;
    default: return false;
  }
}

}  // namespace jitd::cpu::internal

#endif  // JITD_DEVICES_CPU_RUNTIME_INTERNAL_FOLD_H_
