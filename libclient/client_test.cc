// Unit tests of libclient that need no daemon (the daemon tests and
// tests/integration cover the round trips).
#include "libclient/client.h"

#include <gtest/gtest.h>

namespace jitd::client {
namespace {

TEST(ClientTest, ElementSizes) {
  EXPECT_EQ(ElementByteSize(wire::ElementType_F32), 4u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_C128), 16u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_S4), 1u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_BF16), 2u);
  EXPECT_EQ(ElementByteSize(wire::ElementType_INVALID), 0u);
  EXPECT_EQ(ElementByteSize(static_cast<wire::ElementType>(200)), 0u);
}

TEST(ClientTest, ByteSize) {
  auto b = ByteSize({wire::ElementType_F64, {2, 3}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 48u);
  EXPECT_FALSE(ByteSize({wire::ElementType_F32, {-1}}).ok());
  EXPECT_FALSE(ByteSize({wire::ElementType_F32, {int64_t{1} << 40, int64_t{1} << 40}}).ok());
  EXPECT_FALSE(ByteSize({wire::ElementType_INVALID, {1}}).ok());
}

TEST(ClientTest, ShapeAndFingerprintText) {
  EXPECT_EQ((TensorShape{wire::ElementType_F32, {2, 4}}).ToString(), "f32[2,4]");
  Fingerprint f{};
  f[0] = 0xAB;
  f[15] = 0x01;
  EXPECT_EQ(FingerprintHex(f), "ab000000000000000000000000000001");
}

TEST(ClientTest, ConnectWithoutDaemonIsUnavailable) {
  auto c = Client::Connect("/tmp/jitd-client-test-nothing-here/jitd.sock");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(c.status().message().find("jitd serve"), std::string::npos);
  EXPECT_EQ(Client::Connect("").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace jitd::client
