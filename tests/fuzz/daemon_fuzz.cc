// libFuzzer target for the daemon's message handling: Session::Handle on
// arbitrary bytes, as hostile clients would push them onto their request
// rings — SEQUENCES of requests across TWO sessions (two client processes of
// two different users), interleaved.
//
// Each input runs against a fresh Instance (no disk cache) and two Sessions,
// A and B, with peers (pid 101, uid U+1000) and (pid 102, uid U+2000), U the
// fuzzer's own uid (neither is trusted with everything, see
// Instance::TrustedUid), so a run is reproducible from its input alone. The
// input is a sequence of records, each a little-endian u16 header then that
// many bytes (the low 14 bits):
//   header bit 14: the record is for session B (else A);
//   header bit 15 clear: the bytes are one request message, given to Handle;
//   header bit 15 set:   the bytes are written into that client's heap at
//                        kTextOffset (what a client does before Compile).
// A trailing partial record is one last message for A of the bytes left. At
// most kMaxRecords records are handled. Handles are numbered from 1 in a
// fresh session, so a sequence can compile, create buffers and execute them.
//
// Contract checked on every message:
//   - Handle never crashes, hangs or leaks (ASan/UBSan/libFuzzer enforce it);
//   - its reply always passes ipc::VerifyReply;
//   - a reply to a message that verifies carries the request's id, and one
//     that does not verify is INVALID_ARGUMENT with id 0;
//   - the session's quotas hold (handle counts, registered bytes).
// Across the two sessions (a model of each one's live handles, fingerprints
// and executes is kept from the replies):
//   - nothing succeeds with a handle the session does not hold (Execute,
//     Release, DestroyBuffer, ReadDump, arguments and result buffers); after
//     every record the harness also uses each handle the OTHER session holds
//     and this one does not (Execute / DestroyBuffer), which must be
//     NOT_FOUND;
//   - a session never reads another's outfeed: TransferFromOutfeed succeeds
//     only in a session that has sent an Execute (only its own executions
//     write its outfeed); after every successful Execute the harness reads
//     the other session's outfeed, which must not succeed unless that one
//     executed too;
//   - fingerprints do not cross uids: a text compile's fingerprint is never
//     one the other uid got, and after every successful text compile the
//     harness compiles that fingerprint in the other session, which must be
//     NOT_FOUND;
//   - stats show a session nothing of the other: not its session id, pid,
//     name or fingerprints.
// A broken contract ends in __builtin_trap() (a crash artifact).
//
// Seeds: `jitd_daemon_fuzz --write-seeds=DIR` writes valid request sequences
// built with the generated FlatBuffers builders (hello, compile + buffers +
// execute + release, stats, compile by fingerprint, quota walks, feeds, and
// two-session interplays) and exits; ctest does that before its short run
// (tests/CMakeLists.txt).

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "daemon/instance.h"
#include "daemon/session.h"
#include "ipc/protocol.h"
#include "ipc/segment.h"

namespace {

using namespace jitd;  // NOLINT: a one-file tool

constexpr uint64_t kTextOffset = 0;
constexpr uint64_t kBufferOffset = 64 * 1024;  // buffers the seeds register
constexpr int kMaxRecords = 24;
constexpr uint16_t kHeapRecord = 0x8000;
constexpr uint16_t kSessionB = 0x4000;
constexpr uint16_t kLengthMask = 0x3fff;

daemon::SessionOptions FuzzSessionOptions() {
  daemon::SessionOptions options;
  options.segment_bytes = 2 << 20;  // the rings take ~1.3 MiB
  // Small quotas, so that inputs reach them.
  options.max_executables = 4;
  options.max_buffers = 8;
  options.max_buffer_bytes = 4096;
  options.max_execute_time = std::chrono::milliseconds(50);
  options.default_execute_deadline = std::chrono::milliseconds(50);
  return options;
}

[[noreturn]] void Fail(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "daemon_fuzz: %s\n%.*s\n", what,
               static_cast<int>(std::min<size_t>(detail.size(), 4000)), detail.data());
  __builtin_trap();
}

void CheckReply(std::span<const uint8_t> message, const std::vector<uint8_t>& reply_bytes,
                const daemon::Session& session, const daemon::SessionOptions& options) {
  StatusOr<const wire::ReplyMessage*> reply = ipc::VerifyReply(reply_bytes);
  if (!reply.ok()) Fail("the reply does not verify", reply.status().message());
  StatusOr<const wire::RequestMessage*> request = ipc::VerifyRequest(message);
  if (request.ok()) {
    if ((*reply)->id() != (*request)->id()) Fail("the reply's id differs from the request's");
  } else {
    if ((*reply)->id() != 0 || (*reply)->status() == nullptr ||
        (*reply)->status()->code() != wire::StatusCode_INVALID_ARGUMENT) {
      Fail("an unverifiable request was not answered INVALID_ARGUMENT with id 0");
    }
  }
  if (session.num_executables() > options.max_executables) Fail("max_executables broken");
  if (session.num_buffers() > options.max_buffers) Fail("max_buffers broken");
  if (session.buffer_bytes() > options.max_buffer_bytes) Fail("max_buffer_bytes broken");
}

// --- Seeds ------------------------------------------------------------------

class SeedWriter {
 public:
  void Message(flatbuffers::FlatBufferBuilder& fbb, wire::Request type,
               flatbuffers::Offset<void> body) {
    fbb.Finish(wire::CreateRequestMessage(fbb, next_id_++, type, body),
               wire::RequestMessageIdentifier());
    Record(session_, std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
  }
  void HeapText(std::string_view text) {
    Record(session_ | kHeapRecord, std::span<const uint8_t>(
                                      reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  }
  // The records that follow go to session B (or back to A).
  void ToB(bool b) { session_ = b ? kSessionB : 0; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void Record(uint16_t flag, std::span<const uint8_t> bytes) {
    const uint16_t header = static_cast<uint16_t>(flag | bytes.size());
    bytes_.push_back(static_cast<uint8_t>(header & 0xff));
    bytes_.push_back(static_cast<uint8_t>(header >> 8));
    bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  }
  uint64_t next_id_ = 1;
  uint16_t session_ = 0;
  std::vector<uint8_t> bytes_;
};

constexpr char kAdd[] = R"(func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

constexpr char kForever[] = R"(func.func public @main() -> tensor<i1> {
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

void Hello(SeedWriter& w) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString("fuzz");
  w.Message(fbb, wire::Request_Hello, wire::CreateHello(fbb, ipc::kProtocolVersion, name).Union());
}

void Compile(SeedWriter& w, uint64_t length, std::vector<wire::ElementType> shapes = {},
             bool dumps = false, bool profile = false, const char* dump_dir = nullptr,
             uint32_t replicas = 0) {
  flatbuffers::FlatBufferBuilder fbb;
  wire::HeapRef program(kTextOffset, length);
  std::vector<flatbuffers::Offset<wire::TensorShape>> shape_offsets;
  for (wire::ElementType type : shapes) {
    auto dims = fbb.CreateVector(std::vector<int64_t>{4});
    shape_offsets.push_back(wire::CreateTensorShape(fbb, type, dims));
  }
  auto shape_vector = shapes.empty() ? 0 : fbb.CreateVector(shape_offsets);
  auto device = fbb.CreateString("interpreter");
  auto dir = dump_dir ? fbb.CreateString(dump_dir) : 0;
  auto options = wire::CreateCompileOptions(fbb, device, dir, profile, dumps, replicas);
  auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program, 0,
                                         shape_vector, options);
  w.Message(fbb, wire::Request_CompileRequest, body.Union());
}

void CreateBuffer(SeedWriter& w, wire::ElementType type, std::vector<int64_t> dims,
                  uint64_t offset, uint64_t bytes) {
  flatbuffers::FlatBufferBuilder fbb;
  auto dim_vector = fbb.CreateVector(dims);
  auto shape = wire::CreateTensorShape(fbb, type, dim_vector);
  wire::HeapRef data(offset, bytes);
  w.Message(fbb, wire::Request_CreateBufferRequest,
            wire::CreateCreateBufferRequest(fbb, shape, &data).Union());
}

void Execute(SeedWriter& w, uint64_t exe, std::vector<uint64_t> args,
             std::vector<uint64_t> results, uint64_t deadline = 0, uint32_t processes = 0) {
  flatbuffers::FlatBufferBuilder fbb;
  auto a = fbb.CreateVector(args);
  auto r = fbb.CreateVector(results);
  w.Message(fbb, wire::Request_ExecuteRequest,
            wire::CreateExecuteRequest(fbb, exe, a, r, deadline, flatbuffers::nullopt, 0, 0,
                                       processes)
                .Union());
}

constexpr char kFeed[] = R"(func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<4xf32>, !stablehlo.token)
  %0 = stablehlo.add %a, %v#0 : tensor<4xf32>
  %t2 = "stablehlo.outfeed"(%0, %v#1) : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  return %0 : tensor<4xf32>
}
)";

// TransferToInfeed (infeed = true) or TransferFromOutfeed of an f32[4].
void Feed(SeedWriter& w, bool infeed, const char* device, uint32_t replica, uint64_t offset,
          uint64_t bytes, uint64_t timeout_micros = 0) {
  flatbuffers::FlatBufferBuilder fbb;
  auto name = fbb.CreateString(device);
  auto dims = fbb.CreateVector(std::vector<int64_t>{4});
  auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
  wire::HeapRef data(offset, bytes);
  if (infeed) {
    w.Message(fbb, wire::Request_TransferToInfeedRequest,
              wire::CreateTransferToInfeedRequest(fbb, name, replica, shape, &data).Union());
  } else {
    w.Message(fbb, wire::Request_TransferFromOutfeedRequest,
              wire::CreateTransferFromOutfeedRequest(fbb, name, replica, shape, &data,
                                                     timeout_micros)
                  .Union());
  }
}

void WriteSeeds(const std::string& dir) {
  std::vector<std::vector<uint8_t>> seeds;
  const uint64_t add_len = std::strlen(kAdd);
  {  // The whole life of a client.
    SeedWriter w;
    Hello(w);
    w.HeapText(kAdd);
    Compile(w, add_len, {wire::ElementType_F32, wire::ElementType_F32});
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 16, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 32, 16);
    Execute(w, 1, {2, 3}, {4});
    Execute(w, 1, {4, 4}, {2}, 1000);
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_ReleaseRequest, wire::CreateReleaseRequest(fbb, 1).Union());
    }
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_DestroyBufferRequest,
                wire::CreateDestroyBufferRequest(fbb, 3).Union());
    }
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_StatsRequest, wire::CreateStatsRequest(fbb, true).Union());
    }
    seeds.push_back(w.bytes());
  }
  {  // Compile, then the same program by its fingerprint (and a wrong one).
    SeedWriter w;
    w.HeapText(kAdd);
    Compile(w, add_len);
    for (int wrong = 0; wrong < 2; ++wrong) {
      flatbuffers::FlatBufferBuilder fbb;
      std::vector<uint8_t> fingerprint(16, static_cast<uint8_t>(wrong ? 0x5a : 0));
      auto f = fbb.CreateVector(fingerprint);
      auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, nullptr, f);
      w.Message(fbb, wire::Request_CompileRequest, body.Union());
    }
    seeds.push_back(w.bytes());
  }
  {  // Quotas: executables, buffers, bytes, execution time.
    SeedWriter w;
    w.HeapText(kForever);
    for (int i = 0; i < 5; ++i) Compile(w, std::strlen(kForever));
    for (int i = 0; i < 9; ++i) {
      CreateBuffer(w, wire::ElementType_PRED, {}, kBufferOffset, 1);
    }
    CreateBuffer(w, wire::ElementType_F32, {1024}, kBufferOffset, 4096);
    Execute(w, 1, {}, {5});
    seeds.push_back(w.bytes());
  }
  {  // Mismatched shapes, a range out of the heap, an unknown handle.
    SeedWriter w;
    w.HeapText(kAdd);
    Compile(w, add_len, {wire::ElementType_F64});
    Compile(w, add_len);
    CreateBuffer(w, wire::ElementType_F64, {4}, kBufferOffset, 32);
    CreateBuffer(w, wire::ElementType_F32, {4}, uint64_t{1} << 40, 16);
    Execute(w, 1, {1, 1}, {1});
    Execute(w, 77, {}, {});
    seeds.push_back(w.bytes());
  }
  {  // Infeed and outfeed: feed, execute, read back; then bad devices,
     // replicas, ranges, an unfed infeed and an empty outfeed (deadlines).
    SeedWriter w;
    w.HeapText(kFeed);
    Compile(w, std::strlen(kFeed));
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 16, 16);
    Feed(w, true, "", 0, kBufferOffset, 16);
    Execute(w, 1, {2}, {3});
    Feed(w, false, "interpreter", 0, kBufferOffset + 16, 16, 1000);
    Feed(w, true, "nope", 0, kBufferOffset, 16);
    Feed(w, true, "", 3, kBufferOffset, 16);
    Feed(w, true, "", 0, uint64_t{1} << 40, 16);
    Feed(w, false, "", 0, kBufferOffset, 12, 1000);
    Execute(w, 1, {2}, {3});
    Feed(w, false, "", 0, kBufferOffset, 16, 1000);
    seeds.push_back(w.bytes());
  }
  {  // Replicated execution (issue 17): kFeed as 2 replicas, per-replica
     // feeds (in and out of range), per-process arguments, wrong process
     // counts, a replica left unfed (the deadline), outfeeds per replica.
    SeedWriter w;
    w.HeapText(kFeed);
    Compile(w, std::strlen(kFeed), {}, false, false, nullptr, /*replicas=*/2);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 16, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 32, 16);
    Feed(w, true, "", 0, kBufferOffset, 16);
    Feed(w, true, "", 1, kBufferOffset, 16);
    Feed(w, true, "", 2, kBufferOffset, 16);
    Execute(w, 1, {2, 3}, {3, 4}, 100'000, 2);
    Execute(w, 1, {2}, {3}, 100'000);
    Execute(w, 1, {2, 2, 2}, {3, 3, 3}, 100'000, 3);
    Feed(w, true, "", 0, kBufferOffset, 16);
    Execute(w, 1, {2, 2}, {3, 4}, 1000, 2);
    Feed(w, false, "", 1, kBufferOffset + 16, 16, 1000);
    Feed(w, false, "", 0, kBufferOffset + 16, 16, 1000);
    seeds.push_back(w.bytes());
  }
  {  // Compile options: dumps read (in and out of range, twice, wrong
     // sizes), a refused dump_dir, a profiled execute, reads after release.
    SeedWriter w;
    w.HeapText(kAdd);
    Compile(w, add_len, {}, /*dumps=*/true, /*profile=*/true);
    Compile(w, add_len, {}, false, false, "/tmp/fuzz-dumps");
    auto read = [&](uint64_t exe, uint32_t index, uint64_t offset, uint64_t bytes) {
      flatbuffers::FlatBufferBuilder fbb;
      wire::HeapRef data(offset, bytes);
      w.Message(fbb, wire::Request_ReadDumpRequest,
                wire::CreateReadDumpRequest(fbb, exe, index, &data).Union());
    };
    read(1, 0, kBufferOffset, 64);
    read(1, 0, kBufferOffset, 1);
    read(1, 1, uint64_t{1} << 40, 64);
    read(1, 7, kBufferOffset, 64);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 16, 16);
    Execute(w, 1, {2, 2}, {3});
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_ReleaseRequest, wire::CreateReleaseRequest(fbb, 1).Union());
    }
    read(1, 0, kBufferOffset, 64);
    seeds.push_back(w.bytes());
  }
  {  // Two clients: A feeds and executes (its outfeed holds a value); B
     // reads the outfeed, uses A's handle numbers, compiles the same text
     // (its own miss), asks for stats; then A reads its own outfeed.
    SeedWriter w;
    Hello(w);
    w.HeapText(kFeed);
    Compile(w, std::strlen(kFeed));
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 16, 16);
    Feed(w, true, "", 0, kBufferOffset, 16);
    Execute(w, 1, {2}, {3});
    w.ToB(true);
    Hello(w);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    Feed(w, false, "", 0, kBufferOffset, 16, 1000);
    Execute(w, 1, {1}, {1});
    Feed(w, true, "", 0, kBufferOffset, 16);  // B's value, never A's
    w.HeapText(kFeed);
    Compile(w, std::strlen(kFeed));
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_StatsRequest, wire::CreateStatsRequest(fbb, true).Union());
    }
    w.ToB(false);
    Feed(w, false, "", 0, kBufferOffset + 16, 16, 1000);
    Execute(w, 1, {2}, {3}, 1000);  // A's infeed is empty: B's value is not A's
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_StatsRequest, wire::CreateStatsRequest(fbb, true).Union());
    }
    seeds.push_back(w.bytes());
  }
  {  // Interleaved: both compile the same program, release and destroy
     // each other's handle numbers, compile by fingerprint.
    SeedWriter w;
    w.HeapText(kAdd);
    Compile(w, add_len);
    w.ToB(true);
    w.HeapText(kAdd);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_ReleaseRequest, wire::CreateReleaseRequest(fbb, 1).Union());
    }
    Compile(w, add_len);
    w.ToB(false);
    {
      flatbuffers::FlatBufferBuilder fbb;
      w.Message(fbb, wire::Request_DestroyBufferRequest,
                wire::CreateDestroyBufferRequest(fbb, 1).Union());
    }
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset, 16);
    CreateBuffer(w, wire::ElementType_F32, {4}, kBufferOffset + 16, 16);
    Execute(w, 1, {2, 2}, {3});
    w.ToB(true);
    Execute(w, 2, {1, 1}, {1});
    seeds.push_back(w.bytes());
  }
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = dir + "/seed_" + std::to_string(i);
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()),
              static_cast<std::streamsize>(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "daemon_fuzz: cannot write %s\n", path.c_str());
      std::exit(1);
    }
  }
  std::fprintf(stderr, "daemon_fuzz: wrote %zu seeds to %s\n", seeds.size(), dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = (*argv)[i];
    constexpr std::string_view kFlag = "--write-seeds=";
    if (arg.substr(0, kFlag.size()) == kFlag) {
      WriteSeeds(std::string(arg.substr(kFlag.size())));
      std::exit(0);
    }
  }
  return 0;
}

namespace {

// --- Two sessions and the model of what each holds --------------------------

// One client as the harness sees it: its session, its segment, and what the
// replies say it holds and did.
struct Client {
  std::unique_ptr<daemon::Session> session;
  std::unique_ptr<ipc::Segment> segment;
  int64_t pid = 0, uid = 0;
  std::set<uint64_t> executables, buffers;
  std::set<std::vector<uint8_t>> fingerprints;  // of its successful text compiles
  bool executed = false;                        // has sent an Execute
};

uint64_t next_probe_id = uint64_t{1} << 40;

bool IsOk(const wire::ReplyMessage* reply) { return reply->status() == nullptr; }
bool IsNotFound(const wire::ReplyMessage* reply) {
  return reply->status() != nullptr && reply->status()->code() == wire::StatusCode_NOT_FOUND;
}

std::string Hex(const std::vector<uint8_t>& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

// Sends `fbb`'s finished request to `c` and returns the verified reply
// bytes (the checks of CheckReply included).
std::vector<uint8_t> Send(Client& c, flatbuffers::FlatBufferBuilder& fbb,
                          const daemon::SessionOptions& options) {
  std::vector<uint8_t> message(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  std::vector<uint8_t> reply = c.session->Handle(message);
  CheckReply(message, reply, *c.session, options);
  return reply;
}

const wire::ReplyMessage* Verified(const std::vector<uint8_t>& reply) {
  return *ipc::VerifyReply(reply);  // CheckReply verified it
}

// Updates `self`'s model from a request and its reply, and checks the
// cross-session rules that concern this one message.
void Model(Client& self, const Client& other, std::span<const uint8_t> message,
           const std::vector<uint8_t>& reply_bytes) {
  StatusOr<const wire::RequestMessage*> verified = ipc::VerifyRequest(message);
  if (!verified.ok()) return;
  const wire::RequestMessage* request = *verified;
  const wire::ReplyMessage* reply = Verified(reply_bytes);
  const bool ok = IsOk(reply);
  auto must_hold = [&](const std::set<uint64_t>& held, uint64_t handle, const char* what) {
    if (ok && held.count(handle) == 0) {
      Fail("a request succeeded with a handle its session does not hold", what);
    }
  };
  switch (request->request_type()) {
    case wire::Request_CompileRequest: {
      const wire::CompileRequest* compile = request->request_as_CompileRequest();
      if (!ok || compile == nullptr) break;
      const wire::CompileReply* body = reply->body_as_CompileReply();
      if (body == nullptr || body->fingerprint() == nullptr) Fail("compile reply without body");
      const std::vector<uint8_t> fingerprint(body->fingerprint()->begin(),
                                             body->fingerprint()->end());
      if (compile->program() != nullptr) {
        if (other.fingerprints.count(fingerprint) != 0) {
          Fail("two uids got the same fingerprint (the cache crossed uids)", Hex(fingerprint));
        }
        self.fingerprints.insert(fingerprint);
      } else if (self.fingerprints.count(fingerprint) == 0) {
        Fail("a fingerprint-only compile found a program this uid never sent",
             Hex(fingerprint));
      }
      self.executables.insert(body->executable());
      break;
    }
    case wire::Request_CreateBufferRequest:
      if (ok && reply->body_as_CreateBufferReply() != nullptr) {
        self.buffers.insert(reply->body_as_CreateBufferReply()->buffer());
      }
      break;
    case wire::Request_DestroyBufferRequest: {
      const wire::DestroyBufferRequest* r = request->request_as_DestroyBufferRequest();
      if (r == nullptr) break;
      must_hold(self.buffers, r->buffer(), "DestroyBuffer");
      if (ok) self.buffers.erase(r->buffer());
      break;
    }
    case wire::Request_ReleaseRequest: {
      const wire::ReleaseRequest* r = request->request_as_ReleaseRequest();
      if (r == nullptr) break;
      must_hold(self.executables, r->executable(), "Release");
      if (ok) self.executables.erase(r->executable());
      break;
    }
    case wire::Request_ReadDumpRequest: {
      const wire::ReadDumpRequest* r = request->request_as_ReadDumpRequest();
      if (r != nullptr) must_hold(self.executables, r->executable(), "ReadDump");
      break;
    }
    case wire::Request_ExecuteRequest: {
      const wire::ExecuteRequest* r = request->request_as_ExecuteRequest();
      if (r == nullptr) break;
      self.executed = true;
      must_hold(self.executables, r->executable(), "Execute");
      if (!ok) break;
      if (r->arguments()) {
        for (size_t i = 0; i < r->arguments()->size(); ++i) {
          must_hold(self.buffers, ipc::ReadVectorElement(*r->arguments(), i), "Execute argument");
        }
      }
      if (r->results() && r->results()->size() != 0) {
        for (size_t i = 0; i < r->results()->size(); ++i) {
          must_hold(self.buffers, ipc::ReadVectorElement(*r->results(), i), "Execute result");
        }
      } else if (const wire::ExecuteReply* body = reply->body_as_ExecuteReply();
                 body != nullptr && body->results()) {
        for (size_t i = 0; i < body->results()->size(); ++i) {
          self.buffers.insert(ipc::ReadVectorElement(*body->results(), i));
        }
      }
      break;
    }
    case wire::Request_TransferFromOutfeedRequest:
      if (ok && !self.executed) {
        Fail("a session read an outfeed value though it never executed anything (another "
             "session's outfeed)");
      }
      break;
    case wire::Request_StatsRequest: {
      const wire::StatsReply* body = reply->body_as_StatsReply();
      if (!ok || body == nullptr || body->json() == nullptr) break;
      const std::string json = body->json()->str();
      const std::string other_session = "\"session\":" + std::to_string(other.session->id()) + ",";
      const std::string other_pid = "\"pid\":" + std::to_string(other.pid) + ",";
      if (json.find(other_session) != std::string::npos ||
          json.find(other_pid) != std::string::npos) {
        Fail("stats showed the other session", json);
      }
      for (const std::vector<uint8_t>& f : other.fingerprints) {
        if (self.fingerprints.count(f) == 0 && json.find(Hex(f)) != std::string::npos) {
          Fail("stats showed the other uid's program", json);
        }
      }
      break;
    }
    default:
      break;
  }
}

// The harness's own cross-session probes after a record of `self`: it uses
// the other session's handles, fingerprints and outfeed from `self`.
void Probe(Client& self, const Client& other, const daemon::SessionOptions& options) {
  for (uint64_t handle : other.executables) {
    if (self.executables.count(handle) != 0) continue;
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateExecuteRequest(fbb, handle);
    fbb.Finish(wire::CreateRequestMessage(fbb, next_probe_id++, wire::Request_ExecuteRequest,
                                          body.Union()),
               wire::RequestMessageIdentifier());
    if (!IsNotFound(Verified(Send(self, fbb, options)))) {
      Fail("another session's executable handle was not NOT_FOUND");
    }
  }
  for (uint64_t handle : other.buffers) {
    if (self.buffers.count(handle) != 0) continue;
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateDestroyBufferRequest(fbb, handle);
    fbb.Finish(wire::CreateRequestMessage(fbb, next_probe_id++,
                                          wire::Request_DestroyBufferRequest, body.Union()),
               wire::RequestMessageIdentifier());
    if (!IsNotFound(Verified(Send(self, fbb, options)))) {
      Fail("another session's buffer handle was not NOT_FOUND");
    }
  }
  for (const std::vector<uint8_t>& fingerprint : other.fingerprints) {
    if (self.fingerprints.count(fingerprint) != 0) continue;
    flatbuffers::FlatBufferBuilder fbb;
    auto f = fbb.CreateVector(fingerprint);
    auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, nullptr, f);
    fbb.Finish(wire::CreateRequestMessage(fbb, next_probe_id++, wire::Request_CompileRequest,
                                          body.Union()),
               wire::RequestMessageIdentifier());
    const std::vector<uint8_t> reply = Send(self, fbb, options);
    if (!IsNotFound(Verified(reply))) {
      Fail("a fingerprint-only compile found another uid's program");
    }
  }
  if (other.executed && !self.executed) {
    // An f32[4] from self's outfeed: only self's executions could have
    // written it, and self has none.
    flatbuffers::FlatBufferBuilder fbb;
    auto dims = fbb.CreateVector(std::vector<int64_t>{4});
    auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
    wire::HeapRef data(kBufferOffset, 16);
    auto body = wire::CreateTransferFromOutfeedRequest(fbb, 0, 0, shape, &data, 1);
    fbb.Finish(wire::CreateRequestMessage(fbb, next_probe_id++,
                                          wire::Request_TransferFromOutfeedRequest,
                                          body.Union()),
               wire::RequestMessageIdentifier());
    if (IsOk(Verified(Send(self, fbb, options)))) {
      Fail("a session read another session's outfeed");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  daemon::InstanceOptions instance_options;
  instance_options.memory_cache_bytes = 1 << 20;
  StatusOr<std::unique_ptr<daemon::Instance>> instance = daemon::Instance::Create(instance_options);
  if (!instance.ok()) Fail("Instance::Create", instance.status().message());
  const daemon::SessionOptions options = FuzzSessionOptions();
  Client clients[2];
  for (int i = 0; i < 2; ++i) {
    Client& c = clients[i];
    StatusOr<std::unique_ptr<daemon::Session>> session =
        daemon::Session::Create(instance->get(), static_cast<uint64_t>(i + 1), options);
    if (!session.ok()) Fail("Session::Create", session.status().message());
    c.session = std::move(session).value();
    // Two processes of two users, neither the daemon's nor root.
    c.pid = 101 + i;
    c.uid = static_cast<int64_t>(::geteuid()) + 1000 * (i + 1);
    c.session->SetPeer(c.pid, c.uid);
    StatusOr<std::unique_ptr<ipc::Segment>> segment =
        ipc::Segment::Attach(UniqueFd(::dup(c.session->segment_fd())));
    if (!segment.ok()) Fail("Segment::Attach", segment.status().message());
    c.segment = std::move(segment).value();
  }

  std::span<const uint8_t> input(data, size);
  for (int record = 0; record < kMaxRecords && !input.empty(); ++record) {
    std::span<const uint8_t> body;
    bool heap = false;
    int which = 0;
    if (input.size() < 2) {
      body = input;
      input = {};
    } else {
      const uint16_t header = static_cast<uint16_t>(input[0] | (input[1] << 8));
      heap = (header & kHeapRecord) != 0;
      which = (header & kSessionB) != 0 ? 1 : 0;
      const size_t length = std::min<size_t>(header & kLengthMask, input.size() - 2);
      body = input.subspan(2, length);
      input = input.subspan(2 + length);
    }
    Client& self = clients[which];
    Client& other = clients[1 - which];
    if (heap) {
      StatusOr<std::span<uint8_t>> text = self.segment->HeapBytes({kTextOffset, body.size()});
      if (text.ok() && !body.empty()) std::memcpy(text->data(), body.data(), body.size());
      continue;
    }
    // Handle gets a private copy, as the session's worker gives it.
    std::vector<uint8_t> message(body.begin(), body.end());
    std::vector<uint8_t> reply = self.session->Handle(message);
    CheckReply(message, reply, *self.session, options);
    Model(self, other, message, reply);
    Probe(self, other, options);
    Probe(other, self, options);
  }
  return 0;
}
