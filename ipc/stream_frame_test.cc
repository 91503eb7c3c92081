#include "ipc/stream_frame.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ipc/testing.h"

namespace jitd::ipc {
namespace {

using testing::Bytes;

TEST(StreamFrame, HeaderRoundTrip) {
  const auto header = EncodeFrameHeader(FrameKind::kRequest, 1234);
  EXPECT_EQ(header[0], 1234 & 0xff);
  EXPECT_EQ(header[1], 1234 >> 8);
  EXPECT_EQ(header[4], 3);
  StatusOr<FrameHeader> decoded = DecodeFrameHeader(header);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->length, 1234u);
  EXPECT_EQ(decoded->kind, FrameKind::kRequest);
}

TEST(StreamFrame, HeaderRefusesBadKindFlagsAndLength) {
  auto header = EncodeFrameHeader(FrameKind::kData, 10);
  header[4] = 0;
  StatusOr<FrameHeader> bad = DecodeFrameHeader(header);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown frame kind 0"), std::string::npos);
  header[4] = 9;
  EXPECT_FALSE(DecodeFrameHeader(header).ok());

  header = EncodeFrameHeader(FrameKind::kData, 10);
  header[5] = 1;
  bad = DecodeFrameHeader(header);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("flags"), std::string::npos);

  header = EncodeFrameHeader(FrameKind::kData, kMaxFramePayload + 1);
  bad = DecodeFrameHeader(header);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("exceeds the limit"), std::string::npos);
  EXPECT_TRUE(DecodeFrameHeader(EncodeFrameHeader(FrameKind::kData, kMaxFramePayload)).ok());
}

TEST(StreamFrame, AppendFrameRefusesOversizedPayload) {
  std::vector<uint8_t> out;
  std::vector<uint8_t> big(kMaxFramePayload + 1);
  EXPECT_FALSE(AppendFrame(&out, FrameKind::kRequest, big).ok());
  EXPECT_TRUE(out.empty());
}

TEST(StreamFrame, DataPrefixAndParse) {
  const auto prefix = EncodeDataPrefix(0x0102030405060708ull, 5);
  StatusOr<FrameHeader> header =
      DecodeFrameHeader(std::span<const uint8_t, kFrameHeaderBytes>(prefix.data(), 8));
  ASSERT_TRUE(header.ok());
  EXPECT_EQ(header->kind, FrameKind::kData);
  EXPECT_EQ(header->length, 8u + 5u);
  std::vector<uint8_t> payload(prefix.begin() + 8, prefix.end());
  const std::string data = "hello";
  payload.insert(payload.end(), data.begin(), data.end());
  StatusOr<DataChunk> chunk = ParseDataPayload(payload);
  ASSERT_TRUE(chunk.ok());
  EXPECT_EQ(chunk->offset, 0x0102030405060708ull);
  EXPECT_EQ(std::string(chunk->bytes.begin(), chunk->bytes.end()), "hello");

  EXPECT_FALSE(ParseDataPayload(std::vector<uint8_t>(7)).ok());
  EXPECT_FALSE(ParseDataPayload(std::vector<uint8_t>(8 + kMaxDataChunk + 1)).ok());
  EXPECT_TRUE(ParseDataPayload(std::vector<uint8_t>(8)).ok());
}

TEST(StreamFrame, ErrorPayloadRoundTrip) {
  Status status(StatusCode::kPermissionDenied, "no token");
  Status back = DecodeErrorPayload(EncodeErrorPayload(status));
  EXPECT_EQ(back.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(back.message(), "no token");
  // Malformed payloads never decode as OK.
  EXPECT_EQ(DecodeErrorPayload(std::vector<uint8_t>(3)).code(), StatusCode::kInternal);
  EXPECT_EQ(DecodeErrorPayload(std::vector<uint8_t>(4, 0)).code(), StatusCode::kInternal);
  // Long messages are cut.
  Status long_status(StatusCode::kInternal, std::string(10000, 'x'));
  EXPECT_EQ(EncodeErrorPayload(long_status).size(), 4u + 4096u);
}

TEST(StreamFrame, DecoderReassemblesFramesFedByteByByte) {
  std::vector<uint8_t> stream;
  ASSERT_TRUE(AppendFrame(&stream, FrameKind::kHello, Bytes("abc")).ok());
  ASSERT_TRUE(AppendFrame(&stream, FrameKind::kRequest, {}).ok());
  std::vector<uint8_t> big(3000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(AppendFrame(&stream, FrameKind::kReply, big).ok());

  FrameDecoder decoder;
  std::vector<std::pair<FrameKind, std::vector<uint8_t>>> frames;
  for (uint8_t byte : stream) {
    decoder.Feed(std::span<const uint8_t>(&byte, 1));
    FrameDecoder::Frame frame;
    while (true) {
      StatusOr<bool> next = decoder.Next(&frame);
      ASSERT_TRUE(next.ok()) << next.status().ToString();
      if (!*next) break;
      frames.emplace_back(frame.kind,
                          std::vector<uint8_t>(frame.payload.begin(), frame.payload.end()));
    }
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].first, FrameKind::kHello);
  EXPECT_EQ(std::string(frames[0].second.begin(), frames[0].second.end()), "abc");
  EXPECT_EQ(frames[1].first, FrameKind::kRequest);
  EXPECT_TRUE(frames[1].second.empty());
  EXPECT_EQ(frames[2].second, big);
  EXPECT_EQ(decoder.buffered(), 0u);
}

TEST(StreamFrame, DecoderFailsForGoodOnMalformedHeader) {
  std::vector<uint8_t> stream;
  ASSERT_TRUE(AppendFrame(&stream, FrameKind::kHello, Bytes("x")).ok());
  stream.insert(stream.end(), {0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0});  // too long
  FrameDecoder decoder;
  decoder.Feed(stream);
  FrameDecoder::Frame frame;
  StatusOr<bool> first = decoder.Next(&frame);
  ASSERT_TRUE(first.ok() && *first);
  StatusOr<bool> second = decoder.Next(&frame);
  ASSERT_FALSE(second.ok());
  decoder.Feed(stream);
  EXPECT_FALSE(decoder.Next(&frame).ok());
}

TEST(StreamFrame, DecoderSurvivesRandomBytes) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    FrameDecoder decoder;
    std::vector<uint8_t> junk(rng() % 64);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    decoder.Feed(junk);
    FrameDecoder::Frame frame;
    for (int i = 0; i < 16; ++i) {
      StatusOr<bool> next = decoder.Next(&frame);
      if (!next.ok() || !*next) break;
      EXPECT_LE(frame.payload.size(), kMaxFramePayload);
    }
  }
}

TEST(StreamFrame, RemoteMessagesVerify) {
  flatbuffers::FlatBufferBuilder fbb;
  auto read = remote::CreateReadRequest(fbb, 64, 128);
  fbb.Finish(remote::CreateHeapRequest(fbb, 9, remote::HeapOp_ReadRequest, read.Union()),
             remote::HeapRequestIdentifier());
  std::vector<uint8_t> bytes(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  StatusOr<const remote::HeapRequest*> request = VerifyHeapRequest(bytes);
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ((*request)->id(), 9u);
  ASSERT_NE((*request)->op_as_ReadRequest(), nullptr);
  EXPECT_EQ((*request)->op_as_ReadRequest()->length(), 128u);

  bytes[4] ^= 0xff;  // the identifier
  EXPECT_FALSE(VerifyHeapRequest(bytes).ok());
  EXPECT_FALSE(VerifyRemoteHello(std::vector<uint8_t>(4)).ok());
  std::vector<uint8_t> junk(64, 0x5a);
  std::memcpy(junk.data() + 4, "JTR1", 4);
  EXPECT_FALSE(VerifyRemoteHello(junk).ok());
}

}  // namespace
}  // namespace jitd::ipc
