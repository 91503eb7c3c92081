#include "jit/ir/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace jitd::ir {
namespace {

TEST(DTypeTest, NamesRoundTrip) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    auto parsed = ParseDTypeName(DTypeName(t));
    ASSERT_TRUE(parsed.has_value()) << DTypeName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(ParseDTypeName("si32"), DType::kS32);
  EXPECT_FALSE(ParseDTypeName("f31").has_value());
  EXPECT_FALSE(ParseDTypeName("").has_value());
}

TEST(DTypeTest, Traits) {
  EXPECT_TRUE(IsSignedInt(DType::kS4));
  EXPECT_TRUE(IsUnsignedInt(DType::kU64));
  EXPECT_FALSE(IsInteger(DType::kPred));
  EXPECT_TRUE(IsFloat(DType::kBF16));
  EXPECT_TRUE(IsFloat(DType::kF8E4M3FN));
  EXPECT_FALSE(IsFloat(DType::kC64));
  EXPECT_EQ(ComplexComponent(DType::kC128), DType::kF64);
  EXPECT_EQ(ComplexOf(DType::kF32), DType::kC64);
  EXPECT_FALSE(ComplexOf(DType::kF16).has_value());
  EXPECT_EQ(StorageBytes(DType::kC128), 16);
  EXPECT_EQ(BitWidth(DType::kS2), 2);
}

TEST(DTypeTest, HalfConversionsAreExact) {
  // Every f16 value decodes and re-encodes to itself (NaNs stay NaN).
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = HalfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), bits) << bits;
  }
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);  // rounds up to infinity
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7BFF);
}

TEST(DTypeTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3F80);
  // 1 + 2^-8 is exactly between 1 and 1 + 2^-7: ties to even (1.0).
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
}

TEST(DTypeTest, EncodeFloatMatchesHardwareForF32) {
  const FloatFormat f32 = *GetFloatFormat(DType::kF32);
  for (double v : {0.1, -3.75, 1e-40, 3.4028235e38, 1e39, -0.0, 5e-324}) {
    const float expected = static_cast<float>(v);
    uint32_t expected_bits;
    std::memcpy(&expected_bits, &expected, 4);
    EXPECT_EQ(EncodeFloat(v, f32), expected_bits) << v;
    EXPECT_EQ(DecodeFloat(expected_bits, f32), static_cast<double>(expected)) << v;
  }
}

TEST(DTypeTest, Float8Formats) {
  const FloatFormat e4m3fn = *GetFloatFormat(DType::kF8E4M3FN);
  EXPECT_EQ(DecodeFloat(0x7E, e4m3fn), 448.0);  // largest finite
  EXPECT_TRUE(std::isnan(DecodeFloat(0x7F, e4m3fn)));
  EXPECT_EQ(EncodeFloat(448.0, e4m3fn), 0x7Eu);
  EXPECT_EQ(EncodeFloat(1000.0, e4m3fn), 0x7Fu);  // no infinity: NaN
  const FloatFormat e5m2 = *GetFloatFormat(DType::kF8E5M2);
  EXPECT_EQ(EncodeFloat(INFINITY, e5m2), 0x7Cu);
  EXPECT_EQ(DecodeFloat(0x3C, e5m2), 1.0);
  const FloatFormat fnuz = *GetFloatFormat(DType::kF8E4M3FNUZ);
  EXPECT_TRUE(std::isnan(DecodeFloat(0x80, fnuz)));
  EXPECT_EQ(EncodeFloat(-0.0, fnuz), 0u);  // no negative zero
  // Every f8E4M3FN pattern round-trips.
  for (uint64_t bits = 0; bits < 256; ++bits) {
    const double v = DecodeFloat(bits, e4m3fn);
    if (std::isnan(v)) continue;
    EXPECT_EQ(EncodeFloat(v, e4m3fn), bits) << bits;
  }
}

}  // namespace
}  // namespace jitd::ir
