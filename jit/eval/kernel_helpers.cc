// Small element helpers shared by several kernel families (declared in
// internal/kernels.h).
#include <cmath>
#include <cstdint>

#include "jit/eval/internal/kernels.h"

namespace jitd::eval::internal {

using ir::DType;
using ir::Literal;

// ---- Element conversion ---------------------------------------------------

int64_t SaturatingToInt(double v, bool is_unsigned) {
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

void ConvertElement(const Literal& from, int64_t i, Literal& to, int64_t j) {
  const DType f = from.dtype(), t = to.dtype();
  if (f == t) {
    CopyElement(from, i, to, j);
  } else if (ir::IsComplex(t)) {
    to.SetComplex(j, from.GetComplex(i));
  } else if (ir::IsFloat(t)) {
    to.SetDouble(j, from.GetDouble(i));
  } else if (ir::IsPred(t)) {
    to.SetInt(j,
              ir::IsFloat(f) || ir::IsComplex(f) ? from.GetDouble(i) != 0 : from.GetUInt(i) != 0);
  } else if (ir::IsFloat(f) || ir::IsComplex(f)) {
    to.SetInt(j, SaturatingToInt(from.GetDouble(i), ir::IsUnsignedInt(t)));
  } else {
    to.SetInt(j, static_cast<int64_t>(from.GetUInt(i)));  // sign- or zero-extended
  }
}

// ---- Pseudo-random numbers ------------------------------------------------

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double UnitInterval(uint64_t r) { return static_cast<double>(r >> 11) * 0x1p-53; }

}  // namespace jitd::eval::internal
