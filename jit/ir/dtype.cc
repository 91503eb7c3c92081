#include "jit/ir/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace jitd::ir {

std::string_view DTypeName(DType t) {
  switch (t) {
#define JITD_DTYPE_NAME(e, s, b, w) \
  case DType::e:                    \
    return s;
    JITD_DTYPES(JITD_DTYPE_NAME)
#undef JITD_DTYPE_NAME
  }
  return "?";
}

std::optional<DType> ParseDTypeName(std::string_view s) {
#define JITD_DTYPE_PARSE(e, str, b, w) \
  if (s == str) return DType::e;
  JITD_DTYPES(JITD_DTYPE_PARSE)
#undef JITD_DTYPE_PARSE
  // MLIR's explicitly signed spellings mean the same as the signless ones.
  if (s == "si2") return DType::kS2;
  if (s == "si4") return DType::kS4;
  if (s == "si8") return DType::kS8;
  if (s == "si16") return DType::kS16;
  if (s == "si32") return DType::kS32;
  if (s == "si64") return DType::kS64;
  return std::nullopt;
}

int StorageBytes(DType t) {
  switch (t) {
#define JITD_DTYPE_BYTES(e, s, b, w) \
  case DType::e:                     \
    return b;
    JITD_DTYPES(JITD_DTYPE_BYTES)
#undef JITD_DTYPE_BYTES
  }
  return 0;
}

int BitWidth(DType t) {
  switch (t) {
#define JITD_DTYPE_WIDTH(e, s, b, w) \
  case DType::e:                     \
    return w;
    JITD_DTYPES(JITD_DTYPE_WIDTH)
#undef JITD_DTYPE_WIDTH
  }
  return 0;
}

bool IsSignedInt(DType t) {
  return t >= DType::kS2 && t <= DType::kS64;
}
bool IsUnsignedInt(DType t) {
  return t >= DType::kU2 && t <= DType::kU64;
}
bool IsFloat(DType t) {
  return t >= DType::kF4E2M1FN && t <= DType::kF64;
}

DType ComplexComponent(DType t) {
  if (t == DType::kC64) return DType::kF32;
  if (t == DType::kC128) return DType::kF64;
  return t;
}

std::optional<DType> ComplexOf(DType t) {
  if (t == DType::kF32) return DType::kC64;
  if (t == DType::kF64) return DType::kC128;
  return std::nullopt;
}

std::optional<FloatFormat> GetFloatFormat(DType t) {
  using N = FloatFormat::Nan;
  switch (t) {
    case DType::kF4E2M1FN: return FloatFormat{2, 1, 1, false, true, true, N::kNone};
    case DType::kF6E2M3FN: return FloatFormat{2, 3, 1, false, true, true, N::kNone};
    case DType::kF6E3M2FN: return FloatFormat{3, 2, 3, false, true, true, N::kNone};
    case DType::kF8E3M4: return FloatFormat{3, 4, 3, true, true, true, N::kIeee};
    case DType::kF8E4M3: return FloatFormat{4, 3, 7, true, true, true, N::kIeee};
    case DType::kF8E4M3FN: return FloatFormat{4, 3, 7, false, true, true, N::kAllOnes};
    case DType::kF8E4M3FNUZ: return FloatFormat{4, 3, 8, false, true, true, N::kNegZero};
    case DType::kF8E4M3B11FNUZ: return FloatFormat{4, 3, 11, false, true, true, N::kNegZero};
    case DType::kF8E5M2: return FloatFormat{5, 2, 15, true, true, true, N::kIeee};
    case DType::kF8E5M2FNUZ: return FloatFormat{5, 2, 16, false, true, true, N::kNegZero};
    // E8M0: exponent only, unsigned, no zero, 0xFF is NaN.
    case DType::kF8E8M0FNU: return FloatFormat{8, 0, 127, false, false, false, N::kAllOnes};
    case DType::kF16: return FloatFormat{5, 10, 15, true, true, true, N::kIeee};
    case DType::kBF16: return FloatFormat{8, 7, 127, true, true, true, N::kIeee};
    case DType::kF32: return FloatFormat{8, 23, 127, true, true, true, N::kIeee};
    case DType::kF64: return FloatFormat{11, 52, 1023, true, true, true, N::kIeee};
    default: return std::nullopt;
  }
}

namespace {

uint64_t NanBits(const FloatFormat& f) {
  const int width = f.exponent_bits + f.mantissa_bits;
  switch (f.nan) {
    case FloatFormat::Nan::kIeee:
      // Quiet NaN: exponent all ones, top mantissa bit set.
      return (((uint64_t{1} << f.exponent_bits) - 1) << f.mantissa_bits) |
             (f.mantissa_bits > 0 ? uint64_t{1} << (f.mantissa_bits - 1) : 0);
    case FloatFormat::Nan::kAllOnes:
      return (uint64_t{1} << width) - 1;
    case FloatFormat::Nan::kNegZero:
      return uint64_t{1} << width;  // the sign bit alone
    case FloatFormat::Nan::kNone:
      return 0;
  }
  return 0;
}

// Largest finite magnitude's bit pattern (sign excluded).
uint64_t MaxFiniteBits(const FloatFormat& f) {
  const uint64_t all = (uint64_t{1} << (f.exponent_bits + f.mantissa_bits)) - 1;
  switch (f.nan) {
    case FloatFormat::Nan::kIeee:
      // Exponent all ones is reserved for inf/NaN.
      return all - (uint64_t{1} << f.mantissa_bits);
    case FloatFormat::Nan::kAllOnes:
      return all - 1;
    case FloatFormat::Nan::kNegZero:
    case FloatFormat::Nan::kNone:
      return all;
  }
  return all;
}

}  // namespace

double DecodeFloat(uint64_t bits, const FloatFormat& f) {
  const int width = f.exponent_bits + f.mantissa_bits;
  const uint64_t magnitude = bits & ((uint64_t{1} << width) - 1);
  const bool negative = f.has_sign && ((bits >> width) & 1);
  const uint64_t exp_field = magnitude >> f.mantissa_bits;
  const uint64_t mantissa = magnitude & ((uint64_t{1} << f.mantissa_bits) - 1);
  const uint64_t exp_max = (uint64_t{1} << f.exponent_bits) - 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (f.nan) {
    case FloatFormat::Nan::kIeee:
      if (exp_field == exp_max) {
        if (mantissa != 0) return nan;
        return negative ? -INFINITY : INFINITY;
      }
      break;
    case FloatFormat::Nan::kAllOnes:
      if (magnitude == (uint64_t{1} << width) - 1) return nan;
      break;
    case FloatFormat::Nan::kNegZero:
      if (negative && magnitude == 0) return nan;
      break;
    case FloatFormat::Nan::kNone:
      break;
  }
  double value;
  if (!f.has_zero) {
    value = std::ldexp(1.0, static_cast<int>(exp_field) - f.bias);
  } else if (exp_field == 0) {
    value = std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<double>(mantissa | (uint64_t{1} << f.mantissa_bits)),
                       static_cast<int>(exp_field) - f.bias - f.mantissa_bits);
  }
  return negative ? -value : value;
}

uint64_t EncodeFloat(double value, const FloatFormat& f) {
  const int width = f.exponent_bits + f.mantissa_bits;
  if (f.exponent_bits == 11 && f.mantissa_bits == 52) {
    return std::bit_cast<uint64_t>(value);
  }
  const uint64_t sign_bit = f.has_sign ? uint64_t{1} << width : 0;
  if (std::isnan(value)) {
    return f.nan == FloatFormat::Nan::kNone ? MaxFiniteBits(f) : NanBits(f);
  }
  const bool negative = std::signbit(value) && f.has_sign;
  const uint64_t sign = negative ? sign_bit : 0;
  double a = std::fabs(value);
  if (!f.has_sign && std::signbit(value) && value != 0) {
    return NanBits(f);  // unsigned format: negative values are not representable
  }
  const uint64_t max_finite = MaxFiniteBits(f);
  auto overflow = [&]() -> uint64_t {
    if (f.has_infinity) {
      return sign | (((uint64_t{1} << f.exponent_bits) - 1) << f.mantissa_bits);
    }
    if (f.nan == FloatFormat::Nan::kNone) return sign | max_finite;  // saturate
    return NanBits(f);
  };
  if (std::isinf(a)) return overflow();
  if (a == 0) {
    if (!f.has_zero) return 0;  // smallest value 2^-bias stands in for zero
    // FNUZ formats have no negative zero: its pattern is NaN.
    if (f.nan == FloatFormat::Nan::kNegZero) return 0;
    return sign;
  }
  if (!f.has_zero) {
    // Exponent-only format: round log2 to nearest (ties to even exponent).
    int e;
    double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    int exponent = e - 1;          // a = (2m) * 2^(e-1), 2m in [1, 2)
    if (2 * m > std::sqrt(2.0)) exponent += 1;
    int64_t field = exponent + f.bias;
    if (field < 0) field = 0;
    if (field >= static_cast<int64_t>(max_finite)) return NanBits(f);
    return static_cast<uint64_t>(field);
  }
  // Exact arithmetic on a scaled integer: find the binary exponent, scale
  // the mantissa to (mantissa_bits) fraction bits, round half to even.
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  int exponent = e - 1;
  const int min_exponent = 1 - f.bias;  // exponent of the smallest normal
  if (exponent < min_exponent) exponent = min_exponent;  // subnormal range
  // Quantum of the target at this exponent.
  const int shift = exponent - f.mantissa_bits;
  double scaled = std::ldexp(a, -shift);  // exact: a power-of-two scaling
  double integral = std::nearbyint(scaled);  // default rounding: to even
  uint64_t q = static_cast<uint64_t>(integral);
  // q is the significand at `exponent`; it may have carried to 2^(m+1).
  uint64_t bits;
  if (q >= (uint64_t{1} << (f.mantissa_bits + 1))) {
    q >>= 1;
    exponent += 1;
  }
  if (q < (uint64_t{1} << f.mantissa_bits)) {
    bits = q;  // subnormal (exponent field 0)
  } else {
    const int64_t field = exponent + f.bias;
    bits = (static_cast<uint64_t>(field) << f.mantissa_bits) |
           (q & ((uint64_t{1} << f.mantissa_bits) - 1));
  }
  if (bits > max_finite) return overflow();
  if (bits == 0 && f.nan == FloatFormat::Nan::kNegZero) return 0;
  return sign | bits;
}

uint16_t FloatToHalf(float value) {
  static const FloatFormat kHalf = *GetFloatFormat(DType::kF16);
  return static_cast<uint16_t>(EncodeFloat(static_cast<double>(value), kHalf));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal half: value = mant * 2^-24, exact in float.
    float v = static_cast<float>(mant) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(bits);
}

uint16_t FloatToBFloat16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  // Round to nearest even on the dropped 16 bits.
  const uint32_t lsb = (bits >> 16) & 1;
  bits += 0x7FFF + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

}  // namespace jitd::ir
