// Element conversions and the parallel helper shared by the runtime's ops.
#include <algorithm>
#include <cmath>

#include "devices/cpu/runtime/internal/elements.h"

namespace jitd::cpu::internal {

using ir::DType;

ir::Literal CopyToLiteral(const ir::Type& type, const void* data) {
  const auto* p = static_cast<const uint8_t*>(data);
  // The type came from a verified op: its size is within the IR's limits.
  return *ir::Literal::FromBytes(type, std::vector<uint8_t>(p, p + type.byte_size()));
}

namespace {

int64_t SaturatingToInt(double v, bool is_unsigned) {  // as jit/eval's
  if (std::isnan(v)) return 0;
  if (is_unsigned) {
    if (v <= 0) return 0;
    if (v >= 0x1p64) return static_cast<int64_t>(UINT64_MAX);
    return static_cast<int64_t>(static_cast<uint64_t>(v));
  }
  if (v <= -0x1p63) return INT64_MIN;
  if (v >= 0x1p63) return INT64_MAX;
  return static_cast<int64_t>(v);
}

template <typename S>
S Read(const uint8_t* p, int64_t i) {
  S v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(S)), sizeof(S));
  return v;
}

// Integer element i as uint64, sign- or zero-extended; false for others.
bool ReadInteger(const uint8_t* p, DType t, int64_t i, uint64_t& out) {
  switch (t) {
    case DType::kS8: out = static_cast<uint64_t>(static_cast<int64_t>(Read<int8_t>(p, i))); return true;
    case DType::kS16: out = static_cast<uint64_t>(static_cast<int64_t>(Read<int16_t>(p, i))); return true;
    case DType::kS32: out = static_cast<uint64_t>(static_cast<int64_t>(Read<int32_t>(p, i))); return true;
    case DType::kS64: out = static_cast<uint64_t>(Read<int64_t>(p, i)); return true;
    case DType::kU8: out = Read<uint8_t>(p, i); return true;
    case DType::kU16: out = Read<uint16_t>(p, i); return true;
    case DType::kU32: out = Read<uint32_t>(p, i); return true;
    case DType::kU64: out = Read<uint64_t>(p, i); return true;
    case DType::kPred: out = Read<uint8_t>(p, i) & 1; return true;
    default: return false;
  }
}

// Real float element i as double (exact); false for other types.
bool ReadFloat(const uint8_t* p, DType t, int64_t i, double& out) {
  switch (t) {
    case DType::kF32: out = Read<float>(p, i); return true;
    case DType::kF64: out = Read<double>(p, i); return true;
    case DType::kF16: out = ir::HalfToFloat(Read<uint16_t>(p, i)); return true;
    case DType::kBF16: out = ir::BFloat16ToFloat(Read<uint16_t>(p, i)); return true;
    default: return false;
  }
}

}  // namespace

template <typename T>
void LoadDomain(const void* src, DType from, DType result, int64_t n, T* dst) {
  const auto* p = static_cast<const uint8_t*>(src);
  if (n == 0) return;
  // Identity fast paths: the bytes already are the domain's.
  if ((std::is_same_v<T, float> && from == DType::kF32) ||
      (std::is_same_v<T, double> && from == DType::kF64) ||
      (std::is_same_v<T, std::complex<float>> && from == DType::kC64) ||
      (std::is_same_v<T, std::complex<double>> && from == DType::kC128)) {
    std::memcpy(dst, p, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  uint64_t u;
  double d;
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (ReadInteger(p, from, 0, u)) {
      for (int64_t i = 0; i < n; ++i) (void)ReadInteger(p, from, i, dst[i]);
      return;
    }
    if (ReadFloat(p, from, 0, d)) {
      const bool is_unsigned = ir::IsUnsignedInt(result);
      for (int64_t i = 0; i < n; ++i) {
        (void)ReadFloat(p, from, i, d);
        dst[i] = static_cast<uint64_t>(SaturatingToInt(d, is_unsigned));
      }
      return;
    }
  } else {
    if (ReadFloat(p, from, 0, d)) {
      for (int64_t i = 0; i < n; ++i) {
        (void)ReadFloat(p, from, i, d);
        dst[i] = static_cast<T>(d);
      }
      return;
    }
    if (ir::IsInteger(from) && ReadInteger(p, from, 0, u)) {
      const bool is_signed = ir::IsSignedInt(from);
      for (int64_t i = 0; i < n; ++i) {
        (void)ReadInteger(p, from, i, u);
        const double v = is_signed ? static_cast<double>(static_cast<int64_t>(u))
                                   : static_cast<double>(u);
        dst[i] = static_cast<T>(v);
      }
      return;
    }
  }
  // Everything else (sub-byte integers, f8/f6/f4, complex to real, ...):
  // through ir::Literal, exactly as jit/eval loads it.
  const ir::Literal lit = CopyToLiteral(ir::Type::Tensor(from, {n}), src);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, uint64_t>) {
      dst[i] = ir::IsFloat(from) || ir::IsComplex(from)
                   ? static_cast<uint64_t>(
                         SaturatingToInt(lit.GetDouble(i), ir::IsUnsignedInt(result)))
                   : lit.GetUInt(i);
    } else if constexpr (std::is_floating_point_v<T>) {
      dst[i] = static_cast<T>(lit.GetDouble(i));
    } else {
      const std::complex<double> v = lit.GetComplex(i);
      dst[i] = T(static_cast<typename T::value_type>(v.real()),
                 static_cast<typename T::value_type>(v.imag()));
    }
  }
}

template <typename T>
void StoreDomain(const T* src, int64_t n, DType to, void* dst) {
  auto* p = static_cast<uint8_t*>(dst);
  if (n == 0) return;
  if ((std::is_same_v<T, float> && to == DType::kF32) ||
      (std::is_same_v<T, double> && to == DType::kF64) ||
      (std::is_same_v<T, std::complex<float>> && to == DType::kC64) ||
      (std::is_same_v<T, std::complex<double>> && to == DType::kC128)) {
    std::memcpy(p, src, static_cast<size_t>(n) * sizeof(T));
    return;
  }
  if constexpr (std::is_same_v<T, uint64_t>) {
    auto put = [&]<typename S>(S) {
      for (int64_t i = 0; i < n; ++i) {
        const S v = static_cast<S>(src[i]);
        std::memcpy(p + i * static_cast<int64_t>(sizeof(S)), &v, sizeof(S));
      }
    };
    switch (to) {
      case DType::kS8: case DType::kU8: put(uint8_t{}); return;
      case DType::kS16: case DType::kU16: put(uint16_t{}); return;
      case DType::kS32: case DType::kU32: put(uint32_t{}); return;
      case DType::kS64: case DType::kU64: put(uint64_t{}); return;
      case DType::kPred:
        for (int64_t i = 0; i < n; ++i) p[i] = src[i] != 0;
        return;
      default: break;
    }
  } else if constexpr (std::is_same_v<T, float>) {
    if (to == DType::kF16 || to == DType::kBF16) {
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = to == DType::kF16 ? ir::FloatToHalf(src[i]) : ir::FloatToBFloat16(src[i]);
        std::memcpy(p + 2 * i, &h, 2);
      }
      return;
    }
  }
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(to, {n}));
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, uint64_t>) {
      lit.SetInt(i, static_cast<int64_t>(src[i]));
    } else if constexpr (std::is_floating_point_v<T>) {
      lit.SetDouble(i, static_cast<double>(src[i]));
    } else {
      lit.SetComplex(i, {static_cast<double>(src[i].real()), static_cast<double>(src[i].imag())});
    }
  }
  std::memcpy(p, lit.bytes().data(), lit.bytes().size());
}

#define JITD_INSTANTIATE(T)                                                              \
  template void LoadDomain<T>(const void*, DType, DType, int64_t, T*);                   \
  template void StoreDomain<T>(const T*, int64_t, DType, void*);
JITD_INSTANTIATE(uint64_t)
JITD_INSTANTIATE(float)
JITD_INSTANTIATE(double)
JITD_INSTANTIATE(std::complex<float>)
JITD_INSTANTIATE(std::complex<double>)
#undef JITD_INSTANTIATE

void ParallelRange(const RunContext& context, int64_t n, int64_t cost_per_item,
                   const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  // Below ~100k operations a hand-off costs more than it saves.
  constexpr int64_t kMinParallelCost = 100'000;
  // Operations between two deadline checks (about a millisecond).
  constexpr int64_t kStopCheckCost = int64_t{1} << 20;
  const int64_t cost = std::max<int64_t>(cost_per_item, 1);
  const bool serial = context.parallel_for == nullptr || n < 2 || n * cost < kMinParallelCost;
  if (context.stopped == nullptr || (!context.deadline && !context.cancel)) {
    if (serial) {
      fn(0, n);
    } else {
      (*context.parallel_for)(n, fn);
    }
    return;
  }
  const int64_t slice = std::max<int64_t>(1, kStopCheckCost / cost);
  const std::function<void(int64_t, int64_t)> sliced = [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; b += slice) {
      if (PastDeadline(context)) {
        if (context.stopped) context.stopped->store(true, std::memory_order_relaxed);
        return;
      }
      fn(b, std::min(end, b + slice));
    }
  };
  if (serial) {
    sliced(0, n);
  } else {
    (*context.parallel_for)(n, sliced);
  }
}

}  // namespace jitd::cpu::internal
