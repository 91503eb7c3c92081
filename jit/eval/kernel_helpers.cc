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

}  // namespace jitd::eval::internal
