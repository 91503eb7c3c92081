#include "ipc/protocol.h"

#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace jitd::ipc {
namespace {

std::vector<uint8_t> BuildCompileRequest() {
  flatbuffers::FlatBufferBuilder b;
  std::vector<int64_t> dims = {2, 3};
  auto shape = wire::CreateTensorShapeDirect(b, wire::ElementType_F32, &dims);
  std::vector<flatbuffers::Offset<wire::TensorShape>> shapes = {shape};
  auto options = wire::CreateCompileOptionsDirect(b, "interpreter", "", false);
  wire::HeapRef program(4096, 120);
  auto compile = wire::CreateCompileRequestDirect(b, wire::ProgramFormat_STABLEHLO_TEXT, &program,
                                                  nullptr, &shapes, options);
  auto message = wire::CreateRequestMessage(b, 42, wire::Request_CompileRequest, compile.Union());
  b.Finish(message, wire::RequestMessageIdentifier());
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

TEST(ProtocolTest, RequestRoundTrip) {
  const std::vector<uint8_t> bytes = BuildCompileRequest();
  auto message = VerifyRequest(bytes);
  ASSERT_TRUE(message.ok()) << message.status().ToString();
  EXPECT_EQ((*message)->id(), 42u);
  const wire::CompileRequest* compile = (*message)->request_as_CompileRequest();
  ASSERT_NE(compile, nullptr);
  EXPECT_EQ(compile->program()->offset(), 4096u);
  EXPECT_EQ(compile->program()->length(), 120u);
  EXPECT_EQ(compile->argument_shapes()->Get(0)->dims()->Get(1), 3);
  EXPECT_EQ(compile->options()->device()->str(), "interpreter");
}

TEST(ProtocolTest, ReplyCarriesStatus) {
  flatbuffers::FlatBufferBuilder b;
  auto status = wire::CreateStatusDirect(b, ToWire(StatusCode::kNotFound), "no such executable");
  b.Finish(wire::CreateReplyMessage(b, 7, status), wire::RequestMessageIdentifier());
  std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  auto reply = VerifyReply(bytes);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  Status s = FromWire((*reply)->status());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no such executable");
  EXPECT_TRUE(FromWire(nullptr).ok());
}

TEST(ProtocolTest, StatusCodesRoundTrip) {
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    flatbuffers::FlatBufferBuilder b;
    auto status = wire::CreateStatusDirect(b, ToWire(static_cast<StatusCode>(c)), "m");
    b.Finish(status);
    auto* parsed = flatbuffers::GetRoot<wire::Status>(b.GetBufferPointer());
    EXPECT_EQ(static_cast<int>(FromWire(parsed).code()), c);
  }
}

TEST(ProtocolTest, MalformedMessagesAreRejected) {
  std::vector<uint8_t> bytes = BuildCompileRequest();
  EXPECT_FALSE(VerifyRequest(std::span<const uint8_t>(bytes.data(), 4)).ok());  // too short
  std::vector<uint8_t> wrong_id = bytes;
  wrong_id[4] ^= 0xFF;
  auto r = VerifyRequest(wrong_id);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("identifier"), std::string::npos);
  // Every truncation fails verification.
  for (size_t n = 8; n < bytes.size(); ++n) {
    EXPECT_FALSE(VerifyRequest(std::span<const uint8_t>(bytes.data(), n)).ok()) << n;
  }
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto misaligned = VerifyRequest(std::span<const uint8_t>(shifted.data() + 1, bytes.size()));
  ASSERT_FALSE(misaligned.ok());
  EXPECT_NE(misaligned.status().message().find("aligned"), std::string::npos);
  std::vector<uint8_t> huge(kMaxMessageBytes + 1, 0);
  EXPECT_FALSE(VerifyRequest(huge).ok());
}

TEST(ProtocolTest, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> good = BuildCompileRequest();
  std::mt19937 rng(1);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    auto message = VerifyRequest(bytes);
    if (!message.ok()) continue;
    ++accepted;
    // A message that verifies can be read without leaving the buffer.
    if (const auto* c = (*message)->request_as_CompileRequest()) {
      if (c->argument_shapes()) {
        for (const auto* shape : *c->argument_shapes()) {
          if (shape && shape->dims()) (void)shape->dims()->size();
        }
      }
      if (c->options() && c->options()->device()) (void)c->options()->device()->str();
    }
  }
  EXPECT_GT(accepted, 0);  // some corruptions only change values
}

}  // namespace
}  // namespace jitd::ipc
