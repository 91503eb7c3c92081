#include "daemon/session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "daemon/test_programs.h"

namespace jitd::daemon {
namespace {

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create({});
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(instance).value();
    MakeSession({});
  }

  // Replaces the session with one made with `options` (segment: 4 MiB) and
  // attaches a client-side view of its segment.
  void MakeSession(SessionOptions options) {
    session_.reset();
    client_segment_.reset();
    options.segment_bytes = 4 << 20;
    auto session = Session::Create(instance_.get(), 1, options);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    session_ = std::move(session).value();
    auto segment = ipc::Segment::Attach(UniqueFd(::dup(session_->segment_fd())));
    ASSERT_TRUE(segment.ok()) << segment.status().ToString();
    client_segment_ = std::move(segment).value();
  }

  // The message of the last reply's status ("" when OK).
  std::string LastMessage() {
    auto reply = ipc::VerifyReply(reply_);
    if (!reply.ok() || (*reply)->status() == nullptr || (*reply)->status()->message() == nullptr) {
      return "";
    }
    return (*reply)->status()->message()->str();
  }

  // Compiles `text` (copied into the heap, as a client does); returns the
  // status code and, when OK, the executable handle.
  wire::StatusCode Compile(std::string_view text, uint64_t* handle = nullptr) {
    auto ref = client_segment_->Allocate(text.size());
    EXPECT_TRUE(ref.ok());
    if (!ref.ok()) return wire::StatusCode_INTERNAL;
    std::memcpy(client_segment_->HeapBytes(*ref)->data(), text.data(), text.size());
    flatbuffers::FlatBufferBuilder fbb;
    wire::HeapRef program(ref->offset, text.size());
    auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program);
    wire::StatusCode code = Send(fbb, wire::Request_CompileRequest, body.Union());
    if (code == wire::StatusCode_OK && handle != nullptr) {
      *handle = (*ipc::VerifyReply(reply_))->body_as_CompileReply()->executable();
    }
    return code;
  }

  // Registers a buffer of `dims` f32 (or i1 when `pred`) at heap offset
  // `offset`; returns the code and, when OK, the handle.
  wire::StatusCode CreateBuffer(std::vector<int64_t> dims, uint64_t offset,
                                uint64_t* handle = nullptr, bool pred = false) {
    uint64_t bytes = pred ? 1 : 4;
    for (int64_t d : dims) bytes *= static_cast<uint64_t>(d);
    flatbuffers::FlatBufferBuilder fbb;
    auto dim_vector = fbb.CreateVector(dims);
    auto shape = wire::CreateTensorShape(
        fbb, pred ? wire::ElementType_PRED : wire::ElementType_F32, dim_vector);
    wire::HeapRef data(offset, bytes);
    auto body = wire::CreateCreateBufferRequest(fbb, shape, &data);
    wire::StatusCode code = Send(fbb, wire::Request_CreateBufferRequest, body.Union());
    if (code == wire::StatusCode_OK && handle != nullptr) {
      *handle = (*ipc::VerifyReply(reply_))->body_as_CreateBufferReply()->buffer();
    }
    return code;
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
  std::unique_ptr<ipc::Segment> client_segment_;
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

// Found by tests/fuzz/daemon_fuzz.cc: a union type with no value verifies.
TEST_F(SessionTest, RequestTypeWithoutBodyIsRejected) {
  for (wire::Request type : {wire::Request_Hello, wire::Request_CompileRequest,
                             wire::Request_ExecuteRequest, wire::Request_CreateBufferRequest,
                             wire::Request_StatsRequest}) {
    flatbuffers::FlatBufferBuilder fbb;
    wire::RequestMessageBuilder builder(fbb);
    builder.add_id(3);
    builder.add_request_type(type);
    fbb.Finish(builder.Finish(), wire::RequestMessageIdentifier());
    uint64_t id = 0;
    EXPECT_EQ(Send(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()), &id),
              wire::StatusCode_INVALID_ARGUMENT);
    EXPECT_EQ(id, 3u);
  }
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

constexpr char kAdd[] = R"(
func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

constexpr char kForever[] = R"(
func.func public @main() -> tensor<i1> {
  %t = stablehlo.constant dense<true> : tensor<i1>
  %0 = stablehlo.while(%it = %t) : tensor<i1>
   cond {
    stablehlo.return %it : tensor<i1>
  } do {
    stablehlo.return %it : tensor<i1>
  }
  return %0 : tensor<i1>
}
)";

TEST_F(SessionTest, ExecutableQuota) {
  SessionOptions options;
  options.max_executables = 2;
  MakeSession(options);
  uint64_t first = 0;
  ASSERT_EQ(Compile(kAdd, &first), wire::StatusCode_OK) << LastMessage();
  ASSERT_EQ(Compile(kAdd), wire::StatusCode_OK) << LastMessage();
  EXPECT_EQ(Compile(kAdd), wire::StatusCode_RESOURCE_EXHAUSTED);
  EXPECT_NE(LastMessage().find("max_executables"), std::string::npos) << LastMessage();
  EXPECT_EQ(session_->num_executables(), 2u);
  flatbuffers::FlatBufferBuilder fbb;
  auto body = wire::CreateReleaseRequest(fbb, first);
  ASSERT_EQ(Send(fbb, wire::Request_ReleaseRequest, body.Union()), wire::StatusCode_OK);
  EXPECT_EQ(Compile(kAdd), wire::StatusCode_OK) << LastMessage();
}

TEST_F(SessionTest, BufferCountQuota) {
  SessionOptions options;
  options.max_buffers = 2;
  MakeSession(options);
  uint64_t first = 0;
  ASSERT_EQ(CreateBuffer({4}, 0, &first), wire::StatusCode_OK) << LastMessage();
  ASSERT_EQ(CreateBuffer({4}, 16), wire::StatusCode_OK) << LastMessage();
  EXPECT_EQ(CreateBuffer({4}, 32), wire::StatusCode_RESOURCE_EXHAUSTED);
  EXPECT_NE(LastMessage().find("max_buffers"), std::string::npos) << LastMessage();
  EXPECT_EQ(session_->num_buffers(), 2u);
  flatbuffers::FlatBufferBuilder fbb;
  auto body = wire::CreateDestroyBufferRequest(fbb, first);
  ASSERT_EQ(Send(fbb, wire::Request_DestroyBufferRequest, body.Union()), wire::StatusCode_OK);
  EXPECT_EQ(CreateBuffer({4}, 32), wire::StatusCode_OK) << LastMessage();
}

TEST_F(SessionTest, BufferBytesQuotaCountsOverlappingRanges) {
  SessionOptions options;
  options.max_buffer_bytes = 1000;
  MakeSession(options);
  uint64_t first = 0;
  // The same heap range twice counts twice.
  ASSERT_EQ(CreateBuffer({100}, 0, &first), wire::StatusCode_OK) << LastMessage();
  ASSERT_EQ(CreateBuffer({100}, 0), wire::StatusCode_OK) << LastMessage();
  EXPECT_EQ(session_->buffer_bytes(), 800u);
  EXPECT_EQ(CreateBuffer({100}, 0), wire::StatusCode_RESOURCE_EXHAUSTED);
  EXPECT_NE(LastMessage().find("max_buffer_bytes"), std::string::npos) << LastMessage();
  EXPECT_EQ(CreateBuffer({50}, 0), wire::StatusCode_OK) << LastMessage();  // exactly 1000
  EXPECT_EQ(session_->buffer_bytes(), 1000u);
  flatbuffers::FlatBufferBuilder fbb;
  auto body = wire::CreateDestroyBufferRequest(fbb, first);
  ASSERT_EQ(Send(fbb, wire::Request_DestroyBufferRequest, body.Union()), wire::StatusCode_OK);
  EXPECT_EQ(session_->buffer_bytes(), 600u);
  EXPECT_EQ(CreateBuffer({100}, 0), wire::StatusCode_OK) << LastMessage();
}

TEST_F(SessionTest, ExecuteTimeQuota) {
  SessionOptions options;
  options.max_execute_time = std::chrono::milliseconds(30);
  MakeSession(options);
  uint64_t exe = 0, result = 0;
  ASSERT_EQ(Compile(kForever, &exe), wire::StatusCode_OK) << LastMessage();
  ASSERT_EQ(CreateBuffer({}, 0, &result, /*pred=*/true), wire::StatusCode_OK) << LastMessage();
  auto execute = [&](uint64_t deadline_micros) {
    flatbuffers::FlatBufferBuilder fbb;
    auto results = fbb.CreateVector(std::vector<uint64_t>{result});
    auto body = wire::CreateExecuteRequest(fbb, exe, 0, results, deadline_micros);
    return Send(fbb, wire::Request_ExecuteRequest, body.Union());
  };
  // No deadline in the request (the default is 60 s) and one far too long:
  // both are cut to the quota, and the reply names it.
  for (uint64_t deadline : {uint64_t{0}, uint64_t{10'000'000}, ~uint64_t{0}}) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(execute(deadline), wire::StatusCode_DEADLINE_EXCEEDED);
    EXPECT_NE(LastMessage().find("max_execute_time"), std::string::npos) << LastMessage();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  // A request's own shorter deadline is its own, not the quota.
  EXPECT_EQ(execute(1000), wire::StatusCode_DEADLINE_EXCEEDED);
  EXPECT_EQ(LastMessage().find("max_execute_time"), std::string::npos) << LastMessage();
}

// ExecuteRequest.resource_fill names a distribution (0 uniform, 1 weights);
// any other value is refused by name, before anything runs, and the
// session serves the next request as before.
TEST_F(SessionTest, AnUnknownResourceFillIsRefused) {
  MakeSession({});
  constexpr char kTrue[] = R"(
func.func public @main() -> tensor<i1> {
  %t = stablehlo.constant dense<true> : tensor<i1>
  return %t : tensor<i1>
}
)";
  uint64_t exe = 0, result = 0;
  ASSERT_EQ(Compile(kTrue, &exe), wire::StatusCode_OK) << LastMessage();
  ASSERT_EQ(CreateBuffer({}, 0, &result, /*pred=*/true), wire::StatusCode_OK) << LastMessage();
  auto execute = [&](uint8_t fill) {
    flatbuffers::FlatBufferBuilder fbb;
    auto results = fbb.CreateVector(std::vector<uint64_t>{result});
    auto body = wire::CreateExecuteRequest(fbb, exe, 0, results, /*deadline_micros=*/0,
                                           /*resource_seed=*/uint64_t{7}, /*result_data=*/0,
                                           /*resource_fill=*/fill);
    return Send(fbb, wire::Request_ExecuteRequest, body.Union());
  };
  EXPECT_EQ(execute(9), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(LastMessage().find("unknown resource_fill 9"), std::string::npos) << LastMessage();
  EXPECT_EQ(execute(1), wire::StatusCode_OK) << LastMessage();
}

// Compile options: the daemon writes no files for clients, and keeps a
// compile's dumps until each is read once or the executable is released.
TEST_F(SessionTest, DumpDirOnTheWireIsRefused) {
  const std::string text(testing::kSoftmax);
  auto ref = client_segment_->Allocate(text.size());
  ASSERT_TRUE(ref.ok());
  std::memcpy(client_segment_->HeapBytes(*ref)->data(), text.data(), text.size());
  flatbuffers::FlatBufferBuilder fbb;
  wire::HeapRef program(ref->offset, text.size());
  auto options = wire::CreateCompileOptions(fbb, 0, fbb.CreateString("/tmp/somewhere"));
  auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program, 0, 0,
                                         options);
  EXPECT_EQ(Send(fbb, wire::Request_CompileRequest, body.Union()),
            wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(LastMessage().find("dump_dir"), std::string::npos) << LastMessage();
  EXPECT_EQ(session_->num_executables(), 0u);
}

TEST_F(SessionTest, DumpsAreListedThenReadOnce) {
  const std::string text(testing::kSoftmax);
  auto ref = client_segment_->Allocate(text.size());
  ASSERT_TRUE(ref.ok());
  std::memcpy(client_segment_->HeapBytes(*ref)->data(), text.data(), text.size());
  auto compile = [&](bool dumps) {
    flatbuffers::FlatBufferBuilder fbb;
    wire::HeapRef program(ref->offset, text.size());
    auto options = wire::CreateCompileOptions(fbb, 0, 0, false, dumps);
    auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program, 0,
                                           0, options);
    return Send(fbb, wire::Request_CompileRequest, body.Union());
  };
  ASSERT_EQ(compile(true), wire::StatusCode_OK) << LastMessage();
  const wire::CompileReply* reply = (*ipc::VerifyReply(reply_))->body_as_CompileReply();
  const uint64_t handle = reply->executable();
  EXPECT_FALSE(reply->cache_hit());
  ASSERT_NE(reply->dumps(), nullptr);
  ASSERT_EQ(reply->dumps()->size(), 2u);  // the interpreter: no passes, no code
  EXPECT_EQ(reply->dumps()->Get(0)->name()->str(), "000-input.mlir");
  EXPECT_EQ(reply->dumps()->Get(1)->name()->str(), "optimized.mlir");
  const uint64_t bytes = reply->dumps()->Get(0)->bytes();
  ASSERT_GT(bytes, 0u);

  auto read = [&](uint64_t exe, uint32_t index, uint64_t length, uint64_t* offset) {
    auto block = client_segment_->Allocate(std::max<uint64_t>(length, 1));
    EXPECT_TRUE(block.ok());
    *offset = block->offset;
    flatbuffers::FlatBufferBuilder fbb;
    wire::HeapRef data(block->offset, length);
    auto body = wire::CreateReadDumpRequest(fbb, exe, index, &data);
    return Send(fbb, wire::Request_ReadDumpRequest, body.Union());
  };
  uint64_t offset = 0;
  EXPECT_EQ(read(handle, 0, bytes + 1, &offset), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(LastMessage().find("000-input.mlir"), std::string::npos) << LastMessage();
  EXPECT_EQ(read(handle, 2, bytes, &offset), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_EQ(read(handle + 100, 0, bytes, &offset), wire::StatusCode_NOT_FOUND);
  ASSERT_EQ(read(handle, 0, bytes, &offset), wire::StatusCode_OK) << LastMessage();
  const std::string dumped(
      reinterpret_cast<const char*>(client_segment_->HeapBytes({offset, bytes})->data()), bytes);
  EXPECT_NE(dumped.find("stablehlo.exponential"), std::string::npos) << dumped;
  EXPECT_EQ(read(handle, 0, bytes, &offset), wire::StatusCode_NOT_FOUND);
  EXPECT_NE(LastMessage().find("read already"), std::string::npos) << LastMessage();

  // The program is cached now; a compile for dumps still compiles (and a
  // plain one hits). Release drops the unread dumps.
  ASSERT_EQ(compile(false), wire::StatusCode_OK);
  EXPECT_TRUE((*ipc::VerifyReply(reply_))->body_as_CompileReply()->cache_hit());
  EXPECT_EQ((*ipc::VerifyReply(reply_))->body_as_CompileReply()->dumps(), nullptr);
  ASSERT_EQ(compile(true), wire::StatusCode_OK);
  reply = (*ipc::VerifyReply(reply_))->body_as_CompileReply();
  EXPECT_FALSE(reply->cache_hit());
  ASSERT_EQ(reply->dumps()->size(), 2u);
  const uint64_t second = reply->executable();
  flatbuffers::FlatBufferBuilder fbb;
  auto release = wire::CreateReleaseRequest(fbb, second);
  ASSERT_EQ(Send(fbb, wire::Request_ReleaseRequest, release.Union()), wire::StatusCode_OK);
  EXPECT_EQ(read(second, 1, bytes, &offset), wire::StatusCode_NOT_FOUND);
}

}  // namespace
}  // namespace jitd::daemon
