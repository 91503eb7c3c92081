// Session::HandleExecuteReplicated: the execute of a program that runs as
// several processes (issue 17; daemon/process_grid.h says how many).
//
// The request names every process's argument and result buffers in turn
// (ExecuteRequest.processes of them); the session checks them all before
// anything runs, copies each process's arguments out of shared memory,
// runs devices::ExecuteReplicated (one thread per process, collectives
// meeting in memory) and writes each process's results back. Quotas,
// deadline, cancellation and the execute gate are Execute's: the whole
// execution holds one execute slot and one deadline; process i reads its own
// infeed queue and writes its own outfeed queue (replica i of the program's
// device, feed_queues.h). A collective that never completes ends at the
// deadline with DEADLINE_EXCEEDED naming the op and the processes (the
// engine's message), never a hang.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/session.h"
#include "devices/replicated.h"

namespace jitd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t MicrosOf(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
}

// The execute slot of a replicated execution, given back to the gate while
// any of its processes waits on a feed (so a program blocked on its infeed
// does not keep other clients' executes out) and taken again when the last
// waiter is done. Thread-safe: the processes' threads call Leave/Return.
class SharedTurn {
 public:
  SharedTurn(FairGate& gate, uint64_t key) : gate_(gate), key_(key) { turn_.emplace(gate_, key_); }
  void Leave() {
    std::lock_guard<std::mutex> lock(mu_);
    if (waiting_++ == 0) turn_.reset();
  }
  void Return() {
    std::lock_guard<std::mutex> lock(mu_);
    if (--waiting_ == 0) turn_.emplace(gate_, key_);
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    turn_.reset();
  }

 private:
  FairGate& gate_;
  const uint64_t key_;
  std::mutex mu_;
  int waiting_ = 0;
  std::optional<FairGate::Turn> turn_;
};

}  // namespace

std::span<const uint8_t> Session::HandleExecuteReplicated(uint64_t id,
                                                          const wire::ExecuteRequest* execute,
                                                          const CompiledProgram& program,
                                                          Clock::time_point start) {
  flatbuffers::FlatBufferBuilder& fbb = fbb_;
  const eval::ProcessGrid& grid = program.grid;
  const size_t processes = static_cast<size_t>(grid.num_processes());
  const std::string grid_text = std::to_string(grid.num_replicas) + " replica" +
                                (grid.num_replicas == 1 ? "" : "s") + " x " +
                                std::to_string(grid.num_partitions) + " partition" +
                                (grid.num_partitions == 1 ? "" : "s");
  const size_t asked = std::max<uint32_t>(execute->processes(), 1);
  if (asked != processes) {
    if (asked == 1) {
      return Reply(id, InvalidArgument(
                           "Execute: the executable runs " + std::to_string(processes) +
                           " processes (" + grid_text +
                           "); give the arguments of each (ExecutePerReplica, "
                           "ExecuteRequest.processes = " +
                           std::to_string(processes) + ")"));
    }
    return Reply(id, InvalidArgument("Execute: the request runs " + std::to_string(asked) +
                                     " processes, the executable " + std::to_string(processes) +
                                     " (" + grid_text + ")"));
  }
  const size_t num_params = program.argument_types.size();
  const size_t num_returns = program.result_types.size();
  const size_t num_args = execute->arguments() ? execute->arguments()->size() : 0;
  const size_t num_results = execute->results() ? execute->results()->size() : 0;
  const size_t num_result_data = execute->result_data() ? execute->result_data()->size() : 0;
  if (num_args != processes * num_params) {
    return Reply(id, InvalidArgument("Execute: the program takes " + std::to_string(num_params) +
                                     " argument(s) per process, " +
                                     std::to_string(processes * num_params) + " for its " +
                                     std::to_string(processes) + " processes; the request names " +
                                     std::to_string(num_args)));
  }
  if (num_results != 0 && num_result_data != 0) {
    return Reply(id, InvalidArgument("Execute: give results or result_data, not both"));
  }
  const bool allocate = num_results == 0 && num_result_data != 0;
  const size_t num_outputs = allocate ? num_result_data : num_results;
  if (num_outputs != processes * num_returns) {
    return Reply(id, InvalidArgument("Execute: the program returns " +
                                     std::to_string(num_returns) + " result(s) per process, " +
                                     std::to_string(processes * num_returns) + " for its " +
                                     std::to_string(processes) + " processes; the request names " +
                                     std::to_string(num_outputs) + " result buffer(s)"));
  }
  // "process 1 argument 0": where an error is.
  auto where = [num_params, num_returns](bool argument, size_t flat) {
    const size_t per = argument ? num_params : num_returns;
    return "process " + std::to_string(flat / per) + (argument ? " argument " : " result ") +
           std::to_string(flat % per);
  };
  // Device-resident buffers (session_device.cc) are not taken here: every
  // process reads and writes host memory.
  auto DeviceResident = [&where](bool argument, size_t flat) {
    return "Execute: the buffer of " + where(argument, flat) +
           " is device-resident; a replicated execute takes shared-memory buffers (copy it "
           "to one first: CopyBuffer)";
  };
  // Output ranges, each checked against the heap and its result's type.
  std::vector<ipc::RingHeapRef> outputs(num_outputs);
  uint64_t new_bytes = 0;
  for (size_t i = 0; i < num_outputs; ++i) {
    const ir::Type& type = program.result_types[i % num_returns];
    if (allocate) {
      wire::HeapRef ref;
      std::memcpy(&ref, execute->result_data()->Data() + i * sizeof(wire::HeapRef), sizeof(ref));
      outputs[i] = ipc::RingHeapRef{ref.offset(), ref.length()};
      const uint64_t need = static_cast<uint64_t>(type.byte_size());
      if (outputs[i].length != need) {
        return Reply(id, InvalidArgument("Execute: result_data of " + where(false, i) + " holds " +
                                         std::to_string(outputs[i].length) + " bytes, " +
                                         type.ToString() + " needs " + std::to_string(need)));
      }
      if (StatusOr<std::span<uint8_t>> bytes = segment_->HeapBytes(outputs[i]); !bytes.ok()) {
        return Reply(id, InvalidArgument("Execute: result_data of " + where(false, i) + ": " +
                                         bytes.status().message()));
      }
      new_bytes += outputs[i].length;
    } else {
      auto it = buffers_.find(ipc::ReadVectorElement(*execute->results(), i));
      if (it == buffers_.end()) {
        return Reply(id, NotFound("Execute: the buffer of " + where(false, i) +
                                  " is not a buffer of this session"));
      }
      if (it->second.device != nullptr) {
        return Reply(id, InvalidArgument(DeviceResident(false, i)));
      }
      if (!(it->second.type == type)) {
        return Reply(id, InvalidArgument("Execute: " + where(false, i) + " is " + type.ToString() +
                                         ", its buffer is " + it->second.type.ToString()));
      }
      outputs[i] = it->second.ref;
    }
  }
  if (allocate) {
    if (Status room = RoomForBuffers("Execute", num_outputs, new_bytes); !room.ok()) {
      return Reply(id, room);
    }
  }
  // Each process's arguments, copied out of shared memory (the client may
  // write it at any time).
  std::vector<std::vector<eval::RuntimeValue>> args(processes);
  for (size_t i = 0; i < num_args; ++i) {
    const ir::Type& type = program.argument_types[i % num_params];
    auto it = buffers_.find(ipc::ReadVectorElement(*execute->arguments(), i));
    if (it == buffers_.end()) {
      return Reply(id, NotFound("Execute: the buffer of " + where(true, i) +
                                " is not a buffer of this session"));
    }
    if (it->second.device != nullptr) return Reply(id, InvalidArgument(DeviceResident(true, i)));
    if (!(it->second.type == type)) {
      return Reply(id, InvalidArgument("Execute: " + where(true, i) + " must be " +
                                       type.ToString() + ", its buffer is " +
                                       it->second.type.ToString()));
    }
    StatusOr<std::vector<uint8_t>> bytes = segment_->CopyFromHeap(it->second.ref);
    if (!bytes.ok()) return Reply(id, Internal("Execute: " + bytes.status().message()));
    StatusOr<ir::Literal> literal = ir::Literal::FromBytes(type, std::move(bytes).value());
    if (!literal.ok()) return Reply(id, literal.status());
    args[i / num_params].emplace_back(std::move(literal).value());
  }
  StatusOr<devices::ExecuteOptions> run_options = RunOptionsOf(*execute);
  if (!run_options.ok()) return Reply(id, run_options.status());
  devices::ExecuteOptions& common = *run_options;
  // One budget for the whole execution, every process's.
  bool quota_bound = false;
  const std::chrono::microseconds budget = ExecuteBudget(execute->deadline_micros(), &quota_bound);
  SharedTurn turn(instance_->execute_gate(), fair_key_);
  const Clock::time_point run_start = Clock::now();
  common.deadline = run_start + budget;
  common.cancel = &stop_;
  common.device_memory = device_memory_;
  std::vector<int64_t> device_nanos(processes, 0);
  const std::string device = program.device;
  std::shared_ptr<FeedQueues> feeds = feeds_;
  auto options_for = [&](int64_t process) {
    devices::ExecuteOptions options = common;
    const auto replica = static_cast<uint32_t>(process);
    options.device_nanos = &device_nanos[static_cast<size_t>(process)];
    // The profile of process 0 only (one vector, one writer).
    if (process == 0 && program.profile) options.profile = &profile_;
    options.infeed = [&turn, &feeds, &device, replica, cancel = &stop_](
                         const std::vector<ir::Type>& types,
                         std::optional<Clock::time_point> deadline) {
      turn.Leave();
      auto result = feeds->Pop(FeedDirection::kInfeed, device, replica, types, deadline, cancel);
      turn.Return();
      return result;
    };
    options.outfeed = [&turn, &feeds, &device, replica, cancel = &stop_](
                          std::vector<ir::Literal> values,
                          std::optional<Clock::time_point> deadline) {
      turn.Leave();
      Status pushed = feeds->Push(FeedDirection::kOutfeed, device, replica, std::move(values),
                                  deadline, cancel);
      turn.Return();
      return pushed;
    };
    return options;
  };
  StatusOr<std::vector<std::vector<eval::RuntimeValue>>> results = devices::ExecuteReplicated(
      *program.executable, grid,
      std::span<const std::vector<eval::RuntimeValue>>(args.data(), args.size()), options_for);
  const Clock::time_point run_end = Clock::now();
  turn.Release();
  args.clear();
  int64_t total_device_nanos = 0;
  for (int64_t nanos : device_nanos) total_device_nanos += nanos;
  BumpSingleWriter(counters_->execute_micros, MicrosOf(run_end - run_start));
  counters_->device_bytes.store(device_memory_->bytes_in_use(), std::memory_order_relaxed);
  counters_->device_peak_bytes.store(device_memory_->peak_bytes(), std::memory_order_relaxed);
  BumpSingleWriter(counters_->device_micros, static_cast<uint64_t>(total_device_nanos / 1000));
  instance_->CountExecute(results.ok());
  if (!results.ok()) return Reply(id, RunFailure(results.status(), quota_bound));
  if (results->size() != processes) {
    return Reply(id, Internal("Execute: " + std::to_string(results->size()) +
                              " processes' results for " + std::to_string(processes)));
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    const std::vector<eval::RuntimeValue>& mine = (*results)[i / num_returns];
    if (mine.size() != num_returns) {
      return Reply(id, Internal("Execute: process " + std::to_string(i / num_returns) +
                                " produced " + std::to_string(mine.size()) + " results"));
    }
    const eval::RuntimeValue& value = mine[i % num_returns];
    const ir::Type& type = program.result_types[i % num_returns];
    if (!value.is_tensor() || !(value.literal().type() == type)) {
      return Reply(id, Internal("Execute: " + where(false, i) + " has type " +
                                value.type().ToString()));
    }
    StatusOr<std::span<uint8_t>> out = segment_->HeapBytes(outputs[i]);
    std::span<const uint8_t> src = value.literal().bytes();
    if (!out.ok() || out->size() != src.size()) {
      return Reply(id, Internal("Execute: the buffer of " + where(false, i) +
                                " is out of the heap"));
    }
    if (!src.empty()) std::memcpy(out->data(), src.data(), src.size());
  }
  uint64_t* handles = nullptr;
  auto result_vector = fbb.CreateUninitializedVector(num_outputs, &handles);
  for (size_t i = 0; i < num_outputs; ++i) {
    uint64_t handle;
    if (allocate) {
      handle = next_handle_++;
      buffers_.emplace(handle, Buffer{program.result_types[i % num_returns], outputs[i], nullptr});
      buffer_bytes_ += outputs[i].length;
    } else {
      handle = ipc::ReadVectorElement(*execute->results(), i);
    }
    std::memcpy(handles + i, &handle, sizeof(handle));
  }
  if (allocate) PublishCounts();
  const Clock::time_point end = Clock::now();
  auto timing = wire::CreateTiming(fbb, MicrosOf(run_start - start), MicrosOf(run_end - run_start),
                                   MicrosOf(end - start));
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::ProfileRow>>> profile_rows;
  uint64_t profile_omitted = 0;
  if (program.profile) {
    constexpr size_t kMaxRows = 256, kMaxNameBytes = 120;  // as session.cc
    const size_t kept = std::min(profile_.size(), kMaxRows);
    std::vector<flatbuffers::Offset<wire::ProfileRow>> rows;
    for (size_t i = 0; i < kept; ++i) {
      const devices::ProfileEntry& row = profile_[i];
      rows.push_back(wire::CreateProfileRow(fbb, fbb.CreateString(row.name.substr(0, kMaxNameBytes)),
                                            static_cast<uint64_t>(row.count),
                                            static_cast<uint64_t>(row.nanos)));
    }
    profile_omitted = profile_.size() - kept;
    profile_rows = fbb.CreateVector(rows);
  }
  auto body = wire::CreateExecuteReply(fbb, result_vector, timing, profile_rows, profile_omitted);
  instance_->RecordExecuteLatency(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count()));
  return Reply(id, Status::Ok(), wire::ReplyBody_ExecuteReply, body.Union());
}

}  // namespace jitd::daemon
