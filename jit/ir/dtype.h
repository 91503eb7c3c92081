// Element types of jitd's IR: the StableHLO spec's element types.
//
// A DType is a plain enum; the free functions below describe it. Sub-byte
// integers and the f4/f6/f8 float types are stored one element per byte;
// complex types store (real, imaginary) pairs of their component type.
#ifndef JITD_JIT_IR_DTYPE_H_
#define JITD_JIT_IR_DTYPE_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace jitd::ir {

// X(Enum, mlir_spelling, storage_bytes, bit_width)
#define JITD_DTYPES(X)                   \
  X(kPred, "i1", 1, 1)                   \
  X(kS2, "i2", 1, 2)                     \
  X(kS4, "i4", 1, 4)                     \
  X(kS8, "i8", 1, 8)                     \
  X(kS16, "i16", 2, 16)                  \
  X(kS32, "i32", 4, 32)                  \
  X(kS64, "i64", 8, 64)                  \
  X(kU2, "ui2", 1, 2)                    \
  X(kU4, "ui4", 1, 4)                    \
  X(kU8, "ui8", 1, 8)                    \
  X(kU16, "ui16", 2, 16)                 \
  X(kU32, "ui32", 4, 32)                 \
  X(kU64, "ui64", 8, 64)                 \
  X(kF4E2M1FN, "f4E2M1FN", 1, 4)         \
  X(kF6E2M3FN, "f6E2M3FN", 1, 6)         \
  X(kF6E3M2FN, "f6E3M2FN", 1, 6)         \
  X(kF8E3M4, "f8E3M4", 1, 8)             \
  X(kF8E4M3, "f8E4M3", 1, 8)             \
  X(kF8E4M3FN, "f8E4M3FN", 1, 8)         \
  X(kF8E4M3FNUZ, "f8E4M3FNUZ", 1, 8)     \
  X(kF8E4M3B11FNUZ, "f8E4M3B11FNUZ", 1, 8) \
  X(kF8E5M2, "f8E5M2", 1, 8)             \
  X(kF8E5M2FNUZ, "f8E5M2FNUZ", 1, 8)     \
  X(kF8E8M0FNU, "f8E8M0FNU", 1, 8)       \
  X(kF16, "f16", 2, 16)                  \
  X(kBF16, "bf16", 2, 16)                \
  X(kF32, "f32", 4, 32)                  \
  X(kF64, "f64", 8, 64)                  \
  X(kC64, "complex<f32>", 8, 64)         \
  X(kC128, "complex<f64>", 16, 128)

enum class DType : uint8_t {
#define JITD_DTYPE_ENUM(e, s, b, w) e,
  JITD_DTYPES(JITD_DTYPE_ENUM)
#undef JITD_DTYPE_ENUM
};

inline constexpr int kNumDTypes = static_cast<int>(DType::kC128) + 1;

// "f32", "ui8", "complex<f64>", ... as MLIR prints them.
std::string_view DTypeName(DType t);
// Parses an MLIR element type spelling ("i32", "si32", "f16", "complex<f32>").
std::optional<DType> ParseDTypeName(std::string_view s);

int StorageBytes(DType t);  // bytes one element occupies in a Literal
int BitWidth(DType t);      // meaningful bits (i1 = 1, i4 = 4, c64 = 64)

inline bool IsPred(DType t) { return t == DType::kPred; }
bool IsSignedInt(DType t);    // i2..i64
bool IsUnsignedInt(DType t);  // ui2..ui64
inline bool IsInteger(DType t) { return IsSignedInt(t) || IsUnsignedInt(t); }
bool IsFloat(DType t);        // every real floating-point type, f4..f64
inline bool IsComplex(DType t) { return t == DType::kC64 || t == DType::kC128; }
// The component type of a complex type (f32 for c64); `t` itself otherwise.
DType ComplexComponent(DType t);
// The complex type with component `t` (c64 for f32), if there is one.
std::optional<DType> ComplexOf(DType t);

// Describes a binary floating-point format well enough to encode and decode
// every value of it, including the f8 variants without infinities.
struct FloatFormat {
  enum class Nan : uint8_t {
    kIeee,       // exponent all ones, mantissa != 0 (f16, bf16, f32, f64, f8E5M2...)
    kAllOnes,    // only exponent and mantissa all ones (the "FN" types)
    kNegZero,    // the bit pattern of -0 (the "FNUZ" types)
    kNone,       // no NaN (f4E2M1FN, f6*)
  };
  int exponent_bits;
  int mantissa_bits;
  int bias;
  bool has_infinity;
  bool has_sign;
  bool has_zero;
  Nan nan;
};
// The format of a real float type; nullopt for non-floats.
std::optional<FloatFormat> GetFloatFormat(DType t);

// Rounds `value` to the nearest representable value of `format` (ties to
// even) and returns its bit pattern. Values out of range become infinity, or
// NaN for formats without infinities (the saturation choice of the StableHLO
// reference for overflowing conversions).
uint64_t EncodeFloat(double value, const FloatFormat& format);
double DecodeFloat(uint64_t bits, const FloatFormat& format);

// Fast paths for the common 16-bit formats.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBFloat16(float f);
float BFloat16ToFloat(uint16_t b);

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_DTYPE_H_
