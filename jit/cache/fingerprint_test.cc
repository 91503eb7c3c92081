#include "jit/cache/fingerprint.h"

#include <gtest/gtest.h>

namespace jitd::cache {
namespace {

CacheKeyParts SampleParts() {
  return MakeKeyParts("func.func @main() {}", "tensor<2xf32>,tensor<i32>", "opt=2", "cpu",
                      "jitd-0.1.0-abc", "x86_64:avx2,sse2");
}

TEST(FingerprintTest, HashProgramIs32HexAndDeterministic) {
  std::string h = HashProgram("abc");
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(h, HashProgram("abc"));
  EXPECT_NE(h, HashProgram("abd"));
  EXPECT_NE(HashProgram(""), HashProgram(std::string(1, '\0')));
}

TEST(FingerprintTest, DependsOnEveryPart) {
  const CacheKeyParts base = SampleParts();
  const Fingerprint f = Fingerprint::Of(base);
  EXPECT_EQ(f, Fingerprint::Of(SampleParts()));
  for (size_t i = 0; i < kNumKeyParts; ++i) {
    CacheKeyParts changed = base;
    KeyPart(changed, i) += "x";
    EXPECT_NE(Fingerprint::Of(changed), f) << kKeyPartNames[i];
  }
}

TEST(FingerprintTest, LengthPrefixingPreventsBoundaryCollisions) {
  CacheKeyParts a, b;
  a.argument_shapes = "ab";
  a.options = "c";
  b.argument_shapes = "a";
  b.options = "bc";
  EXPECT_NE(Fingerprint::Of(a), Fingerprint::Of(b));
  CacheKeyParts c, d;
  c.device = "x";
  d.compiler_build_id = "x";
  EXPECT_NE(Fingerprint::Of(c), Fingerprint::Of(d));
}

TEST(FingerprintTest, HexRoundTrip) {
  const Fingerprint f = Fingerprint::Of(SampleParts());
  const std::string hex = f.ToHex();
  ASSERT_EQ(hex.size(), 32u);
  StatusOr<Fingerprint> parsed = Fingerprint::Parse(hex);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, f);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  ASSERT_TRUE(Fingerprint::Parse(upper).ok());
  EXPECT_EQ(*Fingerprint::Parse(upper), f);
  EXPECT_EQ(Fingerprint(0x0123456789abcdefull, 0xfedcba9876543210ull).ToHex(),
            "0123456789abcdeffedcba9876543210");
}

TEST(FingerprintTest, ParseRejectsBadText) {
  EXPECT_EQ(Fingerprint::Parse("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Fingerprint::Parse("abc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Fingerprint::Parse(std::string(33, 'a')).status().code(),
            StatusCode::kInvalidArgument);
  StatusOr<Fingerprint> bad = Fingerprint::Parse(std::string(31, 'a') + "g");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("position 31"), std::string::npos);
}

TEST(FingerprintTest, ExplainNamesDifferingComponents) {
  CacheKeyParts want = SampleParts();
  CacheKeyParts nearest = want;
  EXPECT_EQ(Explain(want, nearest), "no component differs");
  nearest.device = "interpreter";
  nearest.options = "opt=0";
  std::string why = Explain(want, nearest);
  EXPECT_NE(why.find("device ('cpu' vs cached 'interpreter')"), std::string::npos) << why;
  EXPECT_NE(why.find("options"), std::string::npos) << why;
  EXPECT_EQ(why.find("program_hash"), std::string::npos) << why;
  EXPECT_EQ(CountEqualParts(want, nearest), 4);
  // Long values are shortened.
  nearest.argument_shapes = std::string(1000, 't');
  why = Explain(want, nearest);
  EXPECT_NE(why.find("(1000 bytes)"), std::string::npos) << why;
  EXPECT_LT(why.size(), 600u);
}

TEST(FingerprintTest, HostCpuFeaturesAreStable) {
  const std::string& f = HostCpuFeatures();
  EXPECT_EQ(f, HostCpuFeatures());
  EXPECT_NE(f.find(':'), std::string::npos);
#if defined(__x86_64__)
  EXPECT_EQ(f.rfind("x86_64:", 0), 0u) << f;
  EXPECT_NE(f.find("sse2"), std::string::npos) << f;
#endif
}

}  // namespace
}  // namespace jitd::cache
