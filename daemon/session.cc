#include "daemon/session.h"

#include <algorithm>
#include <optional>
#include <cstdio>
#include <mutex>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "daemon/wire_types.h"
#include "devices/platforms.h"
#include "jit/ir/literal.h"

namespace jitd::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using ipc::RingHeapRef;

uint64_t Micros(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// Unread compile dumps the daemon keeps per client.
constexpr uint64_t kMaxDumpBytes = uint64_t{256} << 20;
// Profile rows per execute reply, and bytes per row name: 256 rows of
// names up to 120 bytes stay well inside a 64 KiB reply slot.
constexpr size_t kMaxProfileRows = 256;
constexpr size_t kMaxProfileNameBytes = 120;

// The largest program text a client may send (bounded by its heap anyway).
constexpr uint64_t kMaxProgramBytes = uint64_t{1} << 30;
// A request deadline longer than this (~31 years) is taken as this, so that
// now + deadline cannot overflow the clock.
constexpr uint64_t kMaxDeadlineMicros = uint64_t{1} << 50;

std::vector<uint8_t> FingerprintBytes(const cache::Fingerprint& f) {
  std::vector<uint8_t> out(16);
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<uint8_t>(f.high() >> (56 - 8 * i));
    out[8 + i] = static_cast<uint8_t>(f.low() >> (56 - 8 * i));
  }
  return out;
}

}  // namespace

ipc::SegmentLayout DaemonSegmentLayout() {
  ipc::SegmentLayout layout;
  layout.request_ring = {64, 4096 - 64};
  layout.reply_ring = {16, 65536 - 64};
  return layout;
}

Session::Session(Instance* instance, uint64_t id, SessionOptions options,
                 std::unique_ptr<ipc::Segment> segment)
    : instance_(instance),
      id_(id),
      options_(options),
      segment_(std::move(segment)),
      counters_(instance->RegisterClient(id)),
      feeds_(instance->feeds().Acquire(FeedOwner::Of(id, 0, -1))),
      device_memory_(std::make_shared<devices::MemoryAccount>("session " + std::to_string(id),
                                                              options.max_device_bytes)) {}

StatusOr<std::unique_ptr<Session>> Session::Create(Instance* instance, uint64_t id,
                                                   const SessionOptions& options) {
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ipc::Segment> segment,
                        ipc::Segment::Create(options.segment_bytes, DaemonSegmentLayout()));
  instance->CountSessionOpened();
  std::unique_ptr<Session> session(new Session(instance, id, options, std::move(segment)));
  // The heap (where the client's buffers live) registered with the GPU, so
  // that copies to and from it are direct (devices/platforms.h; past the
  // cap on pinned memory they stage). Nothing without a GPU.
  if (options.register_segment_with_gpu) {
    StatusOr<std::span<uint8_t>> heap =
        session->segment_->HeapBytes({0, session->segment_->heap_size()});
    if (heap.ok() && !heap->empty()) {
      StatusOr<std::unique_ptr<devices::HostMemoryRegistration>> registered =
          devices::RegisterHostMemory(heap->data(), heap->size());
      // Copies still work unpinned (through the staging pool), but slower:
      // the daemon's log says why, once.
      static std::once_flag said;
      if (!registered.ok()) {
        std::call_once(said, [&] {
          std::fprintf(stderr, "jitd: cuda: a client segment could not be registered with the GPU: %s\n",
                       registered.status().message().c_str());
        });
      } else if (*registered && !(*registered)->pinned()) {
        std::call_once(said, [&] {
          std::fprintf(stderr,
                       "jitd: cuda: client segments are not pinned whole (%s): each is pinned from its front as "
                       "far as its executes' buffers reach\n",
                       (*registered)->staging_reason().c_str());
        });
      }
      if (registered.ok()) session->host_registration_ = std::move(registered).value();
    }
  }
  return session;
}

void Session::PinHeapFront(uint64_t end) {
  if (!options_.register_segment_with_gpu || end == 0) return;
  if (host_registration_ && host_registration_->pinned() && host_registration_->bytes() >= end) return;
  if (end <= heap_front_tried_) return;  // refused that far already: staging
  const uint64_t heap = segment_->heap_size();
  uint64_t front = uint64_t{64} << 20;
  while (front < end && front < heap) front *= 2;
  front = std::min(front, heap);
  heap_front_tried_ = front;
  StatusOr<std::span<uint8_t>> bytes = segment_->HeapBytes({0, front});
  if (!bytes.ok() || bytes->empty()) return;
  host_registration_.reset();  // one registration of the heap at a time
  StatusOr<std::unique_ptr<devices::HostMemoryRegistration>> registered =
      devices::RegisterHostMemory(bytes->data(), bytes->size());
  static std::once_flag said;
  if (registered.ok() && *registered && !(*registered)->pinned()) {
    std::call_once(said, [&] {
      std::fprintf(stderr, "jitd: cuda: a client segment's front stays unpinned (%s): its copies stage\n",
                   (*registered)->staging_reason().c_str());
    });
  }
  if (registered.ok()) host_registration_ = std::move(registered).value();
}

Session::~Session() {
  Cancel();
  instance_->UnregisterClient(id_);
  instance_->CountSessionClosed();
}

void Session::SetRemotePeer(const std::string& identity, const std::string& address) {
  counters_->SetRemote(identity, address);
}

void Session::SetRemoteProcess(uint64_t process) {
  if (process == 0) return;
  // One turn at the execute gate for the process's connections: a key no
  // local pid (< 2^63) or lone session (id | 2^63, ids far below 2^62) has.
  fair_key_ = process | (uint64_t{3} << 62);
  feeds_ = instance_->feeds().Acquire(FeedOwner{peer_uid_, 0, 0, process});
}

void Session::SetPeer(int64_t pid, int64_t uid) {
  // All connections of one process share one turn at the execute gate.
  if (pid > 0) fair_key_ = static_cast<uint64_t>(pid);
  peer_uid_ = uid;
  // Feeds belong to the client's process: its sessions share them, nobody
  // else sees them.
  feeds_ = instance_->feeds().Acquire(FeedOwner::Of(id_, pid, uid));
  counters_->pid.store(pid, std::memory_order_relaxed);
  counters_->uid.store(uid, std::memory_order_relaxed);
}

void Session::PublishPrograms() {
  constexpr size_t kMaxListed = 32;  // then "and N more"
  std::vector<std::string> names;
  std::vector<int> held;
  size_t more = 0;
  for (const auto& [handle, program] : executables_) {
    if (names.size() == kMaxListed) {
      ++more;
      continue;
    }
    const std::string_view identity = cache::ProgramIdentity(program->key_parts);
    std::string name;
    if (!program->module_name.empty()) name = "module @" + program->module_name + " ";
    name += identity.empty() ? program->fingerprint.ToHex().substr(0, 12)
                             : std::string(identity.substr(0, identity.find('(')));
    name += " (" + program->device;
    if (const eval::ProcessGrid& grid = program->grid; grid.num_processes() > 1) {  // issue 17
      name += ", " + std::to_string(grid.num_replicas) +
              (grid.num_replicas == 1 ? " replica x " : " replicas x ") +
              std::to_string(grid.num_partitions) +
              (grid.num_partitions == 1 ? " partition" : " partitions");
    }
    name += ")";
    auto it = std::find(names.begin(), names.end(), name);
    if (it != names.end()) {
      ++held[static_cast<size_t>(it - names.begin())];
    } else {
      names.push_back(std::move(name));
      held.push_back(1);
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (held[i] > 1) names[i] += " x" + std::to_string(held[i]);
  }
  if (more > 0) names.push_back("and " + std::to_string(more) + " more");
  counters_->SetPrograms(std::move(names));
}

Status Session::RoomForBuffers(std::string_view what, uint64_t count, uint64_t bytes) const {
  if (options_.max_buffers != 0 && buffers_.size() + count > options_.max_buffers) {
    return ResourceExhausted(std::string(what) + ": " + std::to_string(count) +
                             " more buffer(s) would make this client hold " +
                             std::to_string(buffers_.size() + count) +
                             ", the limit (max_buffers) is " +
                             std::to_string(options_.max_buffers) +
                             "; jitd serve --max-buffers or JITD_MAX_BUFFERS raises it");
  }
  // `bytes` fits the heap or the device (checked by the callers), so the
  // sum cannot wrap.
  if (options_.max_buffer_bytes != 0 && buffer_bytes_ + bytes > options_.max_buffer_bytes) {
    return ResourceExhausted(std::string(what) + ": " + std::to_string(bytes) +
                             " more bytes would make this client's buffers " +
                             std::to_string(buffer_bytes_ + bytes) +
                             " bytes, the limit (max_buffer_bytes) is " +
                             std::to_string(options_.max_buffer_bytes) +
                             "; jitd serve --max-buffer-bytes or JITD_MAX_BUFFER_BYTES raises it");
  }
  return Status::Ok();
}

void Session::PublishCounts() {
  counters_->executables.store(executables_.size(), std::memory_order_relaxed);
  counters_->buffers.store(buffers_.size(), std::memory_order_relaxed);
  counters_->buffer_bytes.store(buffer_bytes_, std::memory_order_relaxed);
}

bool Session::ServeOne() {
  StatusOr<bool> popped = segment_->request_ring().TryPop(&message_);
  if (!popped.ok()) {
    instance_->CountBadRequest();
    PushReply(Reply(0, popped.status()));
    return true;
  }
  if (!*popped) return false;
  if (message_.kind == ipc::RingMessageKind::kHeapRef) {
    StatusOr<std::vector<uint8_t>> bytes = segment_->CopyFromHeap(message_.heap);
    if (!bytes.ok()) {
      instance_->CountBadRequest();
      PushReply(Reply(0, InvalidArgument("request in the heap: " + bytes.status().message())));
      return true;
    }
    PushReply(HandleInto(*bytes));
  } else {
    PushReply(HandleInto(message_.bytes));
  }
  return true;
}

void Session::PushReply(std::span<const uint8_t> bytes) {
  ipc::Ring& ring = segment_->reply_ring();
  if (bytes.size() > ring.slot_capacity()) {
    const size_t size = bytes.size();
    bytes = Reply(0, ResourceExhausted("reply of " + std::to_string(size) +
                                       " bytes exceeds the reply ring's slot of " +
                                       std::to_string(ring.slot_capacity())));
  }
  ipc::WaitOptions wait;
  wait.deadline = Clock::now() + options_.reply_push_timeout;
  Status pushed = ring.Push(bytes, wait);
  if (!pushed.ok()) {
    std::fprintf(stderr, "jitd: session %llu: reply dropped: %s\n",
                 static_cast<unsigned long long>(id_), pushed.ToString().c_str());
  }
}

std::span<const uint8_t> Session::Reply(uint64_t id, const Status& status, wire::ReplyBody type,
                                        flatbuffers::Offset<void> body) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  if (type == wire::ReplyBody_NONE) fbb.Clear();  // nothing built yet worth keeping
  flatbuffers::Offset<wire::Status> status_offset;
  if (!status.ok()) {
    if (type != wire::ReplyBody_NONE) fbb.Clear();  // an error drops a half-built body
    BumpSingleWriter(counters_->errors, 1);
    status_offset = wire::CreateStatus(fbb, ipc::ToWire(status.code()),
                                       fbb.CreateString(status.message()));
  }
  wire::ReplyMessageBuilder reply(fbb);
  reply.add_id(id);
  if (!status.ok()) reply.add_status(status_offset);
  if (status.ok() && type != wire::ReplyBody_NONE) {
    reply.add_body_type(type);
    reply.add_body(body);
  }
  fbb.Finish(reply.Finish(), wire::RequestMessageIdentifier());
  return {fbb.GetBufferPointer(), fbb.GetSize()};
}

std::vector<uint8_t> Session::Handle(std::span<const uint8_t> message) {
  std::span<const uint8_t> reply = HandleInto(message);
  return std::vector<uint8_t>(reply.begin(), reply.end());
}

std::span<const uint8_t> Session::HandleInto(std::span<const uint8_t> message) {
  const Clock::time_point start = Clock::now();
  fbb_.Clear();
  // FlatBuffers reads 8-byte scalars in place: the message must start on an
  // 8-byte boundary (a ring copy does; any other caller gets one made here).
  if (reinterpret_cast<uintptr_t>(message.data()) % alignof(uint64_t) != 0) {
    aligned_.assign(message.begin(), message.end());
    message = aligned_;
  }
  StatusOr<const wire::RequestMessage*> verified = ipc::VerifyRequest(message);
  if (!verified.ok()) {
    instance_->CountBadRequest();
    return Reply(0, verified.status());
  }
  instance_->CountRequest();
  BumpSingleWriter(counters_->requests, 1);
  const wire::RequestMessage* request = *verified;
  const uint64_t id = request->id();
  // The Verifier accepts a union whose type is set and whose value is absent;
  // every case below dereferences its body, so refuse that here.
  if (request->request_type() != wire::Request_NONE && request->request() == nullptr) {
    return Reply(id, InvalidArgument("request of type " +
                                     std::to_string(static_cast<int>(request->request_type())) +
                                     " has no body"));
  }
  flatbuffers::FlatBufferBuilder& fbb = fbb_;

  switch (request->request_type()) {
    case wire::Request_Hello: {
      const wire::Hello* hello = request->request_as_Hello();
      if (hello->protocol_version() == 0) {
        return Reply(id, InvalidArgument("Hello: protocol_version 0 is not a version"));
      }
      if (hello->client_name()) counters_->SetName(hello->client_name()->str().substr(0, 128));
      auto version = fbb.CreateString(kDaemonVersion);
      // The devices this daemon can run (cuda only with a GPU), so that
      // clients list those (not the names they know of) and pick among them.
      auto devices = fbb.CreateVectorOfStrings(devices::AvailableDeviceNames());
      auto default_device = fbb.CreateString(instance_->DefaultDevice());
      auto body = wire::CreateHelloReply(fbb, ipc::kProtocolVersion, version, segment_->size(),
                                         devices, default_device);
      return Reply(id, Status::Ok(), wire::ReplyBody_HelloReply, body.Union());
    }

    case wire::Request_CompileRequest:
      return HandleCompile(id, request->request_as_CompileRequest());

    case wire::Request_CreateBufferRequest: {
      const wire::CreateBufferRequest* create = request->request_as_CreateBufferRequest();
      StatusOr<ir::Type> type = FromWireShape(create->shape());
      if (!type.ok()) {
        return Reply(id, InvalidArgument("CreateBuffer: " + type.status().message()));
      }
      if (create->device() != nullptr && create->device()->size() > 0) {
        return HandleCreateDeviceBuffer(id, create, std::move(type).value());  // session_device.cc
      }
      if (create->data() == nullptr) {
        return Reply(id, InvalidArgument("CreateBuffer: data (a heap range) is missing"));
      }
      const RingHeapRef ref{create->data()->offset(), create->data()->length()};
      if (ref.length != static_cast<uint64_t>(type->byte_size())) {
        return Reply(id, InvalidArgument("CreateBuffer: data holds " + std::to_string(ref.length) +
                                         " bytes, a " + type->ToString() + " needs " +
                                         std::to_string(type->byte_size())));
      }
      StatusOr<std::span<uint8_t>> bytes = segment_->HeapBytes(ref);
      if (!bytes.ok()) {
        return Reply(id, InvalidArgument("CreateBuffer: " + bytes.status().message()));
      }
      if (Status room = RoomForBuffers("CreateBuffer", 1, ref.length); !room.ok()) {
        return Reply(id, room);
      }
      buffer_bytes_ += ref.length;
      const uint64_t handle = next_handle_++;
      buffers_.emplace(handle, Buffer{std::move(type).value(), ref, nullptr});
      PublishCounts();
      auto body = wire::CreateCreateBufferReply(fbb, handle);
      return Reply(id, Status::Ok(), wire::ReplyBody_CreateBufferReply, body.Union());
    }

    case wire::Request_DestroyBufferRequest: {
      const uint64_t handle = request->request_as_DestroyBufferRequest()->buffer();
      auto it = buffers_.find(handle);
      if (it == buffers_.end()) {
        return Reply(id, NotFound("DestroyBuffer: no buffer " + std::to_string(handle) +
                                  " in this session"));
      }
      buffer_bytes_ -= it->second.ref.length;
      const bool on_device = it->second.device != nullptr;
      buffers_.erase(it);
      if (on_device) {  // its device memory went back to this client's account
        counters_->device_bytes.store(device_memory_->bytes_in_use(), std::memory_order_relaxed);
      }
      PublishCounts();
      return Reply(id, Status::Ok());
    }

    case wire::Request_ReleaseRequest: {
      const uint64_t handle = request->request_as_ReleaseRequest()->executable();
      DropDumps(handle);
      if (executables_.erase(handle) == 0) {
        return Reply(id, NotFound("Release: no executable " + std::to_string(handle) +
                                  " in this session"));
      }
      PublishCounts();
      PublishPrograms();
      return Reply(id, Status::Ok());
    }

    case wire::Request_StatsRequest: {
      const bool keys = request->request_as_StatsRequest()->keys();
      // A client sees its own uid's sessions and its own programs; the
      // daemon's uid and root see everything (Instance::StatsJson).
      StatsViewer viewer;
      viewer.uid = peer_uid_;
      if (keys && !instance_->TrustedUid(peer_uid_)) {
        for (const auto& [handle, program] : executables_) {
          viewer.own_keys.push_back(program->fingerprint);
        }
        std::sort(viewer.own_keys.begin(), viewer.own_keys.end());
        viewer.own_keys.erase(std::unique(viewer.own_keys.begin(), viewer.own_keys.end()),
                              viewer.own_keys.end());
      }
      const std::string json = instance_->StatsJson(keys, viewer);
      // Inline when the reply fits a ring slot (the JSON and a little
      // around it); else in the client's range when it fits there.
      constexpr size_t kReplyOverhead = 256;
      if (json.size() + kReplyOverhead <= segment_->reply_ring().slot_capacity()) {
        auto body = wire::CreateStatsReply(fbb, fbb.CreateString(json));
        return Reply(id, Status::Ok(), wire::ReplyBody_StatsReply, body.Union());
      }
      const wire::HeapRef* data = request->request_as_StatsRequest()->data();
      bool in_data = false;
      if (data != nullptr && data->length() >= json.size()) {
        StatusOr<std::span<uint8_t>> out =
            segment_->HeapBytes(RingHeapRef{data->offset(), data->length()});
        if (!out.ok()) return Reply(id, InvalidArgument("Stats: data: " + out.status().message()));
        std::memcpy(out->data(), json.data(), json.size());
        in_data = true;
      }
      auto body = wire::CreateStatsReply(fbb, /*json=*/0, json.size(), in_data);
      return Reply(id, Status::Ok(), wire::ReplyBody_StatsReply, body.Union());
    }

    case wire::Request_ExecuteRequest:
      return HandleExecute(id, request->request_as_ExecuteRequest(), start);

    case wire::Request_TransferToInfeedRequest:
    case wire::Request_TransferFromOutfeedRequest:
      return HandleFeed(id, *request);

    case wire::Request_ReadDumpRequest:
      return HandleReadDump(id, request->request_as_ReadDumpRequest());

    case wire::Request_CopyBufferRequest:
      return HandleCopyBuffer(id, request->request_as_CopyBufferRequest());  // session_device.cc

    default:
      return Reply(id, InvalidArgument("unknown request type " +
                                       std::to_string(static_cast<int>(request->request_type()))));
  }
}

std::span<const uint8_t> Session::HandleCompile(uint64_t id, const wire::CompileRequest* compile) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  BumpSingleWriter(counters_->compiles, 1);
  // Checked before compiling, so a client at its quota costs no compile.
  if (options_.max_executables != 0 && executables_.size() >= options_.max_executables) {
    return Reply(id, ResourceExhausted("Compile: this client holds " +
                                       std::to_string(executables_.size()) +
                                       " executables, the limit (max_executables) is " +
                                       std::to_string(options_.max_executables) +
                                       "; release some first, or raise it with jitd serve "
                                       "--max-executables or JITD_MAX_EXECUTABLES"));
  }
  // A compile that may really compile: under the time limit, on the
  // compile threads, one abandoned compile per client at most.
  auto run_limited =
      [&](std::function<StatusOr<CompileOutcome>()> work) -> StatusOr<CompileOutcome> {
    if (abandoned_compile_ != nullptr) {
      if (!abandoned_compile_->done()) {
        return ResourceExhausted(
            "Compile: this client's previous compile ran past its compile time limit "
            "(max_compile_time) and is still running in the daemon; retry when it has "
            "finished");
      }
      abandoned_compile_.reset();
    }
    return instance_->RunCompileWithLimit(std::move(work), options_.max_compile_time,
                                          &abandoned_compile_);
  };
  if (compile->format() != wire::ProgramFormat_STABLEHLO_TEXT &&
      compile->format() != wire::ProgramFormat_FLATBUFFER_MODULE) {
    return Reply(id, InvalidArgument("Compile: unknown program format " +
                                     std::to_string(compile->format())));
  }
  CompileSpec spec;
  spec.flatbuffer_module = compile->format() == wire::ProgramFormat_FLATBUFFER_MODULE;
  // The cache is scoped by the client's uid (instance.h: share_cache_across_uids).
  spec.uid = peer_uid_;
  if (const wire::CompileOptions* options = compile->options()) {
    if (options->device()) spec.device = options->device()->str();
    spec.profile = options->profile();
    spec.dumps = options->dumps();
    spec.grid.num_replicas = options->num_replicas();
    spec.grid.num_partitions = options->num_partitions();
    if (const auto* devices = options->device_assignment()) {
      spec.grid.device_assignment.assign(devices->begin(), devices->end());
    }
    if (options->dump_dir() && options->dump_dir()->size() != 0) {
      return Reply(id, InvalidArgument(
                           "Compile: options.dump_dir is set, but the daemon writes no files for "
                           "clients; ask for dumps (options.dumps) and write them yourself "
                           "(the client library does: CompileOptions.dump_dir)"));
    }
  }
  if (spec.dumps && compile->program() == nullptr) {
    return Reply(id, InvalidArgument("Compile: dumps need the program text (a compile by "
                                     "fingerprint does not compile)"));
  }
  std::vector<ir::Type> declared;
  if (compile->argument_shapes()) {
    for (const wire::TensorShape* shape : *compile->argument_shapes()) {
      StatusOr<ir::Type> type = FromWireShape(shape);
      if (!type.ok()) {
        return Reply(id, InvalidArgument("Compile: argument shape " +
                                         std::to_string(declared.size()) + ": " +
                                         type.status().message()));
      }
      spec.argument_shapes += (declared.empty() ? "" : ",") + type->ToString();
      declared.push_back(std::move(type).value());
    }
  }
  StatusOr<CompileOutcome> outcome = Internal("Compile: no outcome");
  if (const wire::HeapRef* program = compile->program()) {
    if (program->length() > kMaxProgramBytes) {
      return Reply(id, InvalidArgument("Compile: program of " + std::to_string(program->length()) +
                                       " bytes is too large"));
    }
    StatusOr<std::vector<uint8_t>> text =
        segment_->CopyFromHeap(RingHeapRef{program->offset(), program->length()});
    if (!text.ok()) {
      return Reply(id, InvalidArgument("Compile: program: " + text.status().message()));
    }
    auto shared_text = std::make_shared<std::vector<uint8_t>>(std::move(text).value());
    // A memory hit answers here; only a possible compile goes to the
    // compile threads under the time limit.
    std::optional<CompileOutcome> hit;
    if (!spec.dumps) {
      hit = instance_->CompileFromMemory(
          std::string_view(reinterpret_cast<const char*>(shared_text->data()), shared_text->size()),
          spec);
    }
    if (hit) {
      outcome = std::move(*hit);
    } else {
      outcome = run_limited([instance = instance_, shared_text, spec] {
        return instance->Compile(std::string_view(reinterpret_cast<const char*>(shared_text->data()),
                                                  shared_text->size()),
                                 spec);
      });
    }
  } else {
    if (compile->fingerprint() == nullptr || compile->fingerprint()->size() != 16) {
      return Reply(id, InvalidArgument("Compile: needs a program or a 16-byte fingerprint"));
    }
    uint64_t high = 0, low = 0;
    for (int i = 0; i < 8; ++i) {
      high = (high << 8) | compile->fingerprint()->Get(i);
      low = (low << 8) | compile->fingerprint()->Get(8 + i);
    }
    const cache::Fingerprint fingerprint(high, low);
    // Only programs this client's uid sent the text of (Instance::
    // CompileByFingerprint): a fingerprint is no key to another's program.
    const int64_t uid = peer_uid_;
    if (std::optional<CompileOutcome> hit =
            instance_->CompileByFingerprintFromMemory(fingerprint, uid)) {
      outcome = std::move(*hit);
    } else {
      outcome = run_limited([instance = instance_, fingerprint, uid] {
        return instance->CompileByFingerprint(fingerprint, uid);
      });
    }
  }
  if (!outcome.ok()) return Reply(id, outcome.status());
  const CompiledProgram& program = *outcome->program;
  if (!declared.empty() && declared != program.argument_types) {
    return Reply(id, InvalidArgument("Compile: the declared argument shapes (" +
                                     spec.argument_shapes + ") differ from the program's"));
  }
  std::vector<flatbuffers::Offset<wire::TensorShape>> arguments, results;
  // Tuples and tokens travel as their tensor leaves plus a structure
  // (value_tree.h): the executable's signature is the leaves already
  // (Instance::Build flattens it), the structures come with the program.
  for (const ir::Type& type : program.argument_types) {
    StatusOr<flatbuffers::Offset<wire::TensorShape>> shape = ToWireShape(fbb, type);
    if (!shape.ok()) {
      return Reply(id, Unimplemented("Compile: argument " + std::to_string(arguments.size()) +
                                     ": " + shape.status().message()));
    }
    arguments.push_back(*shape);
  }
  for (const ir::Type& type : program.result_types) {
    StatusOr<flatbuffers::Offset<wire::TensorShape>> shape = ToWireShape(fbb, type);
    if (!shape.ok()) {
      return Reply(id, Unimplemented("Compile: result " + std::to_string(results.size()) + ": " +
                                     shape.status().message()));
    }
    results.push_back(*shape);
  }
  uint64_t new_dump_bytes = 0;
  for (const devices::CompileDump& dump : outcome->dumps) new_dump_bytes += dump.text.size();
  if (dump_bytes_ + new_dump_bytes > kMaxDumpBytes) {
    return Reply(id, ResourceExhausted(
                         "Compile: this compile's dumps (" + std::to_string(new_dump_bytes) +
                         " bytes) and this client's unread ones (" + std::to_string(dump_bytes_) +
                         ") exceed the daemon's " + std::to_string(kMaxDumpBytes) +
                         " bytes per client; read or release the earlier ones first"));
  }
  const uint64_t handle = next_handle_++;
  executables_[handle] = outcome->program;
  PublishCounts();
  PublishPrograms();
  std::vector<flatbuffers::Offset<wire::DumpInfo>> dump_infos;
  for (const devices::CompileDump& dump : outcome->dumps) {
    dump_infos.push_back(wire::CreateDumpInfo(fbb, fbb.CreateString(dump.name), dump.text.size()));
  }
  if (!outcome->dumps.empty()) {
    dump_bytes_ += new_dump_bytes;
    std::vector<UnreadDump>& unread = dumps_[handle];
    for (devices::CompileDump& dump : outcome->dumps) unread.push_back({std::move(dump), false});
  }
  auto fingerprint = fbb.CreateVector(FingerprintBytes(program.fingerprint));
  auto argument_vector = fbb.CreateVector(arguments);
  auto result_vector = fbb.CreateVector(results);
  auto explain = fbb.CreateString(outcome->explain);
  auto dump_vector = spec.dumps ? fbb.CreateVector(dump_infos)
                                : flatbuffers::Offset<flatbuffers::Vector<
                                      flatbuffers::Offset<wire::DumpInfo>>>();
  // Feeds of this program's device may name each of its processes.
  feeds_->AllowReplicas(program.device, static_cast<uint32_t>(program.grid.num_processes()));
  auto argument_structure = program.argument_structure.empty()
                                ? flatbuffers::Offset<flatbuffers::String>()
                                : fbb.CreateString(program.argument_structure);
  auto result_structure = program.result_structure.empty()
                              ? flatbuffers::Offset<flatbuffers::String>()
                              : fbb.CreateString(program.result_structure);
  auto body = wire::CreateCompileReply(
      fbb, handle, fingerprint, outcome->cache_hit, outcome->compile_micros, argument_vector,
      result_vector, explain, dump_vector, static_cast<uint32_t>(program.grid.num_replicas),
      static_cast<uint32_t>(program.grid.num_partitions), argument_structure, result_structure);
  return Reply(id, Status::Ok(), wire::ReplyBody_CompileReply, body.Union());
}

std::chrono::microseconds Session::ExecuteBudget(uint64_t deadline_micros, bool* quota_bound) const {
  std::chrono::microseconds budget =
      deadline_micros != 0
          ? std::chrono::microseconds(std::min<uint64_t>(deadline_micros, kMaxDeadlineMicros))
          : std::chrono::duration_cast<std::chrono::microseconds>(options_.default_execute_deadline);
  const auto quota = std::chrono::duration_cast<std::chrono::microseconds>(options_.max_execute_time);
  const bool bound = options_.max_execute_time.count() > 0 && quota <= budget;
  if (bound) budget = quota;
  if (quota_bound != nullptr) *quota_bound = bound;
  return budget;
}

StatusOr<devices::ExecuteOptions> Session::RunOptionsOf(const wire::ExecuteRequest& execute) {
  devices::ExecuteOptions options;
  if (execute.resource_seed().has_value()) options.resource_fill_seed = *execute.resource_seed();
  switch (execute.resource_fill()) {
    case 0: options.resource_fill = eval::RandomFill::kUniform; break;
    case 1: options.resource_fill = eval::RandomFill::kWeights; break;
    default:
      return InvalidArgument("Execute: unknown resource_fill " + std::to_string(execute.resource_fill()));
  }
  return options;
}

Status Session::RunFailure(const Status& failed, bool quota_bound) const {
  if (!quota_bound || failed.code() != StatusCode::kDeadlineExceeded) return failed;
  return Status(StatusCode::kDeadlineExceeded,
                "Execute: ran past this client's execution time limit (max_execute_time) of " +
                    std::to_string(options_.max_execute_time.count()) + " ms: " + failed.message());
}

std::span<const uint8_t> Session::HandleExecute(uint64_t id, const wire::ExecuteRequest* execute,
                                                Clock::time_point start) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  BumpSingleWriter(counters_->executes, 1);
  auto exe_it = executables_.find(execute->executable());
  if (exe_it == executables_.end()) {
    return Reply(id, NotFound("Execute: no executable " + std::to_string(execute->executable()) +
                              " in this session"));
  }
  const CompiledProgram& program = *exe_it->second;
  // Tuples and tokens (issue 16, item 6): the request names the tensor
  // leaves' buffers (value_tree.h), which are the executable's arguments
  // and results (its signature was flattened at compile time), so such a
  // program runs as any other.
  const std::vector<ir::Type>& argument_types = program.argument_types;
  const std::vector<ir::Type>& result_types = program.result_types;
  // Replicated first: it refuses device-resident buffers by name.
  if (program.grid.num_processes() > 1 || execute->processes() > 1) {
    return HandleExecuteReplicated(id, execute, program, start);  // session_replicated.cc
  }
  if (NamesDeviceBuffers(execute)) {
    return HandleExecuteOnDevice(id, execute, program, start);  // session_device.cc
  }
  const size_t num_args = execute->arguments() ? execute->arguments()->size() : 0;
  const size_t num_results = execute->results() ? execute->results()->size() : 0;
  const size_t num_result_data = execute->result_data() ? execute->result_data()->size() : 0;
  if (num_args != argument_types.size()) {
    return Reply(id, InvalidArgument("Execute: the program takes " +
                                     std::to_string(argument_types.size()) +
                                     " argument(s), the request names " +
                                     std::to_string(num_args)));
  }
  // The result destinations: registered buffers (`results`), or heap ranges
  // to register as new buffers (`result_data`, library-allocated results).
  const bool allocate = num_results == 0 && num_result_data != 0;
  if (num_results != 0 && num_result_data != 0) {
    return Reply(id, InvalidArgument("Execute: give results or result_data, not both"));
  }
  const size_t num_outputs = allocate ? num_result_data : num_results;
  if (num_outputs != result_types.size()) {
    return Reply(id, InvalidArgument("Execute: the program returns " +
                                     std::to_string(result_types.size()) +
                                     " result(s), the request names " +
                                     std::to_string(num_outputs) + " result buffer(s)"));
  }
  // Output ranges, each checked against the heap and its result's size.
  RingHeapRef outputs_inline[4];
  std::vector<RingHeapRef> outputs_heap;
  RingHeapRef* outputs = outputs_inline;
  if (num_outputs > 4) {
    outputs_heap.resize(num_outputs);
    outputs = outputs_heap.data();
  }
  uint64_t new_bytes = 0;
  for (size_t i = 0; i < num_outputs; ++i) {
    if (allocate) {
      wire::HeapRef ref;
      std::memcpy(&ref, execute->result_data()->Data() + i * sizeof(wire::HeapRef), sizeof(ref));
      outputs[i] = RingHeapRef{ref.offset(), ref.length()};
      const uint64_t need = static_cast<uint64_t>(result_types[i].byte_size());
      if (outputs[i].length != need) {
        return Reply(id, InvalidArgument("Execute: result_data " + std::to_string(i) + " holds " +
                                         std::to_string(outputs[i].length) + " bytes, result " +
                                         result_types[i].ToString() + " needs " +
                                         std::to_string(need)));
      }
      if (StatusOr<std::span<uint8_t>> bytes = segment_->HeapBytes(outputs[i]); !bytes.ok()) {
        return Reply(id, InvalidArgument("Execute: result_data " + std::to_string(i) + ": " +
                                         bytes.status().message()));
      }
      new_bytes += outputs[i].length;
    } else {
      auto it = buffers_.find(ipc::ReadVectorElement(*execute->results(), i));
      if (it == buffers_.end()) {
        return Reply(id, NotFound("Execute: result buffer " + std::to_string(i) +
                                  " is not a buffer of this session"));
      }
      if (!(it->second.type == result_types[i])) {
        return Reply(id, InvalidArgument("Execute: result " + std::to_string(i) + " is " +
                                         result_types[i].ToString() + ", its buffer is " +
                                         it->second.type.ToString()));
      }
      outputs[i] = it->second.ref;
    }
  }
  if (allocate) {
    if (Status room = RoomForBuffers("Execute", num_outputs, new_bytes); !room.ok()) {
      return Reply(id, room);
    }
  }
  std::vector<eval::RuntimeValue>& args = args_;
  args.clear();
  // Executables that run on raw buffers (the cpu device) get the arguments
  // copied into daemon-private scratch and write their results there: one
  // memcpy each way and no allocation per call. Private because the client
  // may write its shared memory at any time, and a program must not see its
  // inputs (indices, sort keys) change under it.
  const bool on_buffers = program.executable->runs_on_buffers();
  // An executable that copies its arguments away before reading them (the
  // cuda device: into GPU memory, from the segment registered at attach)
  // reads and writes the shared memory itself: no private copies.
  const bool direct = on_buffers && program.executable->copies_arguments();
  uint64_t heap_end = 0;  // direct: how far into the heap its buffers reach
  if (on_buffers) {
    scratch_ptrs_.assign(num_args + num_outputs, nullptr);
    if (scratch_.size() < num_args + num_outputs) scratch_.resize(num_args + num_outputs);
  }
  for (size_t i = 0; i < num_args; ++i) {
    auto it = buffers_.find(ipc::ReadVectorElement(*execute->arguments(), i));
    if (it == buffers_.end()) {
      return Reply(id, NotFound("Execute: argument " + std::to_string(i) +
                                " is not a buffer of this session"));
    }
    if (!(it->second.type == argument_types[i])) {
      return Reply(id, InvalidArgument("Execute: argument " + std::to_string(i) + " must be " +
                                       argument_types[i].ToString() +
                                       ", its buffer is " + it->second.type.ToString()));
    }
    if (on_buffers) {
      StatusOr<std::span<uint8_t>> bytes = segment_->HeapBytes(it->second.ref);
      if (!bytes.ok()) return Reply(id, Internal("Execute: " + bytes.status().message()));
      if (direct) {
        scratch_ptrs_[i] = bytes->data();
        heap_end = std::max(heap_end, it->second.ref.offset + it->second.ref.length);
        continue;
      }
      uint8_t* copy = scratch_[i].Reserve(bytes->size());
      if (!bytes->empty()) std::memcpy(copy, bytes->data(), bytes->size());
      scratch_ptrs_[i] = copy;
      continue;
    }
    StatusOr<std::vector<uint8_t>> bytes = segment_->CopyFromHeap(it->second.ref);
    if (!bytes.ok()) return Reply(id, Internal("Execute: " + bytes.status().message()));
    StatusOr<ir::Literal> literal = ir::Literal::FromBytes(it->second.type, std::move(bytes).value());
    if (!literal.ok()) return Reply(id, literal.status());
    args.emplace_back(std::move(literal).value());
  }
  StatusOr<devices::ExecuteOptions> run_options = RunOptionsOf(*execute);
  if (!run_options.ok()) return Reply(id, run_options.status());
  devices::ExecuteOptions& options = *run_options;
  bool quota_bound = false;
  const std::chrono::microseconds budget = ExecuteBudget(execute->deadline_micros(), &quota_bound);
  // Wait for an execute slot, round-robin with the other clients (the wait
  // shows as Timing.queue_micros); the deadline starts when the run does.
  std::optional<FairGate::Turn> turn;
  turn.emplace(instance_->execute_gate(), fair_key_);
  // stablehlo.infeed / outfeed use this client's queues (feeds_) of this
  // program's device; a wait gives up at the deadline or when the session
  // stops (so Stop never waits on a feed). While it waits the execute slot goes back
  // to the gate: a program blocked on a feed must not keep other clients'
  // executes out.
  auto feed_wait = [this, &turn](auto&& wait) {
    turn.reset();
    auto result = wait();
    turn.emplace(instance_->execute_gate(), fair_key_);
    return result;
  };
  options.infeed = [this, device = program.device, &feed_wait](
                       const std::vector<ir::Type>& types,
                       std::optional<Clock::time_point> deadline) {
    return feed_wait([&] {
      return feeds_->Pop(FeedDirection::kInfeed, device, 0, types, deadline, &stop_);
    });
  };
  options.outfeed = [this, device = program.device, &feed_wait](
                        std::vector<ir::Literal> values,
                        std::optional<Clock::time_point> deadline) {
    return feed_wait([&] {
      return feeds_->Push(FeedDirection::kOutfeed, device, 0, std::move(values), deadline,
                          &stop_);
    });
  };
  if (program.profile) options.profile = &profile_;
  const Clock::time_point run_start = Clock::now();
  options.deadline = run_start + budget;
  // The dispatcher cancels the request when the client hangs up.
  options.cancel = &stop_;
  options.device_memory = device_memory_;  // --max-device-bytes
  int64_t device_nanos = 0;
  options.device_nanos = &device_nanos;
  StatusOr<std::vector<eval::RuntimeValue>> results = std::vector<eval::RuntimeValue>();
  Status run_status;
  if (on_buffers) {
    for (size_t j = 0; j < num_outputs; ++j) {
      if (direct) {
        StatusOr<std::span<uint8_t>> out = segment_->HeapBytes(outputs[j]);
        if (!out.ok()) {
          return Reply(id, Internal("Execute: result buffer " + std::to_string(j) +
                                    " is out of the heap"));
        }
        scratch_ptrs_[num_args + j] = out->data();
        heap_end = std::max(heap_end, outputs[j].offset + outputs[j].length);
        continue;
      }
      scratch_ptrs_[num_args + j] = scratch_[num_args + j].Reserve(outputs[j].length);
    }
    if (direct) PinHeapFront(heap_end);
    run_status = program.executable->Run(
        std::span<const void* const>(scratch_ptrs_.data(), num_args),
        std::span<void* const>(scratch_ptrs_.data() + num_args, num_outputs), options);
  } else {
    results = program.executable->Execute(args, options);
    run_status = results.status();
  }
  const Clock::time_point run_end = Clock::now();
  turn.reset();
  args.clear();
  BumpSingleWriter(counters_->execute_micros, Micros(run_end - run_start));
  counters_->device_bytes.store(device_memory_->bytes_in_use(), std::memory_order_relaxed);
  counters_->device_peak_bytes.store(device_memory_->peak_bytes(), std::memory_order_relaxed);
  BumpSingleWriter(counters_->device_micros, static_cast<uint64_t>(device_nanos / 1000));
  instance_->CountExecute(run_status.ok());
  if (!run_status.ok()) return Reply(id, RunFailure(run_status, quota_bound));
  for (size_t j = 0; on_buffers && !direct && j < num_outputs; ++j) {
    StatusOr<std::span<uint8_t>> out = segment_->HeapBytes(outputs[j]);
    if (!out.ok()) {
      return Reply(id, Internal("Execute: result buffer " + std::to_string(j) +
                                " is out of the heap"));
    }
    if (!out->empty()) std::memcpy(out->data(), scratch_ptrs_[num_args + j], out->size());
  }
  std::vector<const ir::Literal*> result_leaves;
  if (!on_buffers) {
    for (const eval::RuntimeValue& value : *results) {
      result_leaves.push_back(value.is_tensor() ? &value.literal() : nullptr);
    }
  }
  if (!on_buffers && result_leaves.size() != num_outputs) {
    return Reply(id, Internal("Execute: the program produced " +
                              std::to_string(result_leaves.size()) + " result tensors"));
  }
  for (size_t i = 0; !on_buffers && i < num_outputs; ++i) {
    const ir::Literal* leaf = result_leaves[i];
    if (leaf == nullptr || !(leaf->type() == result_types[i])) {
      return Reply(id, Internal("Execute: result " + std::to_string(i) + " has type " +
                                (leaf ? leaf->type().ToString() : (*results)[i].type().ToString())));
    }
    StatusOr<std::span<uint8_t>> out = segment_->HeapBytes(outputs[i]);
    std::span<const uint8_t> src = leaf->bytes();
    if (!out.ok() || out->size() != src.size()) {
      return Reply(id, Internal("Execute: result buffer " + std::to_string(i) +
                                " is out of the heap"));
    }
    if (!src.empty()) std::memcpy(out->data(), src.data(), src.size());
  }
  // The reply: the result handles (new ones registered now).
  uint64_t* handles = nullptr;
  auto result_vector = fbb.CreateUninitializedVector(num_outputs, &handles);
  for (size_t i = 0; i < num_outputs; ++i) {
    uint64_t handle;
    if (allocate) {
      handle = next_handle_++;
      buffers_.emplace(handle, Buffer{result_types[i], outputs[i], nullptr});
      buffer_bytes_ += outputs[i].length;
    } else {
      handle = ipc::ReadVectorElement(*execute->results(), i);
    }
    std::memcpy(handles + i, &handle, sizeof(handle));
  }
  if (allocate) PublishCounts();
  const Clock::time_point end = Clock::now();
  auto timing = wire::CreateTiming(fbb, Micros(run_start - start), Micros(run_end - run_start),
                                   Micros(end - start));
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ProfileRow>>> profile_rows;
  uint64_t profile_omitted = 0;
  if (program.profile) {
    // Bounded so the reply fits its ring slot whatever the program.
    const size_t kept = std::min(profile_.size(), kMaxProfileRows);
    std::vector<flatbuffers::Offset<wire::ProfileRow>> rows;
    rows.reserve(kept);
    for (size_t i = 0; i < kept; ++i) {
      const devices::ProfileEntry& row = profile_[i];
      rows.push_back(wire::CreateProfileRow(
          fbb, fbb.CreateString(row.name.substr(0, kMaxProfileNameBytes)),
          static_cast<uint64_t>(row.count), static_cast<uint64_t>(row.nanos)));
    }
    profile_omitted = profile_.size() - kept;
    profile_rows = fbb.CreateVector(rows);
  }
  auto body = wire::CreateExecuteReply(fbb, result_vector, timing, profile_rows, profile_omitted);
  instance_->RecordExecuteLatency(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
  return Reply(id, Status::Ok(), wire::ReplyBody_ExecuteReply, body.Union());
}

// TransferToInfeed / TransferFromOutfeed: checks the request's device,
// replica, shape and heap range, then pushes to or pops from this client's
// queues (a pop waits up to the request's timeout, cut to the execution
// quota, and gives up early when the session stops).
std::span<const uint8_t> Session::HandleFeed(uint64_t id, const wire::RequestMessage& request) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  const bool infeed = request.request_type() == wire::Request_TransferToInfeedRequest;
  const char* what = infeed ? "TransferToInfeed" : "TransferFromOutfeed";
  const flatbuffers::String* device_name;
  uint32_t replica;
  const wire::TensorShape* wire_shape;
  const wire::HeapRef* data;
  if (infeed) {
    const wire::TransferToInfeedRequest* r = request.request_as_TransferToInfeedRequest();
    device_name = r->device();
    replica = r->replica();
    wire_shape = r->shape();
    data = r->data();
  } else {
    const wire::TransferFromOutfeedRequest* r = request.request_as_TransferFromOutfeedRequest();
    device_name = r->device();
    replica = r->replica();
    wire_shape = r->shape();
    data = r->data();
  }
  std::string device = device_name ? device_name->str() : "";
  if (device.empty()) device = instance_->DefaultDevice();
  const std::vector<std::string> known = devices::DeviceNames();
  if (std::find(known.begin(), known.end(), device) == known.end()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    return Reply(id, NotFound(std::string(what) + ": no device '" + device +
                                   "' in this daemon (it has: " + list + ")"));
  }
  // Replicas are the process indices of this client's programs on the device.
  if (const uint32_t replicas = feeds_->replicas(device); replica >= replicas) {
    return Reply(id, InvalidArgument(
                         std::string(what) + ": replica " + std::to_string(replica) +
                         " is out of range [0, " + std::to_string(replicas) +
                         "): this client's programs on device '" + device + "' run " +
                         std::to_string(replicas) + " process" + (replicas == 1 ? "" : "es") +
                         " at most (compile one with more replicas first)"));
  }
  StatusOr<ir::Type> type = FromWireShape(wire_shape);
  if (!type.ok()) {
    return Reply(id, InvalidArgument(std::string(what) + ": " + type.status().message()));
  }
  if (data == nullptr) {
    return Reply(id, InvalidArgument(std::string(what) + ": data (a heap range) is missing"));
  }
  const RingHeapRef ref{data->offset(), data->length()};
  if (ref.length != static_cast<uint64_t>(type->byte_size())) {
    return Reply(id, InvalidArgument(std::string(what) + ": data holds " +
                                          std::to_string(ref.length) + " bytes, a " +
                                          type->ToString() + " needs " +
                                          std::to_string(type->byte_size())));
  }
  if (options_.max_buffer_bytes != 0 && ref.length > options_.max_buffer_bytes) {
    return Reply(id, ResourceExhausted(std::string(what) + ": " +
                                            std::to_string(ref.length) +
                                            " bytes exceed this client's limit "
                                            "(max_buffer_bytes) of " +
                                            std::to_string(options_.max_buffer_bytes) +
                                            "; jitd serve --max-buffer-bytes or "
                                            "JITD_MAX_BUFFER_BYTES raises it"));
  }
  FeedQueues& feeds = *feeds_;  // this client's own (feed_queues.h)
  if (infeed) {
    StatusOr<std::vector<uint8_t>> bytes = segment_->CopyFromHeap(ref);
    if (!bytes.ok()) {
      return Reply(id, InvalidArgument(std::string(what) + ": " + bytes.status().message()));
    }
    StatusOr<ir::Literal> literal = ir::Literal::FromBytes(*type, std::move(bytes).value());
    if (!literal.ok()) return Reply(id, literal.status());
    std::vector<ir::Literal> values;
    values.push_back(std::move(literal).value());
    Status pushed = feeds.Push(FeedDirection::kInfeed, device, replica, std::move(values));
    if (!pushed.ok()) {
      return Reply(id, Status(pushed.code(), std::string(what) + ": " + pushed.message()));
    }
    auto body = wire::CreateTransferToInfeedReply(
        fbb, feeds.size(FeedDirection::kInfeed, device, replica));
    return Reply(id, Status::Ok(), wire::ReplyBody_TransferToInfeedReply, body.Union());
  }
  StatusOr<std::span<uint8_t>> out = segment_->HeapBytes(ref);
  if (!out.ok()) {
    return Reply(id, InvalidArgument(std::string(what) + ": " + out.status().message()));
  }
  const uint64_t timeout_micros =
      request.request_as_TransferFromOutfeedRequest()->timeout_micros();
  const std::chrono::microseconds budget = ExecuteBudget(timeout_micros, nullptr);
  StatusOr<std::vector<ir::Literal>> values = feeds.Pop(
      FeedDirection::kOutfeed, device, replica, {*type}, Clock::now() + budget, &stop_);
  if (!values.ok()) {
    return Reply(id, Status(values.status().code(),
                                 std::string(what) + ": " + values.status().message()));
  }
  std::span<const uint8_t> src = (*values)[0].bytes();
  if (src.size() != out->size()) {
    return Reply(id, Internal(std::string(what) + ": value of " +
                                   std::to_string(src.size()) + " bytes for a range of " +
                                   std::to_string(out->size())));
  }
  if (!src.empty()) std::memcpy(out->data(), src.data(), src.size());
  auto body = wire::CreateTransferFromOutfeedReply(fbb);
  return Reply(id, Status::Ok(), wire::ReplyBody_TransferFromOutfeedReply, body.Union());
}

void Session::DropDumps(uint64_t handle) {
  auto it = dumps_.find(handle);
  if (it == dumps_.end()) return;
  for (const UnreadDump& unread : it->second) dump_bytes_ -= unread.dump.text.size();
  dumps_.erase(it);
}

std::span<const uint8_t> Session::HandleReadDump(uint64_t id, const wire::ReadDumpRequest* read) {
  const uint64_t handle = read->executable();
  auto it = dumps_.find(handle);
  if (it == dumps_.end()) {
    return Reply(id, NotFound("ReadDump: executable " + std::to_string(handle) +
                              " has no unread dumps (compile it with options.dumps)"));
  }
  std::vector<UnreadDump>& dumps = it->second;
  if (read->index() >= dumps.size()) {
    return Reply(id, InvalidArgument("ReadDump: index " + std::to_string(read->index()) +
                                     " is out of range (the compile made " +
                                     std::to_string(dumps.size()) + " dumps)"));
  }
  UnreadDump& unread = dumps[read->index()];
  const std::string where =
      "ReadDump: dump " + std::to_string(read->index()) + " ('" + unread.dump.name + "')";
  if (unread.read) return Reply(id, NotFound(where + " was read already (each is read once)"));
  std::string& text = unread.dump.text;
  if (read->data() == nullptr || read->data()->length() != text.size()) {
    return Reply(id, InvalidArgument(where + " has " + std::to_string(text.size()) +
                                     " bytes; data must be a heap range of exactly that length"));
  }
  StatusOr<std::span<uint8_t>> out =
      segment_->HeapBytes(RingHeapRef{read->data()->offset(), read->data()->length()});
  if (!out.ok()) return Reply(id, InvalidArgument("ReadDump: data: " + out.status().message()));
  if (!text.empty()) std::memcpy(out->data(), text.data(), text.size());
  dump_bytes_ -= text.size();
  std::string().swap(text);  // read once: the daemon's copy goes
  unread.read = true;
  auto body = wire::CreateReadDumpReply(fbb_);
  return Reply(id, Status::Ok(), wire::ReplyBody_ReadDumpReply, body.Union());
}

}  // namespace jitd::daemon
