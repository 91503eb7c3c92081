#include "libclient/client.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/cpu_move.h"
#include "ipc/fd_passing.h"
#include "libclient/remote_link.h"

namespace jitd::client {
namespace {

using Clock = std::chrono::steady_clock;

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
Status DeadlineExceeded(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}

flatbuffers::Offset<wire::TensorShape> ToWire(flatbuffers::FlatBufferBuilder& fbb,
                                              const TensorShape& shape) {
  auto dims = fbb.CreateVector(shape.dims);
  return wire::CreateTensorShape(fbb, shape.element_type, dims);
}

TensorShape FromWire(const wire::TensorShape* shape) {
  TensorShape out;
  if (shape == nullptr) return out;
  out.element_type = shape->element_type();
  out.dims = ipc::ReadVector(shape->dims());
  return out;
}

std::span<const uint8_t> Finish(flatbuffers::FlatBufferBuilder& fbb,
                                flatbuffers::Offset<wire::RequestMessage> root) {
  fbb.Finish(root, wire::RequestMessageIdentifier());
  return {fbb.GetBufferPointer(), fbb.GetSize()};
}

}  // namespace

std::string TensorShape::ToString() const {
  std::string s = wire::EnumNameElementType(element_type);
  if (s.empty()) s = "type" + std::to_string(static_cast<int>(element_type));
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + ']';
}

uint64_t ElementByteSize(wire::ElementType type) {
  switch (type) {
    case wire::ElementType_S16:
    case wire::ElementType_U16:
    case wire::ElementType_F16:
    case wire::ElementType_BF16:
      return 2;
    case wire::ElementType_S32:
    case wire::ElementType_U32:
    case wire::ElementType_F32:
      return 4;
    case wire::ElementType_S64:
    case wire::ElementType_U64:
    case wire::ElementType_F64:
    case wire::ElementType_C64:
      return 8;
    case wire::ElementType_C128:
      return 16;
    case wire::ElementType_INVALID:
      return 0;
    default:
      return type <= wire::ElementType_MAX ? 1 : 0;
  }
}

StatusOr<uint64_t> ByteSize(const TensorShape& shape) {
  const uint64_t element = ElementByteSize(shape.element_type);
  if (element == 0) return InvalidArgument("unknown element type in " + shape.ToString());
  uint64_t bytes = element;
  for (int64_t d : shape.dims) {
    if (d < 0) return InvalidArgument("negative dimension in " + shape.ToString());
    if (d != 0 && bytes > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) {
      return InvalidArgument(shape.ToString() + " is too large");
    }
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes;
}

std::string FingerprintHex(const Fingerprint& fingerprint) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (uint8_t b : fingerprint) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

Client::Client(std::string socket_path, ClientOptions options, UniqueFd socket,
               std::unique_ptr<ipc::Segment> segment, uint64_t session_id)
    : socket_path_(std::move(socket_path)),
      options_(std::move(options)),
      socket_(std::move(socket)),
      segment_(std::move(segment)),
      session_id_(session_id) {}

Client::~Client() = default;

namespace {

// Who answers at the other end of `fd` must be a daemon this process trusts
// (ClientOptions::trusted_daemon_uids): checked before anything is sent to
// it or taken from it, so an impostor listening where the client looks (a
// socket another user put in /tmp) gets nothing.
Status CheckDaemonPeer(int fd, const std::string& socket_path, const ClientOptions& options) {
  StatusOr<ipc::UnixCredentials> peer = ipc::PeerCredentials(fd);
  if (!peer.ok()) {
    return Status(StatusCode::kPermissionDenied,
                  "cannot tell who answers at " + socket_path + " (" + peer.status().message() +
                      "); refusing to use it");
  }
  const uid_t self = ::geteuid();
  if (peer->uid == self || peer->uid == 0) return Status::Ok();
  for (uint32_t trusted : options.trusted_daemon_uids) {
    if (peer->uid == trusted) return Status::Ok();
  }
  // $JITD_TRUST_DAEMON_UID: comma-separated uids (what the C API and Python
  // clients use; they build ClientOptions without the field).
  if (const char* env = std::getenv("JITD_TRUST_DAEMON_UID"); env != nullptr) {
    std::string_view list(env);
    while (!list.empty()) {
      const size_t comma = std::min(list.find(','), list.size());
      const std::string item(list.substr(0, comma));
      list.remove_prefix(std::min(comma + 1, list.size()));
      char* end = nullptr;
      errno = 0;
      const unsigned long uid = std::strtoul(item.c_str(), &end, 10);
      if (!item.empty() && end != nullptr && *end == '\0' && errno == 0 && uid == peer->uid) {
        return Status::Ok();
      }
    }
  }
  return Status(StatusCode::kPermissionDenied,
                "the process answering at " + socket_path + " (pid " +
                    std::to_string(peer->pid) + ") runs as uid " + std::to_string(peer->uid) +
                    ", neither this user (uid " + std::to_string(self) +
                    ") nor root: it may be another user's impostor, so nothing was sent to it. "
                    "If that uid runs a daemon you trust, set JITD_TRUST_DAEMON_UID=" +
                    std::to_string(peer->uid) +
                    " (or ClientOptions::trusted_daemon_uids, "
                    "jitd_client_options_t.trust_daemon_uid)");
}

}  // namespace

StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& socket_path,
                                                  ClientOptions options) {
  if (IsRemoteAddress(socket_path)) return ConnectRemote(socket_path, std::move(options));
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof(addr.sun_path)) {
    return InvalidArgument("socket path '" + socket_path + "' is empty or too long");
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Unavailable(std::string("socket(): ") + std::strerror(errno));
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Unavailable("no jitd daemon at " + socket_path + " (" + std::strerror(errno) +
                       "); start one with `jitd serve`");
  }
  JITD_RETURN_IF_ERROR(CheckDaemonPeer(fd.get(), socket_path, options));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(options.connect_timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((options.connect_timeout.count() % 1000) * 1000);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  StatusOr<ipc::FdMessage> hello = ipc::ReceiveWithFd(fd.get(), 4096);
  if (!hello.ok()) {
    return Unavailable("jitd daemon at " + socket_path + " sent no handshake: " +
                       hello.status().message());
  }
  const std::vector<uint8_t>& payload = hello->payload;
  if (payload.size() >= 4 && std::memcmp(payload.data(), "JITE", 4) == 0) {
    // "JITE" + Status::ToString(): the code's name leads the text.
    const std::string text(payload.begin() + 4, payload.end());
    StatusCode code = StatusCode::kUnavailable;
    for (StatusCode c : {StatusCode::kPermissionDenied, StatusCode::kResourceExhausted}) {
      const std::string prefix = std::string(StatusCodeName(c)) + ": ";
      if (text.compare(0, prefix.size(), prefix) == 0) code = c;
    }
    return Status(code, "jitd daemon at " + socket_path + " refused the session: " + text);
  }
  if (payload.size() != 16 || std::memcmp(payload.data(), "JITD", 4) != 0 ||
      !hello->fd.valid()) {
    return Unavailable("the peer at " + socket_path + " is not a jitd daemon (bad handshake)");
  }
  uint64_t session_id = 0;
  std::memcpy(&session_id, payload.data() + 8, 8);
  uint32_t daemon_protocol = 0;
  std::memcpy(&daemon_protocol, payload.data() + 4, 4);
  if (daemon_protocol < 5) {
    // Before 5 the daemon slept on the ring's futex, which this client no
    // longer rings: its requests would never be seen.
    return Status(StatusCode::kFailedPrecondition,
                  "the jitd daemon at " + socket_path + " speaks protocol " +
                      std::to_string(daemon_protocol) + "; this client needs 5 or later "
                      "(stop that daemon and start one from this jitd build)");
  }
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ipc::Segment> segment,
                        ipc::Segment::Attach(std::move(hello->fd)));
  std::unique_ptr<Client> client(new Client(socket_path, std::move(options), std::move(fd),
                                            std::move(segment), session_id));
  // A push that finds the daemon's side of the ring asleep wakes it with a
  // byte on the connection (protocol 5; daemon/dispatcher.h). A full socket
  // buffer means wake-ups are pending already, so the byte may be dropped.
  client->segment_->request_ring().set_wake_hook(
      [](void* context) {
        const int socket = static_cast<Client*>(context)->socket_.get();
        const char bell = 0;
        (void)!::send(socket, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
      },
      client.get());
  JITD_RETURN_IF_ERROR(client->SayHello());
  return client;
}

Status Client::SayHello() {
  flatbuffers::FlatBufferBuilder fbb(256);
  auto name = fbb.CreateString(options_.client_name);
  auto body = wire::CreateHello(fbb, ipc::kProtocolVersion, name);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_Hello, body.Union()));
  JITD_ASSIGN_OR_RETURN(Reply reply, CallLocked(request, id));
  const wire::HelloReply* hello_reply = reply.message->body_as_HelloReply();
  if (hello_reply == nullptr) return Internal("Hello: the daemon's reply has no HelloReply");
  daemon_protocol_version_ = hello_reply->protocol_version();
  if (hello_reply->daemon_version()) daemon_version_ = hello_reply->daemon_version()->str();
  if (hello_reply->devices()) {
    for (const flatbuffers::String* device : *hello_reply->devices()) {
      if (device != nullptr) daemon_devices_.push_back(device->str());
    }
  }
  if (hello_reply->default_device()) daemon_default_device_ = hello_reply->default_device()->str();
  return Status::Ok();
}

Status Client::Gone(const std::string& what) const {
  return Unavailable("the jitd daemon at " + socket_path_ + " has gone away (" + what +
                     "); reconnect when it is back");
}

bool Client::DaemonGone() const {
  pollfd p{socket_.get(), POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR)) return true;
  char c;
  const ssize_t n = ::recv(socket_.get(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR);
}

StatusOr<Client::Reply> Client::CallLocked(std::span<const uint8_t> request, uint64_t id,
                                           std::chrono::milliseconds extra_wait) {
  if (remote_ != nullptr) [[unlikely]] return CallRemoteLocked(request, id, extra_wait);
  // The hot path is one push and one pop: whether the daemon is still there
  // is asked (a poll() on the socket) only while waiting goes slowly.
  const Clock::time_point deadline = Clock::now() + options_.timeout + extra_wait;
  ipc::RingHeapRef block{0, 0};
  for (;;) {
    Status pushed = segment_->TryPushMessage(segment_->request_ring(), request, &block);
    if (pushed.ok()) break;
    if (pushed.code() != StatusCode::kResourceExhausted) return pushed;
    if (DaemonGone()) return Gone("connection closed");
    if (Clock::now() >= deadline) return DeadlineExceeded("request ring full: " + pushed.message());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  auto free_block = [&] {
    if (block.length != 0) (void)segment_->Deallocate(block);
  };
  constexpr std::chrono::nanoseconds kMinSpin = std::chrono::microseconds(5);
  if (spin_.count() == 0) spin_ = options_.reply_spin;
  ipc::WaitOptions wait;
  wait.spin = std::min(spin_, options_.reply_spin);
  // Past the first µs (a hot reply comes within ~1-2 µs) spin politely.
  wait.yield_after = std::chrono::microseconds(3);
  const Clock::time_point wait_start = Clock::now();
  for (;;) {
    wait.deadline = std::min(deadline, Clock::now() + std::chrono::milliseconds(50));
    Status popped = segment_->reply_ring().Pop(&reply_, wait);
    if (popped.code() == StatusCode::kDeadlineExceeded) {
      if (DaemonGone()) {
        free_block();
        return Gone("connection closed while waiting for a reply");
      }
      if (Clock::now() >= deadline) {
        // The block stays allocated: the daemon may still read it.
        return DeadlineExceeded("no reply from the jitd daemon within " +
                                std::to_string((options_.timeout + extra_wait).count()) +
                                " ms");
      }
      wait.spin = std::chrono::nanoseconds(0);  // slow: sleep at once from now on
      continue;
    }
    if (!popped.ok()) {
      free_block();
      return Internal("corrupt reply ring: " + popped.message());
    }
    if (reply_.kind != ipc::RingMessageKind::kInline) {
      free_block();
      return Internal("the daemon sent a reply through the heap, which the protocol forbids");
    }
    // The daemon's worker runs on this thread's CPU and asked it to move:
    // the two call each other back to back, and sharing one CPU every call
    // would cost two switches (daemon/dispatcher.h, "Turns").
    if (const int cpu = segment_->reply_ring().TakeMoveOffRequest(); cpu >= 0) [[unlikely]] {
      if (cpu == ::sched_getcpu()) (void)MoveOffThisCpu();
    }
    // Adapt the spin to how long replies take: a reply within the longest
    // spin sets it to 1.5x that wait (so the next one like it is caught
    // spinning); a slower one (long executes, a loaded machine: spinning
    // would buy nothing) halves it.
    const auto waited = Clock::now() - wait_start;
    const std::chrono::nanoseconds floor_spin = std::min(kMinSpin, options_.reply_spin);
    if (waited <= options_.reply_spin) {
      spin_ = std::clamp<std::chrono::nanoseconds>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(waited) * 3 / 2, floor_spin,
          options_.reply_spin);
    } else {
      spin_ = std::max<std::chrono::nanoseconds>(spin_ / 2, floor_spin);
    }
    // Verified in place: reply_.bytes is this client's private copy.
    StatusOr<const wire::ReplyMessage*> verified = ipc::VerifyReply(reply_.bytes);
    if (!verified.ok()) {
      free_block();
      return Internal("malformed reply: " + verified.status().message());
    }
    const uint64_t reply_id = (*verified)->id();
    if (reply_id != id && reply_id != 0) continue;  // a late reply to a timed-out call
    free_block();
    JITD_RETURN_IF_ERROR(ipc::FromWire((*verified)->status()));
    return Reply{*verified};
  }
}

// A heap-allocation failure of a buffer, naming the limit and what raises it.
static Status BufferHeapExhausted(const Status& status, uint64_t segment_bytes) {
  if (status.code() != StatusCode::kResourceExhausted) return status;
  return ResourceExhausted(status.message() + " in this client's shared memory segment of " +
                           std::to_string(segment_bytes) +
                           " bytes; the daemon's jitd serve --segment-bytes or "
                           "JITD_SEGMENT_BYTES raises it (0: the buffer quota, "
                           "--max-buffer-bytes, + 64 MiB)");
}

StatusOr<Buffer> Client::AllocateBuffer(const TensorShape& shape) {
  JITD_ASSIGN_OR_RETURN(uint64_t bytes, ByteSize(shape));
  std::lock_guard<std::mutex> lock(mu_);
  StatusOr<ipc::RingHeapRef> allocated = segment_->Allocate(std::max<uint64_t>(bytes, 1));
  if (!allocated.ok()) return BufferHeapExhausted(allocated.status(), segment_->size());
  ipc::RingHeapRef block = *allocated;
  block.length = bytes;
  flatbuffers::FlatBufferBuilder fbb(256);
  auto shape_offset = ToWire(fbb, shape);
  wire::HeapRef data(block.offset, block.length);
  auto body = wire::CreateCreateBufferRequest(fbb, shape_offset, &data);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_CreateBufferRequest,
                                                        body.Union()));
  StatusOr<Reply> reply = CallLocked(request, id);
  if (!reply.ok()) {
    (void)segment_->Deallocate(block);
    return reply.status();
  }
  const wire::CreateBufferReply* created = reply->message->body_as_CreateBufferReply();
  if (created == nullptr) {
    (void)segment_->Deallocate(block);
    return Internal("CreateBuffer: the daemon's reply has no CreateBufferReply");
  }
  StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(block);
  if (!span.ok()) return span.status();
  buffer_blocks_[created->buffer()] = block;
  return Buffer{created->buffer(), shape, *span};
}

StatusOr<uint64_t> Client::CreateDeviceBuffer(const std::string& device, const TensorShape& shape,
                                              const Buffer* initial) {
  if (device.empty()) return InvalidArgument("CreateDeviceBuffer: name a device (\"cuda\")");
  JITD_ASSIGN_OR_RETURN(uint64_t bytes, ByteSize(shape));
  std::lock_guard<std::mutex> lock(mu_);
  wire::HeapRef data(0, 0);
  if (initial != nullptr) {
    auto it = buffer_blocks_.find(initial->handle);
    if (it == buffer_blocks_.end() || it->second.length != bytes) {
      return InvalidArgument("CreateDeviceBuffer: the initial buffer is not a shared-memory buffer of " +
                             std::to_string(bytes) + " bytes of this client");
    }
    data = wire::HeapRef(it->second.offset, it->second.length);
  }
  flatbuffers::FlatBufferBuilder fbb(256);
  auto shape_offset = ToWire(fbb, shape);
  auto device_offset = fbb.CreateString(device);
  auto body = wire::CreateCreateBufferRequest(fbb, shape_offset, &data, device_offset);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_CreateBufferRequest,
                                                        body.Union()));
  JITD_ASSIGN_OR_RETURN(Reply reply, CallLocked(request, id));
  const wire::CreateBufferReply* created = reply.message->body_as_CreateBufferReply();
  if (created == nullptr) return Internal("CreateBuffer: the daemon's reply has no CreateBufferReply");
  return created->buffer();
}

Status Client::CopyBuffer(uint64_t device_buffer, const Buffer& host, bool to_device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffer_blocks_.find(host.handle);
  if (it == buffer_blocks_.end()) {
    return InvalidArgument("CopyBuffer: buffer " + std::to_string(host.handle) +
                           " is not a shared-memory buffer of this client");
  }
  flatbuffers::FlatBufferBuilder fbb(128);
  wire::HeapRef data(it->second.offset, it->second.length);
  auto body = wire::CreateCopyBufferRequest(fbb, device_buffer, &data, to_device);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_CopyBufferRequest,
                                                        body.Union()));
  return CallLocked(request, id).status();
}

Status Client::DestroyBuffer(uint64_t buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  flatbuffers::FlatBufferBuilder fbb(128);
  auto body = wire::CreateDestroyBufferRequest(fbb, buffer);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_DestroyBufferRequest,
                                                        body.Union()));
  StatusOr<Reply> reply = CallLocked(request, id);
  if (!reply.ok()) return reply.status();
  auto it = buffer_blocks_.find(buffer);
  if (it != buffer_blocks_.end()) {
    (void)segment_->Deallocate(it->second);
    buffer_blocks_.erase(it);
  }
  return Status::Ok();
}

StatusOr<Executable> Client::CompileLocked(std::span<const uint8_t> request, uint64_t id) {
  JITD_ASSIGN_OR_RETURN(Reply reply, CallLocked(request, id));
  const wire::CompileReply* compiled = reply.message->body_as_CompileReply();
  if (compiled == nullptr) return Internal("Compile: the daemon's reply has no CompileReply");
  Executable out;
  out.handle = compiled->executable();
  if (compiled->fingerprint() && compiled->fingerprint()->size() == 16) {
    std::copy(compiled->fingerprint()->begin(), compiled->fingerprint()->end(),
              out.fingerprint.begin());
  }
  out.cache_hit = compiled->cache_hit();
  out.compile_micros = compiled->compile_micros();
  if (compiled->arguments()) {
    for (const wire::TensorShape* s : *compiled->arguments()) out.arguments.push_back(FromWire(s));
  }
  if (compiled->results()) {
    for (const wire::TensorShape* s : *compiled->results()) out.results.push_back(FromWire(s));
  }
  if (compiled->explain()) out.explain = compiled->explain()->str();
  // 0 from daemons before protocol 7: one process.
  out.num_replicas = std::max<uint32_t>(compiled->num_replicas(), 1);
  out.num_partitions = std::max<uint32_t>(compiled->num_partitions(), 1);
  if (compiled->argument_structure()) out.argument_structure = compiled->argument_structure()->str();
  if (compiled->result_structure()) out.result_structure = compiled->result_structure()->str();
  if (compiled->dumps()) {
    for (const wire::DumpInfo* dump : *compiled->dumps()) {
      out.dumps.emplace_back(dump->name() ? dump->name()->str() : std::string(), dump->bytes());
    }
  }
  return out;
}

StatusOr<Executable> Client::Compile(std::string_view program_text,
                                     const CompileOptions& options) {
  JITD_ASSIGN_OR_RETURN(Executable executable, CompileText(program_text, options));
  if (options.dump_dir.empty()) return executable;
  Status written = WriteDumps(executable, options.dump_dir);
  if (!written.ok()) {
    (void)Release(executable.handle);
    return written;
  }
  return executable;
}

Status Client::WriteDumps(Executable& executable, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument("dump_dir '" + dir + "': cannot create it: " + ec.message());
  for (size_t i = 0; i < executable.dumps.size(); ++i) {
    const auto& [name, bytes] = executable.dumps[i];
    // The names come from the daemon: never let one leave the directory.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return Internal("the daemon sent a dump named '" + name + "'");
    }
    JITD_ASSIGN_OR_RETURN(std::string text,
                          ReadDump(executable.handle, static_cast<uint32_t>(i), bytes));
    const std::string path = dir + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) return InvalidArgument("dump_dir: cannot write '" + path + "'");
  }
  return Status::Ok();
}

StatusOr<std::string> Client::ReadDump(uint64_t executable, uint32_t index, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  JITD_ASSIGN_OR_RETURN(ipc::RingHeapRef block, segment_->Allocate(std::max<uint64_t>(bytes, 1)));
  block.length = bytes;
  flatbuffers::FlatBufferBuilder fbb(128);
  wire::HeapRef data(block.offset, block.length);
  auto body = wire::CreateReadDumpRequest(fbb, executable, index, &data);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_ReadDumpRequest,
                                                        body.Union()));
  StatusOr<Reply> reply = CallLocked(request, id);
  if (!reply.ok()) {
    // After a timeout the daemon may still write the block: leave it.
    if (reply.status().code() != StatusCode::kDeadlineExceeded) (void)segment_->Deallocate(block);
    return reply.status();
  }
  StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(block);
  std::string text;
  if (span.ok()) text.assign(reinterpret_cast<const char*>(span->data()), span->size());
  (void)segment_->Deallocate(block);
  if (!span.ok()) return span.status();
  return text;
}

StatusOr<Executable> Client::CompileText(std::string_view program_text,
                                         const CompileOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  // A daemon before protocol 7 would ignore the grid and compile one process.
  if ((options.num_replicas > 1 || options.num_partitions > 1 ||
       !options.device_assignment.empty()) &&
      daemon_protocol_version_ < 7) {
    return Unimplemented("Compile: num_replicas / num_partitions / device_assignment need a "
                         "daemon of protocol 7 or later; this one speaks " +
                         std::to_string(daemon_protocol_version_) + " (version " +
                         daemon_version_ + ")");
  }
  JITD_ASSIGN_OR_RETURN(ipc::RingHeapRef block,
                        segment_->Allocate(std::max<uint64_t>(program_text.size(), 1)));
  block.length = program_text.size();
  StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(block);
  if (!span.ok()) {
    (void)segment_->Deallocate(block);
    return span.status();
  }
  if (!program_text.empty()) std::memcpy(span->data(), program_text.data(), program_text.size());
  flatbuffers::FlatBufferBuilder fbb(512);
  std::vector<flatbuffers::Offset<wire::TensorShape>> shapes;
  for (const TensorShape& s : options.argument_shapes) shapes.push_back(ToWire(fbb, s));
  auto shape_vector = options.argument_shapes.empty() ? 0 : fbb.CreateVector(shapes);
  auto devices = options.device_assignment.empty()
                     ? 0
                     : fbb.CreateVector(options.device_assignment.data(),
                                        options.device_assignment.size());
  auto compile_options = wire::CreateCompileOptions(
      fbb, fbb.CreateString(options.device), 0, options.profile,
      options.dumps || !options.dump_dir.empty(), options.num_replicas, options.num_partitions,
      devices);
  wire::HeapRef program(block.offset, block.length);
  auto body = wire::CreateCompileRequest(fbb,
                                         options.flatbuffer_module
                                             ? wire::ProgramFormat_FLATBUFFER_MODULE
                                             : wire::ProgramFormat_STABLEHLO_TEXT,
                                         &program, 0,
                                         shape_vector, compile_options);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_CompileRequest,
                                                        body.Union()));
  StatusOr<Executable> result = CompileLocked(request, id);
  // The daemon copies the program out before it replies; on a timeout it may
  // still read it, so the block is then left allocated.
  if (result.ok() || result.status().code() != StatusCode::kDeadlineExceeded) {
    (void)segment_->Deallocate(block);
  }
  return result;
}

StatusOr<Executable> Client::CompileByFingerprint(const Fingerprint& fingerprint) {
  std::lock_guard<std::mutex> lock(mu_);
  flatbuffers::FlatBufferBuilder fbb(256);
  auto bytes = fbb.CreateVector(fingerprint.data(), fingerprint.size());
  auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, nullptr, bytes);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_CompileRequest,
                                                        body.Union()));
  return CompileLocked(request, id);
}

StatusOr<Timing> Client::Execute(uint64_t executable, std::span<const uint64_t> arguments,
                                 std::span<const uint64_t> results,
                                 std::chrono::microseconds deadline) {
  ExecuteOptions options;
  options.deadline = deadline;
  return Execute(executable, arguments, results, options);
}

StatusOr<Timing> Client::Execute(uint64_t executable, std::span<const uint64_t> arguments,
                                 std::span<const uint64_t> results,
                                 const ExecuteOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  return ExecuteLocked(executable, arguments, results, {}, options, nullptr);
}

StatusOr<Timing> Client::ExecuteAllocatingResults(uint64_t executable,
                                                  std::span<const uint64_t> arguments,
                                                  std::span<const TensorShape> result_shapes,
                                                  const ExecuteOptions& options,
                                                  std::vector<Buffer>* out_results) {
  std::vector<uint64_t> sizes;
  for (const TensorShape& shape : result_shapes) {
    JITD_ASSIGN_OR_RETURN(uint64_t bytes, ByteSize(shape));
    sizes.push_back(bytes);
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ipc::RingHeapRef> blocks;
  auto free_blocks = [&] {
    for (const ipc::RingHeapRef& b : blocks) (void)segment_->Deallocate(b);
  };
  for (uint64_t bytes : sizes) {
    StatusOr<ipc::RingHeapRef> block = segment_->Allocate(std::max<uint64_t>(bytes, 1));
    if (!block.ok()) {
      free_blocks();
      return BufferHeapExhausted(block.status(), segment_->size());
    }
    block->length = bytes;
    blocks.push_back(*block);
  }
  std::vector<uint64_t> handles;
  StatusOr<Timing> timing = ExecuteLocked(executable, arguments, {}, blocks, options, &handles);
  if (timing.ok() && handles.size() != blocks.size()) {
    timing = Internal("Execute: the daemon answered " + std::to_string(handles.size()) +
                      " result buffers for " + std::to_string(blocks.size()) + " results");
  }
  if (!timing.ok()) {
    if (timing.status().code() != StatusCode::kDeadlineExceeded) free_blocks();
    return timing.status();
  }
  out_results->clear();
  for (size_t i = 0; i < blocks.size(); ++i) {
    StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(blocks[i]);
    if (!span.ok()) return span.status();
    buffer_blocks_[handles[i]] = blocks[i];
    out_results->push_back(Buffer{handles[i], result_shapes[i], *span});
  }
  return timing;
}

StatusOr<Timing> Client::ExecuteLocked(uint64_t executable, std::span<const uint64_t> arguments,
                                       std::span<const uint64_t> results,
                                       std::span<const ipc::RingHeapRef> result_blocks,
                                       const ExecuteOptions& options,
                                       std::vector<uint64_t>* out_handles) {
  if (options.processes > 1 && daemon_protocol_version_ < 7) {
    return Unimplemented("Execute: running " + std::to_string(options.processes) +
                         " processes needs a daemon of protocol 7 or later; this one speaks " +
                         std::to_string(daemon_protocol_version_));
  }
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  fbb.Clear();
  auto args = fbb.CreateVector(arguments.data(), arguments.size());
  auto outs = fbb.CreateVector(results.data(), results.size());
  flatbuffers::Offset<flatbuffers::Vector<const wire::HeapRef*>> data = 0;
  if (!result_blocks.empty()) {
    std::vector<wire::HeapRef> refs;
    for (const ipc::RingHeapRef& b : result_blocks) refs.emplace_back(b.offset, b.length);
    data = fbb.CreateVectorOfStructs(refs);
  }
  wire::ExecuteRequestBuilder body(fbb);
  body.add_executable(executable);
  body.add_arguments(args);
  body.add_results(outs);
  body.add_deadline_micros(static_cast<uint64_t>(std::max<int64_t>(0, options.deadline.count())));
  if (options.resource_seed) body.add_resource_seed(*options.resource_seed);
  if (options.resource_fill != ExecuteOptions::ResourceFill::kUniform) {
    body.add_resource_fill(static_cast<uint8_t>(options.resource_fill));
  }
  if (!result_blocks.empty()) body.add_result_data(data);
  if (options.processes > 1) body.add_processes(options.processes);
  auto body_offset = body.Finish();
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_ExecuteRequest,
                                                        body_offset.Union()));
  JITD_ASSIGN_OR_RETURN(Reply reply, CallLocked(request, id));
  const wire::ExecuteReply* executed = reply.message->body_as_ExecuteReply();
  if (executed == nullptr) return Internal("Execute: the daemon's reply has no ExecuteReply");
  Timing timing;
  if (const wire::Timing* t = executed->timing()) {
    timing.queue_micros = t->queue_micros();
    timing.execute_micros = t->execute_micros();
    timing.total_micros = t->total_micros();
  }
  if (executed->profile()) {
    for (const wire::ProfileRow* row : *executed->profile()) {
      timing.profile.push_back(
          {row->name() ? row->name()->str() : std::string(), row->count(), row->nanos()});
    }
  }
  timing.profile_omitted = executed->profile_omitted();
  if (out_handles != nullptr) *out_handles = ipc::ReadVector(executed->results());
  return timing;
}

StatusOr<Timing> Client::ExecutePerReplica(uint64_t executable, uint32_t processes,
                                           std::span<const std::vector<uint64_t>> arguments,
                                           std::span<const std::vector<uint64_t>> results,
                                           ExecuteOptions options) {
  if (arguments.size() != processes || results.size() != processes) {
    return InvalidArgument("ExecutePerReplica: " + std::to_string(arguments.size()) +
                           " processes' arguments and " + std::to_string(results.size()) +
                           " processes' results given, the executable runs " +
                           std::to_string(processes) + " processes");
  }
  std::vector<uint64_t> flat_arguments, flat_results;
  for (const std::vector<uint64_t>& mine : arguments) {
    flat_arguments.insert(flat_arguments.end(), mine.begin(), mine.end());
  }
  for (const std::vector<uint64_t>& mine : results) {
    flat_results.insert(flat_results.end(), mine.begin(), mine.end());
  }
  options.processes = processes;
  std::lock_guard<std::mutex> lock(mu_);
  return ExecuteLocked(executable, flat_arguments, flat_results, {}, options, nullptr);
}

Status Client::Release(uint64_t executable) {
  std::lock_guard<std::mutex> lock(mu_);
  flatbuffers::FlatBufferBuilder fbb(128);
  auto body = wire::CreateReleaseRequest(fbb, executable);
  const uint64_t id = next_id_++;
  auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_ReleaseRequest,
                                                        body.Union()));
  return CallLocked(request, id).status();
}

StatusOr<std::string> Client::Stats(bool keys) {
  std::lock_guard<std::mutex> lock(mu_);
  // First without a range: the JSON usually fits the reply. When it does
  // not, the reply says how long it is; ask again with a range that long,
  // with room to grow (clients come and go between the two calls).
  uint64_t room = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    ipc::RingHeapRef block{0, 0};
    if (room > 0) {
      JITD_ASSIGN_OR_RETURN(block, segment_->Allocate(room));
    }
    flatbuffers::FlatBufferBuilder fbb(128);
    const wire::HeapRef data(block.offset, block.length);
    auto body = wire::CreateStatsRequest(fbb, keys, room > 0 ? &data : nullptr);
    const uint64_t id = next_id_++;
    auto request = Finish(fbb, wire::CreateRequestMessage(fbb, id, wire::Request_StatsRequest,
                                                          body.Union()));
    StatusOr<Reply> reply = CallLocked(request, id);
    // After a timeout the daemon may still write the block: leave it.
    auto release = [&] {
      if (room > 0 && (reply.ok() || reply.status().code() != StatusCode::kDeadlineExceeded)) {
        (void)segment_->Deallocate(block);
      }
    };
    if (!reply.ok()) {
      release();
      return reply.status();
    }
    const wire::StatsReply* stats = reply->message->body_as_StatsReply();
    if (stats == nullptr) {
      release();
      return Internal("Stats: the daemon's reply has no StatsReply");
    }
    std::string json;
    Status status = Status::Ok();
    if (stats->json() != nullptr) {
      json = stats->json()->str();
    } else if (stats->in_data()) {
      if (room == 0 || stats->json_bytes() > block.length) {
        status = Internal("Stats: the daemon says it wrote " +
                          std::to_string(stats->json_bytes()) + " bytes into a range of " +
                          std::to_string(block.length));
      } else if (StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(block); span.ok()) {
        json.assign(reinterpret_cast<const char*>(span->data()), stats->json_bytes());
      } else {
        status = span.status();
      }
    } else {
      const uint64_t need = stats->json_bytes();
      if (need == 0 || need <= room) {
        status = Internal("Stats: the daemon's reply has no JSON (" + std::to_string(need) +
                          " bytes, " + std::to_string(room) + " offered)");
      } else if (need > segment_->heap_size()) {
        status = ResourceExhausted("Stats: the daemon's JSON of " + std::to_string(need) +
                                   " bytes exceeds this client's heap of " +
                                   std::to_string(segment_->heap_size()) +
                                   " bytes (jitd serve --segment-bytes)");
      }
      room = std::min(need + need / 4 + 4096, segment_->heap_size());
      release();
      if (!status.ok()) return status;
      continue;
    }
    release();
    if (!status.ok()) return status;
    return json;
  }
  return ResourceExhausted("Stats: the daemon's JSON outgrew the range offered four times");
}

Status Client::SendRawForTesting(std::span<const uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  // A raw message gets reply id 0 (the daemon cannot read its id).
  return CallLocked(bytes, 0).status();
}

Status Client::FeedLocked(bool infeed, const std::string& device, const TensorShape& shape,
                          ipc::RingHeapRef block, std::chrono::milliseconds timeout,
                          uint32_t replica) {
  flatbuffers::FlatBufferBuilder fbb(256);
  auto device_offset = fbb.CreateString(device);
  auto shape_offset = ToWire(fbb, shape);
  wire::HeapRef data(block.offset, block.length);
  const uint64_t id = next_id_++;
  flatbuffers::Offset<wire::RequestMessage> message;
  if (infeed) {
    auto body = wire::CreateTransferToInfeedRequest(fbb, device_offset, replica, shape_offset,
                                                    &data);
    message = wire::CreateRequestMessage(fbb, id, wire::Request_TransferToInfeedRequest,
                                         body.Union());
  } else {
    const uint64_t micros = static_cast<uint64_t>(std::max<int64_t>(0, timeout.count())) * 1000;
    auto body = wire::CreateTransferFromOutfeedRequest(fbb, device_offset, replica, shape_offset, &data,
                                                       micros);
    message = wire::CreateRequestMessage(fbb, id, wire::Request_TransferFromOutfeedRequest,
                                         body.Union());
  }
  auto request = Finish(fbb, message);
  // An outfeed read waits in the daemon for up to `timeout`: wait for its
  // reply that much longer.
  return CallLocked(request, id, infeed ? std::chrono::milliseconds(0) : timeout).status();
}

Status Client::TransferToInfeed(const std::string& device, const TensorShape& shape,
                                std::span<const uint8_t> bytes, uint32_t replica) {
  JITD_ASSIGN_OR_RETURN(uint64_t size, ByteSize(shape));
  if (bytes.size() != size) {
    return InvalidArgument("TransferToInfeed: " + std::to_string(bytes.size()) + " bytes given, " +
                           shape.ToString() + " needs " + std::to_string(size));
  }
  std::lock_guard<std::mutex> lock(mu_);
  JITD_ASSIGN_OR_RETURN(ipc::RingHeapRef block, segment_->Allocate(std::max<uint64_t>(size, 1)));
  block.length = size;
  StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(block);
  if (!span.ok()) {
    (void)segment_->Deallocate(block);
    return span.status();
  }
  if (size != 0) std::memcpy(span->data(), bytes.data(), size);
  Status sent = FeedLocked(true, device, shape, block, std::chrono::milliseconds(0), replica);
  // On a timeout the daemon may still read the block: leave it allocated.
  if (sent.ok() || sent.code() != StatusCode::kDeadlineExceeded) {
    (void)segment_->Deallocate(block);
  }
  return sent;
}

Status Client::TransferBufferToInfeed(const std::string& device, const Buffer& buffer,
                                      uint32_t replica) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffer_blocks_.find(buffer.handle);
  if (it == buffer_blocks_.end()) {
    return NotFound("TransferToInfeed: no buffer " + std::to_string(buffer.handle) +
                    " in this client");
  }
  return FeedLocked(true, device, buffer.shape, it->second, std::chrono::milliseconds(0),
                    replica);
}

Status Client::TransferFromOutfeed(const std::string& device, const TensorShape& shape,
                                   std::span<uint8_t> out, std::chrono::milliseconds timeout,
                                   uint32_t replica) {
  JITD_ASSIGN_OR_RETURN(uint64_t size, ByteSize(shape));
  if (out.size() != size) {
    return InvalidArgument("TransferFromOutfeed: room for " + std::to_string(out.size()) +
                           " bytes given, " + shape.ToString() + " needs " +
                           std::to_string(size));
  }
  std::lock_guard<std::mutex> lock(mu_);
  JITD_ASSIGN_OR_RETURN(ipc::RingHeapRef block, segment_->Allocate(std::max<uint64_t>(size, 1)));
  block.length = size;
  Status received = FeedLocked(false, device, shape, block, timeout, replica);
  if (received.ok()) {
    StatusOr<std::span<uint8_t>> span = segment_->HeapBytes(block);
    if (!span.ok()) {
      received = span.status();
    } else if (size != 0) {
      std::memcpy(out.data(), span->data(), size);
    }
  }
  // On a client-side timeout the daemon may still write the block.
  if (received.ok() || received.code() != StatusCode::kDeadlineExceeded) {
    (void)segment_->Deallocate(block);
  }
  return received;
}

Status Client::TransferFromOutfeedToBuffer(const std::string& device, const Buffer& buffer,
                                           std::chrono::milliseconds timeout, uint32_t replica) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffer_blocks_.find(buffer.handle);
  if (it == buffer_blocks_.end()) {
    return NotFound("TransferFromOutfeed: no buffer " + std::to_string(buffer.handle) +
                    " in this client");
  }
  return FeedLocked(false, device, buffer.shape, it->second, timeout, replica);
}

}  // namespace jitd::client
