#include "daemon/remote_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "daemon/remote_auth.h"
#include "daemon/remote_test_client.h"
#include "daemon/test_programs.h"

namespace jitd::daemon {
namespace {

namespace fs = std::filesystem;
namespace ssl = boost::asio::ssl;
using testing::RemoteTestClient;
using testing::Scratch;
using testing::kAliceToken;
using testing::kBobToken;


std::span<const uint8_t> Bytes(const void* data, size_t n) {
  return {static_cast<const uint8_t*>(data), n};
}

// Counts sessions per identity like the Server does.
struct CountingAdmission {
  std::mutex mu;
  std::map<std::string, int> open;
  int limit_per_identity = 100;
  std::atomic<uint64_t> next_id{1};

  RemoteAdmission Make() {
    RemoteAdmission a;
    a.reserve = [this](const std::string& identity) {
      std::lock_guard<std::mutex> lock(mu);
      if (open[identity] >= limit_per_identity) {
        return ResourceExhausted(identity + " has too many sessions");
      }
      ++open[identity];
      return Status::Ok();
    };
    a.release = [this](const std::string& identity) {
      std::lock_guard<std::mutex> lock(mu);
      --open[identity];
    };
    a.next_session_id = [this] { return next_id++; };
    return a;
  }
  int Open(const std::string& identity) {
    std::lock_guard<std::mutex> lock(mu);
    return open[identity];
  }
};

template <typename F>
bool WaitFor(F condition, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

class RemoteServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create({});
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(instance).value();
  }
  void TearDown() override {
    if (server_) server_->Stop();
    server_.reset();
  }

  // A plaintext loopback server with the token file.
  void StartPlain(RemoteOptions options = {}) {
    options.listen = {"tcp://127.0.0.1:0"};
    options.insecure_loopback = true;
    options.token_file = scratch_.Path("tokens");
    Start(options);
  }
  void Start(const RemoteOptions& options) {
    SessionOptions session;
    session.segment_bytes = 8 << 20;
    auto server = RemoteServer::Create(instance_.get(), session, options, admission_.Make());
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    server_->Start();
    port_ = server_->addresses().at(0).port;
  }
  std::unique_ptr<RemoteTestClient> Connect(ssl::context* tls = nullptr) {
    auto client = std::make_unique<RemoteTestClient>(port_, tls);
    EXPECT_TRUE(client->connected());
    return client;
  }

  // Compiles softmax, uploads its input, executes, reads the result back and
  // checks it: the whole remote path.
  void RunSoftmax(RemoteTestClient& client) {
    const std::string text = testing::kSoftmax;
    StatusOr<uint64_t> program = client.Allocate(text.size());
    ASSERT_TRUE(program.ok()) << program.status().ToString();
    ASSERT_TRUE(client.Write(*program, Bytes(text.data(), text.size())));
    uint64_t executable = 0;
    {
      flatbuffers::FlatBufferBuilder fbb;
      wire::HeapRef ref(*program, text.size());
      auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &ref);
      StatusOr<std::vector<uint8_t>> reply =
          client.Request(fbb, wire::Request_CompileRequest, body.Union());
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      const wire::ReplyMessage* message = *ipc::VerifyReply(*reply);
      ASSERT_TRUE(ipc::FromWire(message->status()).ok())
          << ipc::FromWire(message->status()).ToString();
      executable = message->body_as_CompileReply()->executable();
    }
    ASSERT_TRUE(client.Free(*program).ok());
    uint64_t buffers[2] = {};
    uint64_t offsets[2] = {};
    for (int i = 0; i < 2; ++i) {
      StatusOr<uint64_t> offset = client.Allocate(sizeof(testing::kSoftmaxInput));
      ASSERT_TRUE(offset.ok());
      offsets[i] = *offset;
      if (i == 0) {
        ASSERT_TRUE(client.Write(*offset, Bytes(testing::kSoftmaxInput,
                                                sizeof(testing::kSoftmaxInput))));
      }
      flatbuffers::FlatBufferBuilder fbb;
      auto dims = fbb.CreateVector(std::vector<int64_t>{2, 4});
      auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
      wire::HeapRef ref(*offset, sizeof(testing::kSoftmaxInput));
      auto body = wire::CreateCreateBufferRequest(fbb, shape, &ref);
      StatusOr<std::vector<uint8_t>> reply =
          client.Request(fbb, wire::Request_CreateBufferRequest, body.Union());
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      const wire::ReplyMessage* message = *ipc::VerifyReply(*reply);
      ASSERT_TRUE(ipc::FromWire(message->status()).ok());
      buffers[i] = message->body_as_CreateBufferReply()->buffer();
    }
    {
      flatbuffers::FlatBufferBuilder fbb;
      auto args = fbb.CreateVector(std::vector<uint64_t>{buffers[0]});
      auto results = fbb.CreateVector(std::vector<uint64_t>{buffers[1]});
      auto body = wire::CreateExecuteRequest(fbb, executable, args, results);
      StatusOr<std::vector<uint8_t>> reply =
          client.Request(fbb, wire::Request_ExecuteRequest, body.Union());
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      const wire::ReplyMessage* message = *ipc::VerifyReply(*reply);
      ASSERT_TRUE(ipc::FromWire(message->status()).ok())
          << ipc::FromWire(message->status()).ToString();
    }
    StatusOr<std::vector<uint8_t>> out = client.Read(offsets[1], 32);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ASSERT_EQ(out->size(), 32u);
    float result[8];
    std::memcpy(result, out->data(), 32);
    for (int row = 0; row < 2; ++row) {
      const float* x = testing::kSoftmaxInput + row * 4;
      float m = std::max(std::max(x[0], x[1]), std::max(x[2], x[3]));
      float sum = 0;
      for (int j = 0; j < 4; ++j) sum += std::exp(x[j] - m);
      for (int j = 0; j < 4; ++j) {
        EXPECT_NEAR(result[row * 4 + j], std::exp(x[j] - m) / sum, 1e-5) << row << "," << j;
      }
    }
  }

  Scratch scratch_;
  CountingAdmission admission_;
  std::unique_ptr<Instance> instance_;
  std::unique_ptr<RemoteServer> server_;
  uint16_t port_ = 0;
};

TEST_F(RemoteServerTest, TokenClientCompilesAndExecutes) {
  StartPlain();
  auto client = Connect();
  StatusOr<std::string> identity = client->Hello(kAliceToken);
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(*identity, "token:alice");
  EXPECT_GT(client->heap_bytes(), 4u << 20);
  EXPECT_EQ(admission_.Open("token:alice"), 1);
  RunSoftmax(*client);
  // Stats answer, and show this identity's session only.
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateStatsRequest(fbb);
    StatusOr<std::vector<uint8_t>> reply =
        client->Request(fbb, wire::Request_StatsRequest, body.Union());
    ASSERT_TRUE(reply.ok());
    const wire::ReplyMessage* message = *ipc::VerifyReply(*reply);
    ASSERT_TRUE(ipc::FromWire(message->status()).ok());
    const std::string json = message->body_as_StatsReply()->json()->str();
    EXPECT_NE(json.find("\"view\":\"uid\""), std::string::npos) << json;
    EXPECT_NE(json.find(std::to_string(RemoteUid("token:alice"))), std::string::npos) << json;
  }
  client.reset();
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; }));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
  EXPECT_EQ(server_->stats().sessions_opened, 1u);
  EXPECT_EQ(server_->stats().malformed_frames, 0u);
}

// Compile over the wire: the reply (status checked by the caller).
std::vector<uint8_t> CompileRemote(RemoteTestClient& client, const std::string& text,
                                   const std::vector<uint8_t>& fingerprint = {}) {
  flatbuffers::FlatBufferBuilder fbb;
  if (!fingerprint.empty()) {
    auto fp = fbb.CreateVector(fingerprint);
    wire::CompileRequestBuilder b(fbb);
    b.add_fingerprint(fp);
    auto body = b.Finish();
    return client.Request(fbb, wire::Request_CompileRequest, body.Union()).value();
  }
  const uint64_t offset = client.Allocate(text.size()).value();
  EXPECT_TRUE(client.Write(offset, Bytes(text.data(), text.size())));
  wire::HeapRef ref(offset, text.size());
  auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &ref);
  auto reply = client.Request(fbb, wire::Request_CompileRequest, body.Union()).value();
  EXPECT_TRUE(client.Free(offset).ok());
  return reply;
}

TEST_F(RemoteServerTest, FeedsAndFingerprintCompilesWorkRemotely) {
  StartPlain();
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  constexpr char kFeedProgram[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  %done = "stablehlo.outfeed"(%s, %v#1) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
}
)";
  const std::vector<uint8_t> compiled = CompileRemote(*client, kFeedProgram);
  const wire::ReplyMessage* reply = *ipc::VerifyReply(compiled);
  ASSERT_TRUE(ipc::FromWire(reply->status()).ok()) << ipc::FromWire(reply->status()).ToString();
  const uint64_t executable = reply->body_as_CompileReply()->executable();
  const std::vector<uint8_t> fingerprint(reply->body_as_CompileReply()->fingerprint()->begin(),
                                         reply->body_as_CompileReply()->fingerprint()->end());
  // Argument x = {1, 2}, infeed {10, 20}.
  auto shape_of = [](flatbuffers::FlatBufferBuilder& fbb) {
    auto dims = fbb.CreateVector(std::vector<int64_t>{2});
    return wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
  };
  const float x[2] = {1, 2}, fed[2] = {10, 20};
  const uint64_t x_offset = client->Allocate(8).value();
  const uint64_t fed_offset = client->Allocate(8).value();
  const uint64_t out_offset = client->Allocate(8).value();
  const uint64_t result_offset = client->Allocate(8).value();
  ASSERT_TRUE(client->Write(x_offset, Bytes(x, 8)));
  ASSERT_TRUE(client->Write(fed_offset, Bytes(fed, 8)));
  uint64_t x_buffer = 0;
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = shape_of(fbb);
    wire::HeapRef ref(x_offset, 8);
    auto body = wire::CreateCreateBufferRequest(fbb, shape, &ref);
    auto r = client->Request(fbb, wire::Request_CreateBufferRequest, body.Union());
    ASSERT_TRUE(r.ok());
    x_buffer = (*ipc::VerifyReply(*r))->body_as_CreateBufferReply()->buffer();
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = shape_of(fbb);
    wire::HeapRef ref(fed_offset, 8);
    auto body = wire::CreateTransferToInfeedRequest(fbb, 0, 0, shape, &ref);
    auto r = client->Request(fbb, wire::Request_TransferToInfeedRequest, body.Union());
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(ipc::FromWire((*ipc::VerifyReply(*r))->status()).ok());
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto args = fbb.CreateVector(std::vector<uint64_t>{x_buffer});
    std::vector<wire::HeapRef> refs = {wire::HeapRef(result_offset, 8)};
    auto result_data = fbb.CreateVectorOfStructs(refs);
    wire::ExecuteRequestBuilder b(fbb);
    b.add_executable(executable);
    b.add_arguments(args);
    b.add_result_data(result_data);
    auto body = b.Finish();
    auto r = client->Request(fbb, wire::Request_ExecuteRequest, body.Union());
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(ipc::FromWire((*ipc::VerifyReply(*r))->status()).ok())
        << ipc::FromWire((*ipc::VerifyReply(*r))->status()).ToString();
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = shape_of(fbb);
    wire::HeapRef ref(out_offset, 8);
    auto body = wire::CreateTransferFromOutfeedRequest(fbb, 0, 0, shape, &ref, 1'000'000);
    auto r = client->Request(fbb, wire::Request_TransferFromOutfeedRequest, body.Union());
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(ipc::FromWire((*ipc::VerifyReply(*r))->status()).ok())
        << ipc::FromWire((*ipc::VerifyReply(*r))->status()).ToString();
  }
  for (uint64_t offset : {out_offset, result_offset}) {
    std::vector<uint8_t> bytes = client->Read(offset, 8).value();
    float values[2];
    std::memcpy(values, bytes.data(), 8);
    EXPECT_EQ(values[0], 11.0f);
    EXPECT_EQ(values[1], 22.0f);
  }
  // The same identity on another connection finds the program by its
  // fingerprint alone; another identity does not (the cache is per identity).
  auto again = Connect();
  ASSERT_TRUE(again->Hello(kAliceToken).ok());
  const std::vector<uint8_t> hit = CompileRemote(*again, "", fingerprint);
  EXPECT_TRUE(ipc::FromWire((*ipc::VerifyReply(hit))->status()).ok())
      << ipc::FromWire((*ipc::VerifyReply(hit))->status()).ToString();
  auto bob = Connect();
  ASSERT_TRUE(bob->Hello(kBobToken).ok());
  const std::vector<uint8_t> miss = CompileRemote(*bob, "", fingerprint);
  EXPECT_EQ(ipc::FromWire((*ipc::VerifyReply(miss))->status()).code(), StatusCode::kNotFound);
}

// The connections of one remote client process (the hello's client_process
// number, same identity) share feed queues, as a local process's do: one
// connection feeds while another executes. Another number, or another
// identity with the same number, sees none of them.
TEST_F(RemoteServerTest, OneRemoteProcessSharesItsFeedsAcrossConnections) {
  StartPlain();
  constexpr uint64_t kProcess = 0x1234'5678'9abcULL;
  auto runner = Connect();
  auto feeder = Connect();
  auto stranger = Connect();
  auto bob = Connect();
  ASSERT_TRUE(runner->Hello(kAliceToken, "runner", kProcess).ok());
  ASSERT_TRUE(feeder->Hello(kAliceToken, "feeder", kProcess).ok());
  ASSERT_TRUE(stranger->Hello(kAliceToken, "stranger", kProcess + 1).ok());
  ASSERT_TRUE(bob->Hello(kBobToken, "bob", kProcess).ok());
  constexpr char kFeedProgram[] = R"(
func.func @main() -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %v#0, %v#0 : tensor<2xf32>
  %done = "stablehlo.outfeed"(%s, %v#1) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
}
)";
  const std::vector<uint8_t> compiled = CompileRemote(*runner, kFeedProgram);
  const wire::ReplyMessage* reply = *ipc::VerifyReply(compiled);
  ASSERT_TRUE(ipc::FromWire(reply->status()).ok()) << ipc::FromWire(reply->status()).ToString();
  const uint64_t executable = reply->body_as_CompileReply()->executable();
  auto shape_of = [](flatbuffers::FlatBufferBuilder& fbb) {
    auto dims = fbb.CreateVector(std::vector<int64_t>{2});
    return wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
  };
  // The feeder's infeed is the runner's.
  const float fed[2] = {3, 4};
  const uint64_t fed_offset = feeder->Allocate(8).value();
  ASSERT_TRUE(feeder->Write(fed_offset, Bytes(fed, 8)));
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = shape_of(fbb);
    wire::HeapRef ref(fed_offset, 8);
    auto body = wire::CreateTransferToInfeedRequest(fbb, 0, 0, shape, &ref);
    auto r = feeder->Request(fbb, wire::Request_TransferToInfeedRequest, body.Union());
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(ipc::FromWire((*ipc::VerifyReply(*r))->status()).ok());
  }
  {
    const uint64_t result_offset = runner->Allocate(8).value();
    flatbuffers::FlatBufferBuilder fbb;
    auto args = fbb.CreateVector(std::vector<uint64_t>{});
    std::vector<wire::HeapRef> refs = {wire::HeapRef(result_offset, 8)};
    auto result_data = fbb.CreateVectorOfStructs(refs);
    wire::ExecuteRequestBuilder b(fbb);
    b.add_executable(executable);
    b.add_arguments(args);
    b.add_result_data(result_data);
    b.add_deadline_micros(5'000'000);
    auto body = b.Finish();
    auto r = runner->Request(fbb, wire::Request_ExecuteRequest, body.Union());
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(ipc::FromWire((*ipc::VerifyReply(*r))->status()).ok())
        << ipc::FromWire((*ipc::VerifyReply(*r))->status()).ToString();
  }
  // Its outfeed: not the stranger's nor bob's (they time out), the feeder's.
  auto take_outfeed = [&](RemoteTestClient& client, int64_t timeout_micros) {
    const uint64_t out_offset = client.Allocate(8).value();
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = shape_of(fbb);
    wire::HeapRef ref(out_offset, 8);
    auto body = wire::CreateTransferFromOutfeedRequest(fbb, 0, 0, shape, &ref, timeout_micros);
    auto r = client.Request(fbb, wire::Request_TransferFromOutfeedRequest, body.Union());
    EXPECT_TRUE(r.ok());
    const Status status = ipc::FromWire((*ipc::VerifyReply(*r))->status());
    std::vector<float> values;
    if (status.ok()) {
      std::vector<uint8_t> bytes = client.Read(out_offset, 8).value();
      values.resize(2);
      std::memcpy(values.data(), bytes.data(), 8);
    }
    return std::make_pair(status, values);
  };
  EXPECT_EQ(take_outfeed(*stranger, 100'000).first.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(take_outfeed(*bob, 100'000).first.code(), StatusCode::kDeadlineExceeded);
  auto [status, values] = take_outfeed(*feeder, 1'000'000);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(values, (std::vector<float>{6, 8}));
}

TEST_F(RemoteServerTest, TwoIdentitiesAreIsolated) {
  StartPlain();
  auto alice = Connect();
  auto bob = Connect();
  ASSERT_TRUE(alice->Hello(kAliceToken).ok());
  ASSERT_EQ(*bob->Hello(kBobToken), "token:bob");
  // Alice's heap ranges are not Bob's: a read of them is refused.
  StatusOr<uint64_t> offset = alice->Allocate(256);
  ASSERT_TRUE(offset.ok());
  StatusOr<std::vector<uint8_t>> stolen = bob->Read(*offset, 16);
  ASSERT_FALSE(stolen.ok());
  EXPECT_EQ(stolen.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stolen.status().message().find("allocated range"), std::string::npos);
  // Bob can go on.
  EXPECT_TRUE(bob->Allocate(16).ok());
}

TEST_F(RemoteServerTest, WrongOrMissingTokenIsRefused) {
  StartPlain();
  {
    auto client = Connect();
    StatusOr<std::string> hello = client->Hello("not-a-valid-token-at-all-xxxx");
    ASSERT_FALSE(hello.ok());
    EXPECT_EQ(hello.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(hello.status().message().find("bearer token is not one"), std::string::npos)
        << hello.status().ToString();
    ipc::FrameKind kind;
    std::vector<uint8_t> payload;
    EXPECT_FALSE(client->ReadFrame(&kind, &payload));  // closed
  }
  {
    auto client = Connect();
    StatusOr<std::string> hello = client->Hello("");
    ASSERT_FALSE(hello.ok());
    EXPECT_EQ(hello.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(hello.status().message().find("requires a bearer token"), std::string::npos);
  }
  EXPECT_EQ(server_->stats().refused, 2u);
  EXPECT_EQ(server_->stats().sessions_opened, 0u);
}

TEST_F(RemoteServerTest, MalformedFramesCloseWithAnError) {
  StartPlain();
  struct Case {
    const char* name;
    std::vector<uint8_t> bytes;
    bool after_hello;
    const char* expect;
  };
  std::vector<Case> cases;
  cases.push_back({"unknown kind", {4, 0, 0, 0, 99, 0, 0, 0, 1, 2, 3, 4}, true, "unknown frame kind"});
  cases.push_back({"too long", {0xff, 0xff, 0xff, 0x7f, 3, 0, 0, 0}, true, "exceeds the limit"});
  cases.push_back({"flags", {0, 0, 0, 0, 3, 1, 0, 0}, true, "flags"});
  cases.push_back({"request first", {0, 0, 0, 0, 3, 0, 0, 0}, false, "first frame must be HELLO"});
  cases.push_back({"garbage hello", {8, 0, 0, 0, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, false,
                   "remote hello"});
  cases.push_back({"huge hello", {0, 0, 1, 0, 1, 0, 0, 0}, false, "HELLO frame of 65536"});
  cases.push_back({"daemon's kind", {0, 0, 0, 0, 4, 0, 0, 0}, true, "sent by the daemon"});
  // DATA into no allocation.
  {
    auto prefix = ipc::EncodeDataPrefix(4096, 4);
    std::vector<uint8_t> bytes(prefix.begin(), prefix.end());
    bytes.insert(bytes.end(), {1, 2, 3, 4});
    cases.push_back({"stray data", bytes, true, "allocated range"});
  }
  // A heap request whose union names an operation but holds none.
  {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(remote::CreateHeapRequest(fbb, 3, remote::HeapOp_AllocateRequest, 0),
               remote::HeapRequestIdentifier());
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(ipc::AppendFrame(&bytes, ipc::FrameKind::kHeapRequest,
                                 {fbb.GetBufferPointer(), fbb.GetSize()})
                    .ok());
    cases.push_back({"empty heap op", bytes, true, "names no operation"});
  }
  // A heap request that does not verify.
  cases.push_back({"garbage heap request", {8, 0, 0, 0, 5, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9}, true,
                   "heap request"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto client = Connect();
    if (c.after_hello) ASSERT_TRUE(client->Hello(kAliceToken).ok());
    ASSERT_TRUE(client->WriteRaw(c.bytes));
    ipc::FrameKind kind;
    std::vector<uint8_t> payload;
    ASSERT_TRUE(client->ReadFrame(&kind, &payload));
    ASSERT_EQ(kind, ipc::FrameKind::kError);
    Status error = ipc::DecodeErrorPayload(payload);
    EXPECT_EQ(error.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(error.message().find(c.expect), std::string::npos) << error.ToString();
    EXPECT_FALSE(client->ReadFrame(&kind, &payload));  // then closed
  }
  EXPECT_EQ(server_->stats().malformed_frames, cases.size());
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; }));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
  // A malformed request message (valid frame) is only an error reply.
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  std::vector<uint8_t> junk(64, 0x11);
  ASSERT_TRUE(client->WriteFrame(ipc::FrameKind::kRequest, junk));
  ipc::FrameKind kind;
  std::vector<uint8_t> payload;
  ASSERT_TRUE(client->ReadFrame(&kind, &payload));
  ASSERT_EQ(kind, ipc::FrameKind::kReply);
  const wire::ReplyMessage* reply = *ipc::VerifyReply(payload);
  EXPECT_EQ(reply->status()->code(), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_TRUE(client->Allocate(8).ok());  // still served
}

TEST_F(RemoteServerTest, SlowClientIsDroppedAndBlocksNobody) {
  RemoteOptions options;
  options.handshake_timeout = std::chrono::milliseconds(400);
  StartPlain(options);
  auto slow = Connect();
  std::atomic<bool> slow_done{false};
  std::thread dribble([&] {
    // A hello, one byte every 50 ms: never completes in 400 ms.
    flatbuffers::FlatBufferBuilder fbb;
    auto t = fbb.CreateString(kAliceToken);
    fbb.Finish(remote::CreateRemoteHello(fbb, 1, 0, t), remote::HeapRequestIdentifier());
    std::vector<uint8_t> frame;
    ASSERT_TRUE(ipc::AppendFrame(&frame, ipc::FrameKind::kHello,
                                 {fbb.GetBufferPointer(), fbb.GetSize()})
                    .ok());
    for (uint8_t byte : frame) {
      if (!slow->WriteRaw(std::span<const uint8_t>(&byte, 1))) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    slow_done = true;
  });
  // Meanwhile another client is served at once.
  const auto start = std::chrono::steady_clock::now();
  auto quick = Connect();
  ASSERT_TRUE(quick->Hello(kBobToken).ok());
  ASSERT_TRUE(quick->Allocate(64).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
  EXPECT_TRUE(WaitFor([&] { return server_->stats().handshake_timeouts == 1; }));
  dribble.join();
  EXPECT_EQ(admission_.Open("token:alice"), 0);
  // A silent client goes the same way.
  auto silent = Connect();
  EXPECT_TRUE(WaitFor([&] { return server_->stats().handshake_timeouts == 2; }));
}

TEST_F(RemoteServerTest, FrameThatStallsAfterHelloIsDropped) {
  RemoteOptions options;
  options.frame_timeout = std::chrono::milliseconds(300);
  StartPlain(options);
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  // Idle between frames is fine...
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  ASSERT_TRUE(client->Allocate(64).ok());
  // ...a frame that starts and never ends is not.
  const auto header = ipc::EncodeFrameHeader(ipc::FrameKind::kRequest, 100);
  ASSERT_TRUE(client->WriteRaw(header));
  ASSERT_TRUE(client->WriteRaw(std::vector<uint8_t>(10, 0)));
  EXPECT_TRUE(WaitFor([&] { return server_->stats().frame_timeouts == 1; }));
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; }));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
}

TEST_F(RemoteServerTest, ClientKilledMidTransferIsReclaimed) {
  StartPlain();
  const size_t clients_before = instance_->stats().sessions_opened;
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  StatusOr<uint64_t> offset = client->Allocate(4 << 20);
  ASSERT_TRUE(offset.ok());
  // A DATA frame of 1 MiB of which only 1000 bytes arrive, then a reset.
  auto prefix = ipc::EncodeDataPrefix(*offset, ipc::kMaxDataChunk);
  ASSERT_TRUE(client->WriteRaw(prefix));
  std::vector<uint8_t> part(1000, 7);
  ASSERT_TRUE(client->WriteRaw(part));
  EXPECT_TRUE(WaitFor([&] { return server_->stats().bytes_in > 0; }));
  client->Abort();
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; }));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
  EXPECT_TRUE(WaitFor([&] {
    const InstanceStats s = instance_->stats();
    return s.sessions_opened == clients_before + 1 && s.sessions_closed == s.sessions_opened;
  }));
}

TEST_F(RemoteServerTest, RandomStreamsNeverHurtTheServer) {
  StartPlain();
  std::mt19937 rng(11);
  for (int round = 0; round < 60; ++round) {
    auto client = Connect();
    if (round % 2 == 0) ASSERT_TRUE(client->Hello(kAliceToken).ok());
    // Valid headers of random kinds and lengths, random payloads.
    std::vector<uint8_t> junk;
    for (int f = 0; f < 4; ++f) {
      const uint32_t length = rng() % 64;
      auto header = ipc::EncodeFrameHeader(static_cast<ipc::FrameKind>(1 + rng() % 8), length);
      if (rng() % 4 == 0) header[rng() % 8] = static_cast<uint8_t>(rng());
      junk.insert(junk.end(), header.begin(), header.end());
      for (uint32_t i = 0; i < length; ++i) junk.push_back(static_cast<uint8_t>(rng()));
    }
    (void)client->WriteRaw(junk);
    if (rng() % 2) client->Abort();
  }
  // Still serving, and nothing held.
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kBobToken).ok());
  RunSoftmax(*client);
  client.reset();
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; }));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
}

// Sends an execute that waits for an infeed nobody sends (up to 20 s) and
// returns without waiting for its reply.
void SendExecuteThatWaits(RemoteTestClient& client) {
  constexpr char kWaits[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  return %s : tensor<2xf32>
}
)";
  const std::vector<uint8_t> compiled = CompileRemote(client, kWaits);
  const wire::ReplyMessage* reply = *ipc::VerifyReply(compiled);
  ASSERT_TRUE(ipc::FromWire(reply->status()).ok());
  const uint64_t executable = reply->body_as_CompileReply()->executable();
  const uint64_t x = client.Allocate(8).value();
  const uint64_t out = client.Allocate(8).value();
  flatbuffers::FlatBufferBuilder fbb;
  auto dims = fbb.CreateVector(std::vector<int64_t>{2});
  auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
  wire::HeapRef ref(x, 8);
  auto create = wire::CreateCreateBufferRequest(fbb, shape, &ref);
  auto created = client.Request(fbb, wire::Request_CreateBufferRequest, create.Union());
  ASSERT_TRUE(created.ok());
  const uint64_t buffer = (*ipc::VerifyReply(*created))->body_as_CreateBufferReply()->buffer();
  flatbuffers::FlatBufferBuilder exec;
  auto args = exec.CreateVector(std::vector<uint64_t>{buffer});
  std::vector<wire::HeapRef> refs = {wire::HeapRef(out, 8)};
  auto result_data = exec.CreateVectorOfStructs(refs);
  wire::ExecuteRequestBuilder b(exec);
  b.add_executable(executable);
  b.add_arguments(args);
  b.add_result_data(result_data);
  b.add_deadline_micros(20'000'000);
  exec.Finish(wire::CreateRequestMessage(exec, 99, wire::Request_ExecuteRequest,
                                         b.Finish().Union()),
              wire::RequestMessageIdentifier());
  ASSERT_TRUE(client.WriteFrame(ipc::FrameKind::kRequest,
                                {exec.GetBufferPointer(), exec.GetSize()}));
}

TEST_F(RemoteServerTest, ClientGoneDuringARequestCancelsIt) {
  StartPlain();
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  SendExecuteThatWaits(*client);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(server_->stats().sessions_open, 1u);  // still waiting
  const auto start = std::chrono::steady_clock::now();
  client->Abort();
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; },
                      std::chrono::seconds(3)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
}

// The same when frames wait behind the request (libclient sends the reads
// of an execute's results right after it): the socket was readable all
// along, so the watch looks for the peer's FIN instead.
TEST_F(RemoteServerTest, ClientGoneBehindPipelinedFramesCancelsTheRequest) {
  StartPlain();
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  const uint64_t scratch = client->Allocate(64).value();
  SendExecuteThatWaits(*client);
  flatbuffers::FlatBufferBuilder fbb;
  auto op = remote::CreateReadRequest(fbb, scratch, 64);
  fbb.Finish(remote::CreateHeapRequest(fbb, 7777, remote::HeapOp_ReadRequest, op.Union()),
             remote::HeapRequestIdentifier());
  ASSERT_TRUE(client->WriteFrame(ipc::FrameKind::kHeapRequest,
                                 {fbb.GetBufferPointer(), fbb.GetSize()}));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_EQ(server_->stats().sessions_open, 1u);  // still waiting
  const auto start = std::chrono::steady_clock::now();
  client->ShutdownSend();  // a FIN behind the frames, not a reset
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 0; },
                      std::chrono::seconds(3)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(admission_.Open("token:alice"), 0);
}

// A request runs on the thread that read it; when it blocks every thread,
// the monitor starts a spare, so other clients (new and old) are served;
// the spare goes once it has idled.
TEST_F(RemoteServerTest, RequestsBlockingEveryThreadStartASpare) {
  RemoteOptions options;
  options.io_threads = 1;
  options.stall = std::chrono::milliseconds(5);
  options.spare_idle = std::chrono::milliseconds(100);
  StartPlain(options);
  EXPECT_EQ(server_->stats().threads, 1u);
  auto waiting = Connect();
  ASSERT_TRUE(waiting->Hello(kAliceToken).ok());
  SendExecuteThatWaits(*waiting);
  // The one thread is inside that execute now; a new client is served.
  const auto start = std::chrono::steady_clock::now();
  auto other = Connect();
  ASSERT_TRUE(other->Hello(kBobToken).ok());
  RunSoftmax(*other);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_GE(server_->stats().spares_started, 1u);
  EXPECT_GE(server_->stats().threads, 2u);
  // The waiting client goes: its execute is cancelled, and the spare exits.
  waiting->Abort();
  EXPECT_TRUE(WaitFor([&] { return server_->stats().sessions_open == 1; },
                      std::chrono::seconds(3)));
  EXPECT_TRUE(WaitFor([&] { return server_->stats().threads == 1; }, std::chrono::seconds(3)))
      << server_->stats().threads;
  RunSoftmax(*other);
}

TEST_F(RemoteServerTest, SessionLimitPerIdentity) {
  admission_.limit_per_identity = 1;
  StartPlain();
  auto first = Connect();
  ASSERT_TRUE(first->Hello(kAliceToken).ok());
  auto second = Connect();
  StatusOr<std::string> refused = second->Hello(kAliceToken);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  auto other = Connect();
  EXPECT_TRUE(other->Hello(kBobToken).ok());
}

TEST_F(RemoteServerTest, LargeTensorStreamsBothWays) {
  StartPlain();
  auto client = Connect();
  ASSERT_TRUE(client->Hello(kAliceToken).ok());
  const size_t n = (3 << 20) + 12345;  // several chunks and a partial one
  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  StatusOr<uint64_t> offset = client->Allocate(n);
  ASSERT_TRUE(offset.ok());
  ASSERT_TRUE(client->Write(*offset, data));
  StatusOr<std::vector<uint8_t>> back = client->Read(*offset, n);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == data);
  // Too large for the heap: a clear error, the connection stays.
  StatusOr<uint64_t> huge = client->Allocate(uint64_t{1} << 40);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(client->Free(*offset).ok());
  EXPECT_EQ(client->Free(*offset).code(), StatusCode::kNotFound);
}

class RemoteTlsTest : public RemoteServerTest {
 protected:
  void SetUp() override {
    RemoteServerTest::SetUp();
    if (!scratch_.MakeCertificates()) GTEST_SKIP() << "no openssl command to make certificates";
  }
  // A client context trusting the test CA, presenting `name`'s certificate
  // (none when empty).
  std::unique_ptr<ssl::context> ClientContext(const std::string& name) {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    ctx->load_verify_file(scratch_.Path("ca.pem"));
    ctx->set_verify_mode(ssl::verify_peer);
    ctx->set_verify_callback(ssl::host_name_verification("localhost"));
    if (!name.empty()) {
      ctx->use_certificate_chain_file(scratch_.Path(name + ".pem"));
      ctx->use_private_key_file(scratch_.Path(name + ".key"), ssl::context::pem);
    }
    return ctx;
  }
  void StartTls(bool client_ca, bool tokens) {
    RemoteOptions options;
    options.listen = {"tcp://127.0.0.1:0"};
    options.tls_cert = scratch_.Path("server.pem");
    options.tls_key = scratch_.Path("server.key");
    if (client_ca) options.tls_client_ca = scratch_.Path("ca.pem");
    if (tokens) options.token_file = scratch_.Path("tokens");
    Start(options);
  }
};

TEST_F(RemoteTlsTest, ClientCertificateIsTheIdentity) {
  StartTls(/*client_ca=*/true, /*tokens=*/false);
  auto ctx = ClientContext("alice");
  auto client = Connect(ctx.get());
  ASSERT_FALSE(client->handshake_error()) << client->handshake_error().message();
  StatusOr<std::string> identity = client->Hello("");
  ASSERT_TRUE(identity.ok()) << identity.status().ToString();
  EXPECT_EQ(*identity, "cert:alice");
  RunSoftmax(*client);
}

TEST_F(RemoteTlsTest, MissingOrForeignCertificateIsRefused) {
  StartTls(/*client_ca=*/true, /*tokens=*/false);
  for (const std::string name : {"", "mallory"}) {
    SCOPED_TRACE(name.empty() ? "no certificate" : name);
    auto ctx = ClientContext(name);
    auto client = Connect(ctx.get());
    // TLS 1.3: the client finishes its side before the server checks the
    // certificate, so the refusal shows at the first read.
    if (!client->handshake_error()) {
      StatusOr<std::string> hello = client->Hello("");
      EXPECT_FALSE(hello.ok());
    }
  }
  EXPECT_TRUE(WaitFor([&] { return server_->stats().refused == 2; }));
  EXPECT_EQ(server_->stats().sessions_opened, 0u);
}

TEST_F(RemoteTlsTest, TokenOverTls) {
  StartTls(/*client_ca=*/false, /*tokens=*/true);
  auto ctx = ClientContext("");
  {
    auto client = Connect(ctx.get());
    ASSERT_FALSE(client->handshake_error()) << client->handshake_error().message();
    EXPECT_EQ(client->Hello(kBobToken).value(), "token:bob");
  }
  {
    auto client = Connect(ctx.get());
    EXPECT_EQ(client->Hello("wrong-wrong-wrong-wrong").status().code(),
              StatusCode::kPermissionDenied);
  }
  // A plaintext client gets nowhere on a TLS port.
  auto plain = Connect(nullptr);
  EXPECT_FALSE(plain->Hello(kBobToken).ok());
}

TEST(RemoteOptionsTest, RefusesUnsafeConfigurations) {
  RemoteOptions options;
  options.listen = {"tcp://127.0.0.1:7000"};
  Status s = CheckRemoteOptions(options);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("--tls-cert"), std::string::npos);
  options.tls_cert = "c.pem";
  options.tls_key = "k.pem";
  s = CheckRemoteOptions(options);
  EXPECT_NE(s.message().find("unauthenticated"), std::string::npos) << s.ToString();
  options.token_file = "t";
  EXPECT_TRUE(CheckRemoteOptions(options).ok());

  RemoteOptions plain;
  plain.listen = {"tcp://0.0.0.0:7000"};
  plain.insecure_loopback = true;
  plain.token_file = "t";
  s = CheckRemoteOptions(plain);
  EXPECT_NE(s.message().find("loopback addresses only"), std::string::npos) << s.ToString();
  plain.listen = {"tcp://[::1]:7000", "tcp://127.0.0.2:1"};
  EXPECT_TRUE(CheckRemoteOptions(plain).ok());
  plain.token_file.clear();
  EXPECT_NE(CheckRemoteOptions(plain).message().find("--token-file"), std::string::npos);
  plain.listen = {"127.0.0.1:7000"};
  EXPECT_NE(CheckRemoteOptions(plain).message().find("tcp://"), std::string::npos);
}

TEST(RemoteOptionsTest, BadCertificateFilesAreNamed) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  RemoteOptions options;
  options.listen = {"tcp://127.0.0.1:0"};
  options.tls_cert = "/nonexistent/server.pem";
  options.tls_key = "/nonexistent/server.key";
  options.token_file = "/nonexistent/tokens";
  CountingAdmission admission;
  auto server = RemoteServer::Create(instance->get(), {}, options, admission.Make());
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("/nonexistent/tokens"), std::string::npos)
      << server.status().ToString();
}

TEST(RemoteAuthTest, ListenAddresses) {
  auto a = ParseListenAddress("tcp://127.0.0.1:9000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9000);
  auto b = ParseListenAddress("tcp://[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->ToString(), "tcp://[::1]:0");
  EXPECT_FALSE(ParseListenAddress("tcp://127.0.0.1").ok());
  EXPECT_FALSE(ParseListenAddress("tcp://127.0.0.1:70000").ok());
  EXPECT_FALSE(ParseListenAddress("tcp://example.com:80").ok());
  EXPECT_FALSE(ParseListenAddress("tcp://::1:80").ok());
  EXPECT_FALSE(ParseListenAddress("tcp://:80").ok());
  EXPECT_TRUE(IsLoopbackHost("127.9.9.9"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
  EXPECT_FALSE(IsLoopbackHost("::"));
}

TEST(RemoteAuthTest, TokenTable) {
  auto table = TokenTable::Parse("# c\n  alice   aaaaaaaaaaaaaaaaaaaa  \nbob bbbbbbbbbbbbbbbbbbbb\r\n",
                                 "f");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->size(), 2u);
  EXPECT_EQ(table->Match("aaaaaaaaaaaaaaaaaaaa").value_or(""), "alice");
  EXPECT_EQ(table->Match("bbbbbbbbbbbbbbbbbbbb").value_or(""), "bob");
  EXPECT_FALSE(table->Match("aaaaaaaaaaaaaaaaaaa").has_value());
  EXPECT_FALSE(table->Match("").has_value());
  auto short_token = TokenTable::Parse("x short\n", "f");
  ASSERT_FALSE(short_token.ok());
  EXPECT_NE(short_token.status().message().find("f:1"), std::string::npos);
  EXPECT_NE(short_token.status().message().find("at least 16"), std::string::npos);
  EXPECT_FALSE(TokenTable::Parse("a aaaaaaaaaaaaaaaaaaaa\na bbbbbbbbbbbbbbbbbbbb\n", "f").ok());
  EXPECT_FALSE(TokenTable::Parse("a aaaaaaaaaaaaaaaaaaaa\nb aaaaaaaaaaaaaaaaaaaa\n", "f").ok());
  EXPECT_FALSE(TokenTable::Parse("a/b aaaaaaaaaaaaaaaaaaaa\n", "f").ok());
  EXPECT_FALSE(TokenTable::Parse("# nothing\n", "f").ok());
  EXPECT_FALSE(TokenTable::Parse("loneword\n", "f").ok());

  Scratch scratch;
  ::chmod(scratch.Path("tokens").c_str(), 0644);
  auto loose = TokenTable::Load(scratch.Path("tokens"));
  ASSERT_FALSE(loose.ok());
  EXPECT_NE(loose.status().message().find("chmod 600"), std::string::npos);
  ::chmod(scratch.Path("tokens").c_str(), 0600);
  EXPECT_TRUE(TokenTable::Load(scratch.Path("tokens")).ok());
}

TEST(RemoteAuthTest, RemoteUidIsStableDistinctAndNeverReal) {
  EXPECT_EQ(RemoteUid("token:alice"), RemoteUid("token:alice"));
  EXPECT_NE(RemoteUid("token:alice"), RemoteUid("token:bob"));
  EXPECT_NE(RemoteUid("token:alice"), RemoteUid("cert:alice"));
  EXPECT_GE(RemoteUid("x"), int64_t{1} << 62);
}

}  // namespace
}  // namespace jitd::daemon
