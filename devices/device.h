// The device interface: what every backend (interpreter, cpu, cuda) offers.
//
// A Device compiles a verified module into an Executable; an Executable runs
// the module's entry function on argument values. The tinygrad split:
// compiler (Device::Compile), program (Executable), and later an allocator
// when buffers live on the device.
//
// Thread safety: a Device may be shared by threads; an Executable may run
// concurrently from several threads (each Execute call is independent).
#ifndef JITD_DEVICES_DEVICE_H_
#define JITD_DEVICES_DEVICE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "devices/memory_account.h"
#include "jit/eval/eval.h"
#include "jit/ir/module.h"

namespace jitd::passes {
struct PipelineOptions;
}  // namespace jitd::passes

namespace jitd::devices {

// One text a compile produced for its dumps: the program before and after
// each jit/passes pass ("000-input.mlir", "001-inline.mlir", ...,
// "optimized.mlir"), and the device's own ("llvm.ll", "asm.s", ...). Names
// are file names (no '/'), unique within one compile. Plain value.
struct CompileDump {
  std::string name;
  std::string text;
};

// Options of Device::Compile. Plain value.
struct CompileOptions {
  // When set, the device appends its dumps (the pass dumps come from
  // CompileProgram, devices/compile.h).
  std::vector<CompileDump>* dumps = nullptr;
};

// Where the time of one execution went: one row per op (interpreter) or per
// kernel / library call (compiled devices) and call site, summed over its
// runs. Rows of ops with regions (while, if, case, call) include the time of
// their bodies, whose ops have rows of their own. Plain value.
struct ProfileEntry {
  // "stablehlo.add @12:5", "library stablehlo.dot_general @40:3",
  // "kernel jitd_k3 reduce <- exponential @12:5": what ran, then " @" and
  // the line:column of its op in the program text (SplitCallSite) when the
  // op has one.
  std::string name;
  int64_t count = 0;  // runs during this execution
  int64_t nanos = 0;  // their total wall time
};

// `name` of a ProfileEntry or TraceEvent split into what ran and its call
// site ("12:5"; "" when the name ends in none).
inline std::pair<std::string_view, std::string_view> SplitCallSite(std::string_view name) {
  const size_t at = name.rfind(" @");
  if (at == std::string_view::npos) return {name, {}};
  const std::string_view site = name.substr(at + 2);
  const size_t colon = site.find(':');
  if (site.empty() || colon == std::string_view::npos ||
      site.find_first_not_of("0123456789:") != std::string_view::npos) {
    return {name, {}};
  }
  return {name.substr(0, at), site};
}

// One span of an execution, for a timeline (`jitd run --trace`): an op
// (interpreter) or a kernel / library call (cpu), with when it started and
// how long it took. Spans of ops with regions enclose their bodies'. Plain
// value.
struct TraceEvent {
  std::string name;      // as ProfileEntry::name, call site included
  int64_t start_nanos;   // std::chrono::steady_clock time since its epoch
  int64_t duration_nanos;
  uint64_t thread;       // the OS thread id (gettid) that ran it
};

// Where an execution records its spans (ExecuteOptions::trace). Events come
// in the order they end; past max_events the rest are counted, not kept.
// Not thread-safe: one execution at a time.
struct ExecutionTrace {
  std::vector<TraceEvent> events;
  size_t max_events = size_t{1} << 18;
  uint64_t dropped = 0;
};

// Deadline and cancellation: an execution stops at the first check point
// after its deadline passes (DEADLINE_EXCEEDED) or its cancel flag is set
// (UNAVAILABLE, "execution cancelled", see eval::CancelledStatus). The check
// points bound how long an execution runs on past either — so how long one
// client's long execute can hold an execute slot another client waits for:
//  - interpreter (jit/eval): before every op, at every level — each
//    iteration of a while loop, each op of a reducer / comparator body (so
//    per element of reduce, sort, map, ...). One op without a region runs to
//    its end: a huge elementwise op or dot_general is not cut short.
//  - cpu: before every thunk and every while iteration. Inside a kernel,
//    between slices of ~256 KiB of memory traffic (a quarter of the
//    planner's minimum chunk); one work item is never cut, so an unsplit
//    reduction of a huge extent to few outputs (f16 / bf16 sums, more than
//    64 outputs) finishes its item. Inside library calls: between slices of
//    ~1M operations of their parallel loops (gemm rows, reduce_window,
//    gather, sort slices, rng), in their own loops (sort merges, scatter,
//    select_and_scatter, GEMM convolution blocks, dot batches, every 256
//    fft lines), and between blocks of >= 256 rows and ~2^30 multiply-adds
//    of an OpenBLAS product. Not interrupted: one oneDNN convolution, one
//    fft line, and ops run by the fallback interpreter (one op, as there).
// Measured on the 2-core test machine (devices/deadline_test.cc), past the
// deadline or the cancel: while loops < 1 ms; a 64-transcendental
// elementwise kernel 3-25 ms; a split reduction 1-17 ms; reduce_window 2-18
// ms; a 4096x4096 complex fft ~10 ms; a 4096^3 f32 dot_general 55-70 ms
// (one BLAS block).
struct ExecuteOptions {
  // Execution fails with DEADLINE_EXCEEDED past this point.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // When set and it becomes true, execution stops at the next check point
  // (see above) with UNAVAILABLE "execution cancelled". The daemon sets it
  // when the client goes away mid-execute. Must outlive the call; read with
  // relaxed loads from any thread the execution uses.
  const std::atomic<bool>* cancel = nullptr;
  // Fill for dense_resource constants that carry no data (elided weights).
  std::optional<uint64_t> resource_fill_seed;
  // Their distribution (eval::RandomFill).
  eval::RandomFill resource_fill = eval::RandomFill::kUniform;
  // Where stablehlo.infeed / stablehlo.outfeed read and write (see
  // eval::EvalOptions); unset = those ops fail with UNIMPLEMENTED.
  decltype(eval::EvalOptions::infeed) infeed;
  decltype(eval::EvalOptions::outfeed) outfeed;
  // Where interpreter.probe reports the values it sees (eval::EvalOptions::probe).
  decltype(eval::EvalOptions::probe) probe;
  // Device memory the execution allocates (the cuda device: arguments and
  // temporaries) counts against this account — the client's, limited by
  // jitd serve --max-device-bytes; unset = the device's own, unlimited.
  std::shared_ptr<MemoryAccount> device_memory;
  // When set, receives the GPU time of the execution's kernels (cuda:
  // between timing events before its first launch and after its last; 0
  // when it launched none). Other devices leave it unchanged.
  int64_t* device_nanos = nullptr;
  // When set: cleared, then filled with this execution's profile, the
  // slowest rows first (see ProfileEntry). Costs a clock read per op or
  // kernel.
  std::vector<ProfileEntry>* profile = nullptr;
  // When set: every op / kernel / library call of this execution is
  // appended as a TraceEvent. Costs two clock reads per op or kernel and one
  // record each; nothing when null.
  ExecutionTrace* trace = nullptr;
  // The process this execution is, in a replicated execution
  // (devices/replicated.h sets it; see eval::EvalOptions::process). Null =
  // the one process of a 1x1 grid.
  const eval::ProcessContext* process = nullptr;
};

// Sorts `rows` slowest first (ties by name): the order devices hand a
// profile back in. Inline: devices/cpu uses it (see ToEvalOptions).
inline void SortProfile(std::vector<ProfileEntry>& rows) {
  std::sort(rows.begin(), rows.end(), [](const ProfileEntry& a, const ProfileEntry& b) {
    return a.nanos != b.nanos ? a.nanos > b.nanos : a.name < b.name;
  });
}

// Bytes `module` occupies in memory, estimated from its ops, values,
// attributes (dense data counted once per shared buffer) and resource
// blobs, with the allocator's overhead per object: what executables that
// keep their module count in Executable::size_bytes. Inline: devices/cpu
// uses it and sits below jitd_devices in the link order.
inline uint64_t ModuleBytes(const ir::Module& module) {
  constexpr uint64_t kAllocation = 16;  // malloc's header and rounding, per object
  auto type_bytes = [](const ir::Type& t) -> uint64_t {
    return sizeof(ir::Type) + (t.rank() > 0 ? kAllocation + 8 * static_cast<uint64_t>(t.rank()) : 0);
  };
  uint64_t bytes = sizeof(ir::Module) + module.name().size();
  std::vector<const void*> dense;  // shared dense buffers, counted once
  auto attrs_bytes = [&](const ir::AttributeList& attrs) {
    uint64_t n = attrs.size() * (sizeof(ir::NamedAttribute) + kAllocation);
    for (const ir::NamedAttribute& a : attrs.entries()) {
      n += a.name.size();
      if (const auto* d = a.value.get_if<ir::DenseElementsAttr>()) {
        if (d->data && std::find(dense.begin(), dense.end(), d->data.get()) == dense.end()) {
          dense.push_back(d->data.get());
          n += d->data->size() + kAllocation;
        }
      } else if (const auto* d = a.value.get_if<ir::DenseArrayAttr>()) {
        n += 8 * (d->ints.size() + d->floats.size());
      } else if (const auto* d = a.value.get_if<ir::ArrayAttr>()) {
        n += d->elements.size() * sizeof(ir::Attribute);
      } else if (const auto* d = a.value.get_if<ir::StringAttr>()) {
        n += d->value.size();
      } else if (const auto* d = a.value.get_if<ir::OpaqueAttr>()) {
        n += d->text.size();
      }
    }
    return n;
  };
  for (const auto& fn : module.functions()) {
    bytes += sizeof(ir::Function) + kAllocation + fn->name().size() + attrs_bytes(fn->attrs());
    for (const ir::Type& t : fn->arg_types()) bytes += type_bytes(t);
    for (const ir::Type& t : fn->result_types()) bytes += type_bytes(t);
    ir::WalkOps(fn->body(), [&](const ir::Op& op) {
      // The op, its operand / result / region vectors, each result Value.
      bytes += sizeof(ir::Op) + 4 * kAllocation + op.num_operands() * sizeof(void*) +
               op.result_groups().size() * sizeof(ir::ResultGroup);
      for (size_t i = 0; i < op.num_results(); ++i) {
        bytes += sizeof(ir::Value) + sizeof(void*) + kAllocation + type_bytes(op.result(i)->type()) +
                 op.result(i)->name().size();
      }
      bytes += attrs_bytes(op.attrs());
      for (size_t r = 0; r < op.num_regions(); ++r) {
        const ir::Region& region = op.region(r);
        bytes += sizeof(ir::Region) + kAllocation;
        for (size_t b = 0; b < region.num_blocks(); ++b) {
          const ir::Block& block = region.block(b);
          bytes += sizeof(ir::Block) + 2 * kAllocation + block.ops().size() * sizeof(void*);
          for (size_t i = 0; i < block.num_args(); ++i) {
            bytes += sizeof(ir::Value) + kAllocation + type_bytes(block.arg(i)->type());
          }
        }
      }
    });
    if (const ir::Block* entry = fn->entry()) {
      bytes += sizeof(ir::Block) + 2 * kAllocation + entry->ops().size() * sizeof(void*);
      for (size_t i = 0; i < entry->num_args(); ++i) {
        bytes += sizeof(ir::Value) + kAllocation + type_bytes(entry->arg(i)->type());
      }
    }
  }
  for (const ir::ResourceEntry& r : module.resources()) {
    bytes += sizeof(ir::ResourceEntry) + r.section.size() + r.group.size() + r.key.size() + r.value.size();
  }
  return bytes;
}

// True once an execution must stop: cancelled or past its deadline. A
// relaxed load and a clock read (none when neither is set); thread-safe.
inline bool ShouldStop(const ExecuteOptions& options) {
  return (options.cancel && options.cancel->load(std::memory_order_relaxed)) ||
         (options.deadline && std::chrono::steady_clock::now() >= *options.deadline);
}

// OK while an execution may go on; otherwise why it must stop: cancelled
// (eval::CancelledStatus) or past its deadline.
inline Status CheckStop(const ExecuteOptions& options) {
  if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return eval::CancelledStatus();
  if (options.deadline && std::chrono::steady_clock::now() >= *options.deadline) {
    return Status(StatusCode::kDeadlineExceeded, "execution ran past its deadline");
  }
  return Status::Ok();
}

// The evaluator options that carry out `options` (deadline, cancellation,
// resource fill, infeed/outfeed hooks): for the interpreter and for ops
// other devices hand to jit/eval.
// Inline: devices/cpu uses it and sits below jitd_devices in the link order.
inline eval::EvalOptions ToEvalOptions(const ExecuteOptions& options) {
  eval::EvalOptions eval_options;
  eval_options.deadline = options.deadline;
  eval_options.cancel = options.cancel;
  eval_options.resource_fill_seed = options.resource_fill_seed;
  eval_options.resource_fill = options.resource_fill;
  eval_options.infeed = options.infeed;
  eval_options.outfeed = options.outfeed;
  eval_options.probe = options.probe;
  eval_options.process = options.process;
  return eval_options;
}

// Memory on a device holding one dense tensor: a device-resident buffer
// (Device::AllocateBuffer). Arguments read from it and results written to
// it by Executable::RunWithBuffers stay on the device; copies to and from
// host memory are explicit. Counted against the account it was made with
// until destroyed. Not thread-safe: one user at a time.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual const ir::Type& type() const = 0;
  virtual uint64_t bytes() const = 0;
  // The whole buffer from / to host memory of `bytes` (which must equal
  // bytes()); returns once the copy is done. FAILED_PRECONDITION when the
  // device lost the buffer (a GPU context reset).
  virtual Status CopyFromHost(const void* src, uint64_t bytes) = 0;
  virtual Status CopyToHost(void* dst, uint64_t bytes) const = 0;
};

// One argument or result of Executable::RunWithBuffers: host bytes (as
// Run takes them) or a device buffer of the executable's device.
struct RunBuffer {
  void* host = nullptr;
  DeviceBuffer* device = nullptr;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Runs the entry function. Arguments and results are host values.
  virtual StatusOr<std::vector<eval::RuntimeValue>> Execute(
      std::span<const eval::RuntimeValue> args, const ExecuteOptions& options) const = 0;
  // Whether Run works: the executable computes on dense buffers directly
  // (all arguments and results are tensors, and the device can).
  virtual bool runs_on_buffers() const { return false; }
  // Runs the entry function on raw buffers: args[i] holds argument i's dense
  // row-major bytes, results[j] receives result j's (sized by
  // result_types()); results must not overlap arguments or each other. No
  // copies in or out. UNIMPLEMENTED unless runs_on_buffers().
  virtual Status Run(std::span<const void* const> args, std::span<void* const> results,
                     const ExecuteOptions& options) const {
    return Unimplemented("this executable does not run on raw buffers");
  }
  // Whether Run reads each argument once, into memory of its own, before
  // anything reads it, and writes each result once, at its end (the cuda
  // device: through GPU memory). The daemon then hands Run the client's
  // shared memory itself instead of private copies: a client changing it
  // mid-run cannot change what the program sees, and results overlapping
  // arguments are harmless.
  virtual bool copies_arguments() const { return false; }
  // Run with each argument and result either host bytes or a device buffer
  // of this executable's device (types as argument_types() /
  // result_types()): device arguments are read in place, device results
  // are written on the device. UNIMPLEMENTED for devices without buffers.
  virtual Status RunWithBuffers(std::span<const RunBuffer> args, std::span<const RunBuffer> results,
                                const ExecuteOptions& options) const {
    return Unimplemented("this executable does not run on device buffers");
  }
  // The entry function's signature.
  virtual const std::vector<ir::Type>& argument_types() const = 0;
  virtual const std::vector<ir::Type>& result_types() const = 0;
  // Bytes of memory this executable keeps while it lives: its program
  // (module), constants, compiled code and data pages, and what running it
  // keeps between executes (the cpu device: one arena of temporaries). What
  // a cache of executables counts against its budget (daemon/instance.cc);
  // an estimate, fixed once compiled. Everything it counts is freed when
  // the last reference to the executable goes.
  virtual uint64_t size_bytes() const = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string_view name() const = 0;
  // Verifies `module` and prepares its entry function (@main, or the only
  // public function) for execution.
  virtual StatusOr<std::unique_ptr<Executable>> Compile(std::shared_ptr<const ir::Module> module,
                                                        const CompileOptions& options) const = 0;
  StatusOr<std::unique_ptr<Executable>> Compile(std::shared_ptr<const ir::Module> module) const {
    return Compile(std::move(module), CompileOptions{});
  }
  // The jit/passes pipeline (passes::AddPipeline's spec) that CompileProgram
  // runs in front of Compile; "" = none (the interpreter evaluates the
  // program as written).
  virtual std::string_view pipeline() const { return ""; }
  // Target settings for that pipeline (the cpu device: its fusion policy).
  virtual void ConfigurePipeline(passes::PipelineOptions& options) const { (void)options; }
  // Whether this device runs ops like `op` (CompileProgram asks for every op
  // after the pipeline): OK, or UNIMPLEMENTED saying why not. By default
  // what jit/eval runs (the interpreter, and the cpu device's per-op
  // fallback); a device with its own op set overrides it.
  virtual Status CheckOp(const ir::Op& op) const { return eval::CheckEvaluable(op); }

  // Bytes from which Deserialize rebuilds `executable` (compiled by this
  // device) without generating code again: what the disk cache stores.
  // Devices without a compiled form answer UNIMPLEMENTED (the daemon then
  // stores the program text and compiles it again).
  virtual StatusOr<std::string> Serialize(const Executable& executable) const {
    return Unimplemented("device '" + std::string(name()) + "' has no serialized executables");
  }
  virtual StatusOr<std::unique_ptr<Executable>> Deserialize(std::string_view bytes) const {
    return Unimplemented("device '" + std::string(name()) + "' has no serialized executables");
  }
  // What besides the program decides this device's compiled code, for
  // cache keys (the cuda device: sm, PTX version, LLVM's and the PTX
  // assembler's versions, its flags — CudaCompileFingerprint); "" = only
  // the program and the build. A cache that keys entries by it misses when
  // the toolchain or the GPU changes instead of loading stale code.
  virtual std::string compile_target() const { return {}; }
  // A device-resident buffer of `type` (uninitialized), counted against
  // `account` (a client's: --max-device-bytes; null: the device's own).
  // UNIMPLEMENTED for devices whose executables run on host memory.
  virtual StatusOr<std::unique_ptr<DeviceBuffer>> AllocateBuffer(
      const ir::Type& type, std::shared_ptr<MemoryAccount> account) const {
    return Unimplemented("device '" + std::string(name()) + "' has no device-resident buffers");
  }
};

// The devices this build has ("interpreter").
std::vector<std::string> DeviceNames();
// NOT_FOUND naming the known devices when `name` is not one of them.
StatusOr<std::unique_ptr<Device>> CreateDevice(std::string_view name);

}  // namespace jitd::devices

#endif  // JITD_DEVICES_DEVICE_H_
