#include "tools/conformance/checks.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace jitd::conformance {
namespace {

using ir::DType;

ir::Literal Floats(DType t, std::vector<double> values) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(t, {static_cast<int64_t>(values.size())}));
  for (size_t i = 0; i < values.size(); ++i) lit.SetDouble(static_cast<int64_t>(i), values[i]);
  return lit;
}

CheckSpec Spec(CheckSpec::Kind kind) {
  CheckSpec s;
  s.kind = kind;
  s.name = "check.test";
  return s;
}

TEST(ChecksTest, UlpDistance) {
  EXPECT_EQ(UlpDistance(0x3F800000, 0x3F800001, DType::kF32), 1u);
  EXPECT_EQ(UlpDistance(0x3F800001, 0x3F800000, DType::kF32), 1u);
  // +0 and -0 are bitwise different but 0 ULP apart (0 + 0 magnitude).
  EXPECT_EQ(UlpDistance(0x00000000, 0x80000000, DType::kF32), 0u);
  // Across signs: sum of magnitudes.
  EXPECT_EQ(UlpDistance(0x00000001, 0x80000002, DType::kF32), 3u);
  // Any two NaNs: 0; NaN against a number, or infinity against finite: max.
  EXPECT_EQ(UlpDistance(0x7FC00000, 0xFFC00001, DType::kF32), 0u);
  EXPECT_EQ(UlpDistance(0x7FC00000, 0x3F800000, DType::kF32), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(UlpDistance(0x7F800000, 0x7F7FFFFF, DType::kF32), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(UlpDistance(0x3F80, 0x3F82, DType::kBF16), 2u);
}

TEST(ChecksTest, EqIsIeeeEquality) {
  auto a = Floats(DType::kF32, {1.0, NAN});
  EXPECT_TRUE(Compare(Spec(CheckSpec::Kind::kEq), Floats(DType::kF32, {1.0}), Floats(DType::kF32, {1.0})).ok());
  Status s = Compare(Spec(CheckSpec::Kind::kEq), a, a);
  ASSERT_FALSE(s.ok());  // NaN never equals
  EXPECT_NE(s.message().find("element 1 [1]"), std::string::npos) << s.message();
}

TEST(ChecksTest, AlmostEqUsesAbsoluteToleranceAndMatchesNans) {
  CheckSpec spec = Spec(CheckSpec::Kind::kAlmostEq);
  spec.tolerance = 1e-3;
  EXPECT_TRUE(Compare(spec, Floats(DType::kF64, {1.0, NAN}), Floats(DType::kF64, {1.0009, NAN})).ok());
  Status s = Compare(spec, Floats(DType::kF64, {1.0}), Floats(DType::kF64, {1.002}));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tolerance"), std::string::npos) << s.message();
  EXPECT_FALSE(Compare(spec, Floats(DType::kF64, {INFINITY}), Floats(DType::kF64, {-INFINITY})).ok());
  EXPECT_TRUE(Compare(spec, Floats(DType::kF64, {INFINITY}), Floats(DType::kF64, {INFINITY})).ok());
}

TEST(ChecksTest, CloseCountsUlpsPerComponent) {
  CheckSpec spec = Spec(CheckSpec::Kind::kClose);
  spec.max_ulp = 3;
  ir::Literal a = *ir::Literal::Create(ir::Type::Tensor(DType::kC64, {1}));
  ir::Literal b = a;
  a.SetComplex(0, {1.0, 2.0});
  b.SetComplex(0, {1.0, std::nextafter(std::nextafter(2.0f, 3.0f), 3.0f)});
  EXPECT_TRUE(Compare(spec, a, b).ok());
  spec.max_ulp = 1;
  Status s = Compare(spec, a, b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 ULP, allowed 0..1"), std::string::npos) << s.message();
}

TEST(ChecksTest, IntegersCompareExactly) {
  ir::Literal a = *ir::Literal::Create(ir::Type::Tensor(DType::kU8, {2}));
  ir::Literal b = a;
  b.SetInt(1, 255);
  Status s = Compare(Spec(CheckSpec::Kind::kClose), a, b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("actual 0, expected 255"), std::string::npos) << s.message();
}

TEST(ChecksTest, TypeMismatchIsReported) {
  EXPECT_FALSE(Compare(Spec(CheckSpec::Kind::kEq), Floats(DType::kF32, {1}), Floats(DType::kF64, {1})).ok());
}

TEST(ChecksTest, SerializedEqComparesWithTheProbedValueBitForBit) {
  ProbeLog log;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(log.Record("p", Floats(DType::kF64, {1.0, nan})).ok());
  ASSERT_TRUE(log.Record("p", Floats(DType::kF64, {2.0, 3.0})).ok());
  HoistedCheck check{Spec(CheckSpec::Kind::kSerializedEq), 0, std::nullopt};
  check.spec.probe_id = "p";
  std::vector<eval::RuntimeValue> results;
  results.emplace_back(Floats(DType::kF64, {1.0, nan}));
  EXPECT_TRUE(CompareHoisted(check, results, &log).ok());  // a probed NaN matches its bits
  check.spec.iteration = 1;
  EXPECT_FALSE(CompareHoisted(check, results, &log).ok());
  check.spec.iteration = 2;
  Status missing = CompareHoisted(check, results, &log);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("ran 2 time(s)"), std::string::npos) << missing.message();
  check.spec.probe_id = "other";
  EXPECT_FALSE(CompareHoisted(check, results, &log).ok());
}

}  // namespace
}  // namespace jitd::conformance
