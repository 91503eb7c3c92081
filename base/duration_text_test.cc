#include "base/duration_text.h"

#include <gtest/gtest.h>

namespace jitd {
namespace {

TEST(DurationText, PicksTheUnitBySize) {
  EXPECT_EQ(DurationText(0), "0 us");
  EXPECT_EQ(DurationText(0.004), "0.00 us");
  EXPECT_EQ(DurationText(1.234), "1.23 us");
  EXPECT_EQ(DurationText(12.34), "12.3 us");
  EXPECT_EQ(DurationText(850), "850 us");
  EXPECT_EQ(DurationText(999.4), "999 us");
  EXPECT_EQ(DurationText(999.6), "1.00 ms");
  EXPECT_EQ(DurationText(1250), "1.25 ms");
  EXPECT_EQ(DurationText(189098.0), "189 ms");
  EXPECT_EQ(DurationText(3.42e6), "3.42 s");
  EXPECT_EQ(DurationText(42.1e6), "42.1 s");
  EXPECT_EQ(DurationText(125e6), "2 min 5 s");
}

}  // namespace
}  // namespace jitd
