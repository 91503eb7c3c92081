// Replicated executes through a Session (issue 17, item 3): the wire's
// per-process arguments and results, the refusals that point elsewhere,
// per-replica feed ranges, and a collective that cannot complete ending at
// its deadline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/unique_fd.h"
#include "daemon/session.h"

namespace jitd::daemon {
namespace {

// all_reduce (sum) of an f32[2] over replicas 0 and 1, plus 10 * replica_id.
constexpr char kSum[] = R"(
module @sum {
  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %s = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %t = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %t : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
    %r = stablehlo.replica_id : tensor<ui32>
    %f = stablehlo.convert %r : (tensor<ui32>) -> tensor<f32>
    %ten = stablehlo.constant dense<10.0> : tensor<f32>
    %m = stablehlo.multiply %f, %ten : tensor<f32>
    %b = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %out = stablehlo.add %s, %b : tensor<2xf32>
    return %out : tensor<2xf32>
  }
}
)";

// Replica 0 meets the all_reduce; replica 1 waits on an infeed first.
constexpr char kStuck[] = R"(
module @stuck attributes {mhlo.num_replicas = 2 : i32} {
  func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %r = stablehlo.replica_id : tensor<ui32>
    %zero = stablehlo.constant dense<0> : tensor<ui32>
    %first = stablehlo.compare EQ, %r, %zero : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    %out = "stablehlo.if"(%first) ({
      %s = "stablehlo.all_reduce"(%x) ({
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %t = stablehlo.add %a, %b : tensor<f32>
          stablehlo.return %t : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> tensor<2xf32>
      stablehlo.return %s : tensor<2xf32>
    }, {
      %tok = stablehlo.create_token : !stablehlo.token
      %in:2 = "stablehlo.infeed"(%tok) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
      stablehlo.return %in#0 : tensor<2xf32>
    }) : (tensor<i1>) -> tensor<2xf32>
    return %out : tensor<2xf32>
  }
}
)";

class SessionReplicatedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create({});
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(instance).value();
    MakeSession({});
  }

  // Replaces the session with one made with `options` (segment: 4 MiB).
  void MakeSession(SessionOptions options) {
    session_.reset();
    heap_.reset();
    buffer_refs_.clear();
    options.segment_bytes = 4 << 20;
    auto session = Session::Create(instance_.get(), 1, options);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    session_ = std::move(session).value();
    auto segment = ipc::Segment::Attach(UniqueFd(::dup(session_->segment_fd())));
    ASSERT_TRUE(segment.ok()) << segment.status().ToString();
    heap_ = std::move(segment).value();
  }

  const wire::ReplyMessage* Reply() { return *ipc::VerifyReply(reply_); }
  std::string Message() {
    const wire::ReplyMessage* reply = Reply();
    return reply->status() && reply->status()->message() ? reply->status()->message()->str() : "";
  }

  wire::StatusCode Send(flatbuffers::FlatBufferBuilder& fbb, wire::Request type,
                        flatbuffers::Offset<void> body) {
    fbb.Finish(wire::CreateRequestMessage(fbb, 1, type, body), wire::RequestMessageIdentifier());
    reply_ = session_->Handle(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
    auto reply = ipc::VerifyReply(reply_);
    EXPECT_TRUE(reply.ok());
    if (!reply.ok()) return wire::StatusCode_INTERNAL;
    return (*reply)->status() ? (*reply)->status()->code() : wire::StatusCode_OK;
  }

  // Copies `bytes` into a new heap block.
  ipc::RingHeapRef Put(const void* bytes, size_t size) {
    auto ref = heap_->Allocate(size);
    EXPECT_TRUE(ref.ok());
    ref->length = size;
    std::memcpy(heap_->HeapBytes(*ref)->data(), bytes, size);
    return *ref;
  }

  wire::StatusCode Compile(std::string_view text, uint32_t replicas, uint64_t* handle) {
    ipc::RingHeapRef ref = Put(text.data(), text.size());
    flatbuffers::FlatBufferBuilder fbb;
    wire::HeapRef program(ref.offset, ref.length);
    auto options = wire::CreateCompileOptions(fbb, 0, 0, false, false, replicas);
    auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program, 0,
                                           0, options);
    wire::StatusCode code = Send(fbb, wire::Request_CompileRequest, body.Union());
    if (code == wire::StatusCode_OK) *handle = Reply()->body_as_CompileReply()->executable();
    return code;
  }

  // An f32[2] buffer holding {a, b}.
  uint64_t Buffer(float a, float b) {
    const float values[2] = {a, b};
    ipc::RingHeapRef ref = Put(values, sizeof(values));
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, fbb.CreateVector<int64_t>({2}));
    wire::HeapRef data(ref.offset, ref.length);
    auto body = wire::CreateCreateBufferRequest(fbb, shape, &data);
    EXPECT_EQ(Send(fbb, wire::Request_CreateBufferRequest, body.Union()), wire::StatusCode_OK);
    buffer_refs_.push_back(ref);
    return Reply()->body_as_CreateBufferReply()->buffer();
  }

  std::vector<float> Read(size_t buffer_index) {
    std::vector<float> out(2);
    std::memcpy(out.data(), heap_->HeapBytes(buffer_refs_[buffer_index])->data(), 8);
    return out;
  }

  wire::StatusCode Execute(uint64_t exe, std::vector<uint64_t> args, std::vector<uint64_t> results,
                           uint32_t processes, uint64_t deadline_micros = 0) {
    flatbuffers::FlatBufferBuilder fbb;
    auto a = fbb.CreateVector(args);
    auto r = fbb.CreateVector(results);
    wire::ExecuteRequestBuilder body(fbb);
    body.add_executable(exe);
    body.add_arguments(a);
    body.add_results(r);
    body.add_deadline_micros(deadline_micros);
    body.add_processes(processes);
    auto offset = body.Finish();
    return Send(fbb, wire::Request_ExecuteRequest, offset.Union());
  }

  wire::StatusCode Infeed(uint32_t replica) {
    const float values[2] = {1, 2};
    ipc::RingHeapRef ref = Put(values, sizeof(values));
    flatbuffers::FlatBufferBuilder fbb;
    auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, fbb.CreateVector<int64_t>({2}));
    wire::HeapRef data(ref.offset, ref.length);
    auto body = wire::CreateTransferToInfeedRequest(fbb, fbb.CreateString("interpreter"), replica,
                                                    shape, &data);
    return Send(fbb, wire::Request_TransferToInfeedRequest, body.Union());
  }

  std::unique_ptr<Instance> instance_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<ipc::Segment> heap_;
  std::vector<uint8_t> reply_;
  std::vector<ipc::RingHeapRef> buffer_refs_;  // by Buffer() order
};

TEST_F(SessionReplicatedTest, EachProcessGetsItsArgumentsAndResults) {
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kSum, 2, &exe), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Reply()->body_as_CompileReply()->num_replicas(), 2u);
  EXPECT_EQ(Reply()->body_as_CompileReply()->num_partitions(), 1u);
  const uint64_t x0 = Buffer(1, 2), x1 = Buffer(30, 40);
  const uint64_t out0 = Buffer(0, 0), out1 = Buffer(0, 0);
  ASSERT_EQ(Execute(exe, {x0, x1}, {out0, out1}, 2), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Read(2), (std::vector<float>{31, 42}));
  EXPECT_EQ(Read(3), (std::vector<float>{41, 52}));
  ASSERT_EQ(Reply()->body_as_ExecuteReply()->results()->size(), 2u);
}

TEST_F(SessionReplicatedTest, CountsThatDoNotFitAreRefusedByName) {
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kSum, 2, &exe), wire::StatusCode_OK) << Message();
  const uint64_t x = Buffer(1, 2), out = Buffer(0, 0);
  // One process's arguments to a two-process program: pointed to the per-replica form.
  EXPECT_EQ(Execute(exe, {x}, {out}, 0), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("ExecutePerReplica"), std::string::npos) << Message();
  EXPECT_EQ(Execute(exe, {x, x, x}, {out, out}, 3), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("runs 3 processes, the executable 2"), std::string::npos) << Message();
  EXPECT_EQ(Execute(exe, {x}, {out, out}, 2), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("1 argument(s) per process"), std::string::npos) << Message();
  // A one-process program asked to run two.
  uint64_t single = 0;
  ASSERT_EQ(Compile(kSum, 1, &single), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Execute(single, {x, x}, {out, out}, 2), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("runs 2 processes, the executable 1"), std::string::npos) << Message();
}

TEST_F(SessionReplicatedTest, FeedReplicasAreThoseOfTheClientsPrograms) {
  EXPECT_EQ(Infeed(0), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Infeed(1), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("replica 1 is out of range [0, 1)"), std::string::npos) << Message();
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kSum, 2, &exe), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Infeed(1), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Infeed(2), wire::StatusCode_INVALID_ARGUMENT);
  EXPECT_NE(Message().find("out of range [0, 2)"), std::string::npos) << Message();
}

TEST_F(SessionReplicatedTest, AStuckCollectiveEndsAtTheDeadline) {
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kStuck, 0, &exe), wire::StatusCode_OK) << Message();
  const uint64_t x = Buffer(1, 2), out0 = Buffer(0, 0), out1 = Buffer(0, 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Execute(exe, {x, x}, {out0, out1}, 2, 200'000), wire::StatusCode_DEADLINE_EXCEEDED)
      << Message();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(200));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  EXPECT_NE(Message().find("process"), std::string::npos) << Message();
  // Replica 1's infeed filled: the same program completes.
  ASSERT_EQ(Infeed(1), wire::StatusCode_OK) << Message();
  EXPECT_EQ(Execute(exe, {x, x}, {out0, out1}, 2, 5'000'000), wire::StatusCode_INVALID_ARGUMENT)
      << "replica 1 now ends without the all_reduce: " << Message();
  EXPECT_NE(Message().find("stablehlo.all_reduce"), std::string::npos) << Message();
}

TEST_F(SessionReplicatedTest, TheClientsTimeLimitCutsTheDeadline) {
  SessionOptions options;
  options.max_execute_time = std::chrono::milliseconds(150);
  MakeSession(options);
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kStuck, 0, &exe), wire::StatusCode_OK) << Message();
  const uint64_t x = Buffer(1, 2), out0 = Buffer(0, 0), out1 = Buffer(0, 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Execute(exe, {x, x}, {out0, out1}, 2, 60'000'000), wire::StatusCode_DEADLINE_EXCEEDED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(Message().find("max_execute_time"), std::string::npos) << Message();
}

TEST_F(SessionReplicatedTest, CancelStopsEveryProcess) {
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kStuck, 0, &exe), wire::StatusCode_OK) << Message();
  const uint64_t x = Buffer(1, 2), out0 = Buffer(0, 0), out1 = Buffer(0, 0);
  // The client hangs up 100 ms into a run whose deadline is a minute away.
  std::thread hang_up([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    session_->Cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  const wire::StatusCode code = Execute(exe, {x, x}, {out0, out1}, 2, 60'000'000);
  hang_up.join();
  EXPECT_NE(code, wire::StatusCode_OK);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << Message();
}

TEST_F(SessionReplicatedTest, LibraryAllocatedResultsCountAgainstTheQuota) {
  SessionOptions options;
  options.max_buffers = 4;
  MakeSession(options);
  uint64_t exe = 0;
  ASSERT_EQ(Compile(kSum, 2, &exe), wire::StatusCode_OK) << Message();
  const uint64_t x0 = Buffer(1, 2), x1 = Buffer(3, 4);
  // Two result ranges of the heap for the daemon to register (result_data).
  auto block = [this] {
    auto ref = heap_->Allocate(8);
    EXPECT_TRUE(ref.ok());
    return wire::HeapRef(ref->offset, 8);
  };
  auto run = [&](std::vector<wire::HeapRef> data) {
    flatbuffers::FlatBufferBuilder fbb;
    auto a = fbb.CreateVector(std::vector<uint64_t>{x0, x1});
    auto d = fbb.CreateVectorOfStructs(data);
    wire::ExecuteRequestBuilder body(fbb);
    body.add_executable(exe);
    body.add_arguments(a);
    body.add_result_data(d);
    body.add_processes(2);
    auto offset = body.Finish();
    return Send(fbb, wire::Request_ExecuteRequest, offset.Union());
  };
  const wire::HeapRef r0 = block(), r1 = block();
  ASSERT_EQ(run({r0, r1}), wire::StatusCode_OK) << Message();
  ASSERT_EQ(Reply()->body_as_ExecuteReply()->results()->size(), 2u);
  float got[2];
  std::memcpy(got, heap_->HeapBytes({r1.offset(), 8})->data(), 8);
  EXPECT_EQ(got[0], 14.0f);  // 1 + 3 + 10 * replica 1
  EXPECT_EQ(session_->num_buffers(), 4u);
  // Two more would make six buffers, over the limit of four.
  EXPECT_EQ(run({block(), block()}), wire::StatusCode_RESOURCE_EXHAUSTED);
  EXPECT_NE(Message().find("max_buffers"), std::string::npos) << Message();
  EXPECT_EQ(session_->num_buffers(), 4u);
}

}  // namespace
}  // namespace jitd::daemon
