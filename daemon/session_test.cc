#include "daemon/session.h"

#include <gtest/gtest.h>

#include <vector>

namespace jitd::daemon {
namespace {

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create({});
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(instance).value();
    SessionOptions options;
    options.segment_bytes = 4 << 20;
    auto session = Session::Create(instance_.get(), 1, options);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    session_ = std::move(session).value();
  }

  // Handles `bytes` and returns the reply's status code.
  wire::StatusCode Send(std::span<const uint8_t> bytes, uint64_t* reply_id = nullptr) {
    reply_ = session_->Handle(bytes);
    auto reply = ipc::VerifyReply(reply_);
    EXPECT_TRUE(reply.ok());
    if (!reply.ok()) return wire::StatusCode_INTERNAL;
    if (reply_id) *reply_id = (*reply)->id();
    return (*reply)->status() ? (*reply)->status()->code() : wire::StatusCode_OK;
  }

  wire::StatusCode Send(flatbuffers::FlatBufferBuilder& fbb, wire::Request type,
                        flatbuffers::Offset<void> body) {
    fbb.Finish(wire::CreateRequestMessage(fbb, 7, type, body), wire::RequestMessageIdentifier());
    return Send(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
  }

  std::unique_ptr<Instance> instance_;
  std::unique_ptr<Session> session_;
  std::vector<uint8_t> reply_;
};

TEST_F(SessionTest, GarbageIsInvalidArgumentWithIdZero) {
  std::vector<uint8_t> garbage(64, 0xAB);
  uint64_t id = 99;
  EXPECT_EQ(Send(garbage, &id), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_EQ(id, 0u);
  EXPECT_EQ(instance_->stats().bad_requests, 1u);
}

TEST_F(SessionTest, BufferOutsideHeapIsRejected) {
  flatbuffers::FlatBufferBuilder fbb;
  auto dims = fbb.CreateVector(std::vector<int64_t>{4});
  auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
  wire::HeapRef data(uint64_t{1} << 40, 16);
  auto body = wire::CreateCreateBufferRequest(fbb, shape, &data);
  EXPECT_EQ(Send(fbb, wire::Request_CreateBufferRequest, body.Union()),
            wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_EQ(session_->num_buffers(), 0u);
}

TEST_F(SessionTest, BufferLengthMustMatchShape) {
  flatbuffers::FlatBufferBuilder fbb;
  auto dims = fbb.CreateVector(std::vector<int64_t>{4});
  auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
  wire::HeapRef data(0, 15);
  auto body = wire::CreateCreateBufferRequest(fbb, shape, &data);
  EXPECT_EQ(Send(fbb, wire::Request_CreateBufferRequest, body.Union()),
            wire::StatusCode_INVALID_ARGUMENT);
}

TEST_F(SessionTest, UnknownHandlesAreNotFound) {
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateExecuteRequest(fbb, 12345);
    EXPECT_EQ(Send(fbb, wire::Request_ExecuteRequest, body.Union()), wire::StatusCode_NOT_FOUND);
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateReleaseRequest(fbb, 1);
    EXPECT_EQ(Send(fbb, wire::Request_ReleaseRequest, body.Union()), wire::StatusCode_NOT_FOUND);
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateDestroyBufferRequest(fbb, 1);
    EXPECT_EQ(Send(fbb, wire::Request_DestroyBufferRequest, body.Union()),
              wire::StatusCode_NOT_FOUND);
  }
}

TEST_F(SessionTest, ProgramOutsideHeapIsRejected) {
  flatbuffers::FlatBufferBuilder fbb;
  wire::HeapRef program(uint64_t{1} << 50, 100);
  auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program);
  EXPECT_EQ(Send(fbb, wire::Request_CompileRequest, body.Union()),
            wire::StatusCode_INVALID_ARGUMENT);
}

TEST_F(SessionTest, CompileWithoutProgramOrFingerprintIsRejected) {
  flatbuffers::FlatBufferBuilder fbb;
  auto body = wire::CreateCompileRequest(fbb);
  EXPECT_EQ(Send(fbb, wire::Request_CompileRequest, body.Union()),
            wire::StatusCode_INVALID_ARGUMENT);
}

TEST_F(SessionTest, HelloAndStats) {
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateHello(fbb, ipc::kProtocolVersion);
    EXPECT_EQ(Send(fbb, wire::Request_Hello, body.Union()), wire::StatusCode_OK);
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateStatsRequest(fbb, false);
    EXPECT_EQ(Send(fbb, wire::Request_StatsRequest, body.Union()), wire::StatusCode_OK);
  }
}

}  // namespace
}  // namespace jitd::daemon
