#include "jit/cache/alias_map.h"

#include <string>

#include <gtest/gtest.h>

namespace jitd::cache {
namespace {

TEST(AliasMapTest, FindsWhatWasPut) {
  AliasMap map(1 << 20);
  EXPECT_FALSE(map.Find("a").has_value());
  map.Put("a", "program-1");
  map.Put("b", "program-1");
  EXPECT_EQ(map.Find("a"), "program-1");
  EXPECT_EQ(map.Find("b"), "program-1");
  map.Put("a", "program-2");  // replaced, not duplicated
  EXPECT_EQ(map.Find("a"), "program-2");
  EXPECT_EQ(map.size(), 2u);
}

TEST(AliasMapTest, StaysWithinBudgetDroppingLeastRecentlyUsed) {
  const uint64_t entry = 1 + 10 + AliasMap::kEntryOverhead;
  AliasMap map(3 * entry);
  map.Put("a", std::string(10, 'x'));
  map.Put("b", std::string(10, 'x'));
  map.Put("c", std::string(10, 'x'));
  ASSERT_TRUE(map.Find("a").has_value());  // a is now the most recent
  map.Put("d", std::string(10, 'x'));      // evicts b
  EXPECT_FALSE(map.Find("b").has_value());
  EXPECT_TRUE(map.Find("a").has_value());
  EXPECT_TRUE(map.Find("d").has_value());
  EXPECT_LE(map.bytes(), 3 * entry);
  map.Put("huge", std::string(4 * entry, 'y'));  // larger than the budget: not kept
  EXPECT_FALSE(map.Find("huge").has_value());
  EXPECT_EQ(map.size(), 3u);
}

}  // namespace
}  // namespace jitd::cache
