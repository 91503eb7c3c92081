// Session's device-resident buffers (issue 14): CreateBuffer with a device
// ("cuda") allocates the buffer there — counted on this client's device
// memory account (jitd serve --max-device-bytes) — and copies its initial
// bytes from the heap; CopyBuffer moves bytes between it and a heap range;
// an execute naming one runs Executable::RunWithBuffers, reading device
// arguments in place and writing device results on the device, while the
// host buffers beside them are read and written in the segment directly
// (the device copies them: Executable::copies_arguments). Quotas, the
// deadline, cancellation and the execute gate are Execute's.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "daemon/session.h"
#include "daemon/wire_types.h"

namespace jitd::daemon {

using ipc::RingHeapRef;

namespace {

using Clock = std::chrono::steady_clock;

uint64_t MicrosOf(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

}  // namespace

std::span<const uint8_t> Session::HandleCreateDeviceBuffer(uint64_t id,
                                                           const wire::CreateBufferRequest* create,
                                                           ir::Type type) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  const std::string device_name = create->device()->str();
  StatusOr<const devices::Device*> device = instance_->DeviceNamed(device_name);
  if (!device.ok()) return Reply(id, Status(device.status().code(), "CreateBuffer: " + device.status().message()));
  // Device bytes count against --max-device-bytes (the device's quota), not here.
  if (Status room = RoomForBuffers("CreateBuffer", 1, 0); !room.ok()) return Reply(id, room);
  const uint64_t bytes = static_cast<uint64_t>(type.byte_size());
  std::span<uint8_t> initial;
  if (create->data() != nullptr && create->data()->length() > 0) {
    const RingHeapRef ref{create->data()->offset(), create->data()->length()};
    if (ref.length != bytes) {
      return Reply(id, InvalidArgument("CreateBuffer: data holds " + std::to_string(ref.length) + " bytes, a " +
                                       type.ToString() + " needs " + std::to_string(bytes)));
    }
    StatusOr<std::span<uint8_t>> heap = segment_->HeapBytes(ref);
    if (!heap.ok()) return Reply(id, InvalidArgument("CreateBuffer: " + heap.status().message()));
    initial = *heap;
  }
  // --max-device-bytes: this session's account, as its executes'.
  StatusOr<std::unique_ptr<devices::DeviceBuffer>> buffer = (*device)->AllocateBuffer(type, device_memory_);
  if (!buffer.ok()) {
    return Reply(id, Status(buffer.status().code(),
                            "CreateBuffer on " + device_name + ": " + buffer.status().message()));
  }
  if (!initial.empty()) {
    // Device buffers are GPU memory: the copy is direct from pinned memory.
    PinHeapFront(create->data()->offset() + create->data()->length());
    if (Status copied = (*buffer)->CopyFromHost(initial.data(), initial.size()); !copied.ok()) {
      return Reply(id, Status(copied.code(), "CreateBuffer on " + device_name + ": " + copied.message()));
    }
  }
  counters_->device_bytes.store(device_memory_->bytes_in_use(), std::memory_order_relaxed);
  counters_->device_peak_bytes.store(device_memory_->peak_bytes(), std::memory_order_relaxed);
  const uint64_t handle = next_handle_++;
  buffers_.emplace(handle, Buffer{std::move(type), RingHeapRef{0, 0}, std::move(buffer).value()});
  PublishCounts();
  auto body = wire::CreateCreateBufferReply(fbb, handle);
  return Reply(id, Status::Ok(), wire::ReplyBody_CreateBufferReply, body.Union());
}

std::span<const uint8_t> Session::HandleCopyBuffer(uint64_t id, const wire::CopyBufferRequest* copy) {
  auto it = buffers_.find(copy->buffer());
  if (it == buffers_.end()) {
    return Reply(id, NotFound("CopyBuffer: no buffer " + std::to_string(copy->buffer()) + " in this session"));
  }
  if (!it->second.device) {
    return Reply(id, InvalidArgument("CopyBuffer: buffer " + std::to_string(copy->buffer()) +
                                     " is in shared memory, not on a device (CreateBuffer without a device)"));
  }
  if (copy->data() == nullptr) return Reply(id, InvalidArgument("CopyBuffer: data (a heap range) is missing"));
  const RingHeapRef ref{copy->data()->offset(), copy->data()->length()};
  devices::DeviceBuffer& buffer = *it->second.device;
  if (ref.length != buffer.bytes()) {
    return Reply(id, InvalidArgument("CopyBuffer: data holds " + std::to_string(ref.length) + " bytes, buffer " +
                                     std::to_string(copy->buffer()) + " (" + buffer.type().ToString() +
                                     ") holds " + std::to_string(buffer.bytes())));
  }
  StatusOr<std::span<uint8_t>> heap = segment_->HeapBytes(ref);
  if (!heap.ok()) return Reply(id, InvalidArgument("CopyBuffer: " + heap.status().message()));
  PinHeapFront(ref.offset + ref.length);  // as CreateBuffer's copy
  Status copied = copy->to_device() ? buffer.CopyFromHost(heap->data(), heap->size())
                                    : buffer.CopyToHost(heap->data(), heap->size());
  if (!copied.ok()) return Reply(id, Status(copied.code(), "CopyBuffer: " + copied.message()));
  return Reply(id, Status::Ok());
}

bool Session::NamesDeviceBuffers(const wire::ExecuteRequest* execute) const {
  auto any = [&](const flatbuffers::Vector<uint64_t>* handles) {
    if (handles == nullptr) return false;
    for (size_t i = 0; i < handles->size(); ++i) {
      auto it = buffers_.find(ipc::ReadVectorElement(*handles, i));
      if (it != buffers_.end() && it->second.device) return true;
    }
    return false;
  };
  return any(execute->arguments()) || any(execute->results());
}

std::span<const uint8_t> Session::HandleExecuteOnDevice(uint64_t id, const wire::ExecuteRequest* execute,
                                                        const CompiledProgram& program, Clock::time_point start) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  if (program.grid.num_processes() > 1 || execute->processes() > 1) {
    return Reply(id, Unimplemented("Execute: device-resident buffers with several processes"));
  }
  if (execute->result_data() != nullptr && execute->result_data()->size() > 0) {
    return Reply(id, InvalidArgument("Execute: with device-resident buffers, name the result buffers "
                                     "(results), not result_data"));
  }
  const size_t num_args = execute->arguments() ? execute->arguments()->size() : 0;
  const size_t num_results = execute->results() ? execute->results()->size() : 0;
  if (num_args != program.argument_types.size() || num_results != program.result_types.size()) {
    return Reply(id, InvalidArgument("Execute: the program takes " + std::to_string(program.argument_types.size()) +
                                     " argument(s) and returns " + std::to_string(program.result_types.size()) +
                                     ", the request names " + std::to_string(num_args) + " and " +
                                     std::to_string(num_results)));
  }
  // Each a host buffer's bytes in the segment or a device buffer.
  uint64_t heap_end = 0;  // how far into the heap the host buffers reach
  auto resolve = [&](const flatbuffers::Vector<uint64_t>& handles, size_t i, const ir::Type& want,
                     const char* what, devices::RunBuffer* out) -> Status {
    auto it = buffers_.find(ipc::ReadVectorElement(handles, i));
    if (it == buffers_.end()) {
      return NotFound(std::string("Execute: ") + what + " " + std::to_string(i) + " is not a buffer of this session");
    }
    if (!(it->second.type == want)) {
      return InvalidArgument(std::string("Execute: ") + what + " " + std::to_string(i) + " must be " +
                             want.ToString() + ", its buffer is " + it->second.type.ToString());
    }
    if (it->second.device) {
      out->device = it->second.device.get();
      return Status::Ok();
    }
    StatusOr<std::span<uint8_t>> bytes = segment_->HeapBytes(it->second.ref);
    if (!bytes.ok()) return Internal("Execute: " + bytes.status().message());
    out->host = bytes->data();
    heap_end = std::max(heap_end, it->second.ref.offset + it->second.ref.length);
    return Status::Ok();
  };
  std::vector<devices::RunBuffer> args(num_args), results(num_results);
  for (size_t i = 0; i < num_args; ++i) {
    if (Status s = resolve(*execute->arguments(), i, program.argument_types[i], "argument", &args[i]); !s.ok()) {
      return Reply(id, s);
    }
  }
  for (size_t i = 0; i < num_results; ++i) {
    if (Status s = resolve(*execute->results(), i, program.result_types[i], "result", &results[i]); !s.ok()) {
      return Reply(id, s);
    }
    for (size_t j = 0; j < i; ++j) {
      if (results[i].device != nullptr && results[i].device == results[j].device) {
        return Reply(id, InvalidArgument("Execute: results " + std::to_string(j) + " and " + std::to_string(i) +
                                         " name the same device buffer"));
      }
    }
  }
  if (!program.executable->copies_arguments()) {
    return Reply(id, InvalidArgument("Execute: a program on device '" + program.device +
                                     "' cannot take device-resident buffers"));
  }
  StatusOr<devices::ExecuteOptions> run_options = RunOptionsOf(*execute);
  if (!run_options.ok()) return Reply(id, run_options.status());
  PinHeapFront(heap_end);  // host buffers copy to and from the GPU directly
  devices::ExecuteOptions& options = *run_options;
  bool quota_bound = false;
  const std::chrono::microseconds budget = ExecuteBudget(execute->deadline_micros(), &quota_bound);
  options.cancel = &stop_;
  options.device_memory = device_memory_;  // --max-device-bytes
  int64_t device_nanos = 0;
  options.device_nanos = &device_nanos;
  std::optional<FairGate::Turn> turn;
  turn.emplace(instance_->execute_gate(), fair_key_);
  const Clock::time_point run_start = Clock::now();
  if (budget.count() > 0) options.deadline = run_start + budget;
  const Status run = program.executable->RunWithBuffers(args, results, options);
  const Clock::time_point run_end = Clock::now();
  turn.reset();
  BumpSingleWriter(counters_->execute_micros, MicrosOf(run_end - run_start));
  counters_->device_bytes.store(device_memory_->bytes_in_use(), std::memory_order_relaxed);
  counters_->device_peak_bytes.store(device_memory_->peak_bytes(), std::memory_order_relaxed);
  BumpSingleWriter(counters_->device_micros, static_cast<uint64_t>(device_nanos / 1000));
  instance_->CountExecute(run.ok());
  if (!run.ok()) return Reply(id, RunFailure(run, quota_bound));
  uint64_t* handles = nullptr;
  auto result_vector = fbb.CreateUninitializedVector(num_results, &handles);
  for (size_t i = 0; i < num_results; ++i) {
    const uint64_t handle = ipc::ReadVectorElement(*execute->results(), i);
    std::memcpy(handles + i, &handle, sizeof(handle));
  }
  const Clock::time_point end = Clock::now();
  auto timing = wire::CreateTiming(fbb, MicrosOf(run_start - start), MicrosOf(run_end - run_start),
                                   MicrosOf(end - start));
  auto body = wire::CreateExecuteReply(fbb, result_vector, timing);
  instance_->RecordExecuteLatency(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
  return Reply(id, Status::Ok(), wire::ReplyBody_ExecuteReply, body.Union());
}

}  // namespace jitd::daemon
