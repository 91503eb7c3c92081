// The CPU device: plans a thunk sequence for the entry function, emits all
// of the program's kernels into one LLVM module, JIT-compiles it, and runs
// thunks over an arena of temporaries packed by liveness.
#include "devices/cpu/cpu_device.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "devices/cpu/cpu_jit.h"
#include "devices/cpu/runtime/blas_core.h"
#include "devices/cpu/runtime/library_op.h"
#include "devices/cpu/thread_pool.h"
#include "jit/codegen/fusion.h"
#include "jit/codegen/cpu/cpu_kernel_emitter.h"
#include "jit/codegen/cpu/cpu_region_emitter.h"
#include "jit/codegen/target_math.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/buffer_assignment.h"
#include "jit/passes/fusion.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

namespace jitd::cpu {

using devices::ExecuteOptions;
using eval::RuntimeValue;
using ir::Op;
using ir::OpCode;

namespace {

constexpr int64_t kAlignment = 64;
// Calls stop being planned in place (the interpreter runs them) once this
// many ops, or four times the module's, have been planned.
constexpr int64_t kMinPlanBudget = int64_t{1} << 18;
// Code generation per program: at most this many distinct kernels, holding
// at most this many ops (codegen::KernelOps) together; the interpreter runs
// the fusion ops past either. LLVM takes ~1.5 ms per kernel plus ~40-90 us
// per op here, so this bounds a compile's LLVM time to ~6 s: a program of
// 10^6 ops that are all different (no two kernels alike) compiles in
// seconds and runs partly interpreted. The models use < 40 distinct kernels
// of < 3,000 ops in all.
constexpr size_t kMaxProgramKernels = 4096;
constexpr size_t kMaxProgramKernelOps = size_t{1} << 16;

// Temporaries' arena: allocated with kAlignment, so freed with it too.
struct AlignedDelete {
  void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(kAlignment)); }
};
using Arena = std::unique_ptr<uint8_t[], AlignedDelete>;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Where a value lives during a run.
struct BufferRef {
  enum class Kind : uint8_t { kNone, kArg, kOutput, kTemp, kConstant, kBoxed };
  Kind kind = Kind::kNone;
  int32_t index = 0;
  bool operator==(const BufferRef& o) const { return kind == o.kind && index == o.index; }
};

struct ConstantSlot {
  const Op* op = nullptr;
  bool needs_seed = false;  // an elided dense_resource: filled per seed
  bool referenced = false;  // some thunk reads it as a buffer
  ir::Literal literal;      // materialized (when referenced and !needs_seed)
};

struct Program;
class Thunk;

// Elided resources materialized for one (seed, fill). `stamp` is unique to
// this materialization (never reused in the process): library ops may
// cache what they derive from these buffers (RunContext::operand_stamps).
struct SeededSet {
  std::vector<ir::Literal> values;
  uint64_t stamp = 0;
};

// One execution's state.
struct ExecState {
  const Program& program;
  std::span<const void* const> args;
  std::span<void* const> outputs;
  uint8_t* arena = nullptr;
  std::vector<RuntimeValue> boxed;
  const SeededSet* seeded = nullptr;  // per-seed constants
  const ExecuteOptions& options;
  // Seconds and runs per thunk, when profiling (ExecuteOptions::profile or
  // JITD_CPU_PROFILE set).
  std::map<const Thunk*, std::pair<double, int64_t>>* profile = nullptr;
  // Each thunk's run, when tracing (ExecuteOptions::trace): the thunk, its
  // start (steady_clock nanoseconds) and duration; named after the run.
  struct Span {
    const Thunk* thunk;
    int64_t start_nanos;
    int64_t duration_nanos;
  };
  std::vector<Span>* spans = nullptr;
  size_t max_spans = 0;
  uint64_t dropped_spans = 0;

  void* Ptr(BufferRef r) const;
};

class Thunk {
 public:
  virtual ~Thunk() = default;
  virtual Status Run(ExecState& state) const = 0;
  // "kernel jitd_k3", "library stablehlo.dot_general", ... (profiles).
  virtual std::string label() const = 0;
  // Where its op is in the program text (line 0: nowhere): the call site
  // of profile rows and trace events.
  const ir::Location& loc() const { return loc_; }
  void set_loc(const ir::Location& loc) { loc_ = loc; }

 private:
  ir::Location loc_;
};
using ThunkSequence = std::vector<std::unique_ptr<Thunk>>;

// Past the deadline or cancelled (devices::CheckStop): checked before every
// thunk, every while iteration, and between a kernel's slices.
Status CheckDeadline(const ExecState& state) { return devices::CheckStop(state.options); }

Status RunSequence(const ThunkSequence& thunks, ExecState& state) {
  for (const auto& thunk : thunks) {
    JITD_RETURN_IF_ERROR(CheckDeadline(state));
    if (!state.profile && !state.spans) {
      JITD_RETURN_IF_ERROR(thunk->Run(state));
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    Status s = thunk->Run(state);
    const int64_t nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
            .count();
    if (state.profile) {
      auto& entry = (*state.profile)[thunk.get()];
      entry.first += static_cast<double>(nanos) * 1e-9;
      entry.second += 1;
    }
    if (state.spans) {
      if (state.spans->size() < state.max_spans) {
        state.spans->push_back(
            {thunk.get(),
             std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count(),
             nanos});
      } else {
        ++state.dropped_spans;
      }
    }
    JITD_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

// A JIT-compiled sort comparator (codegen::EmitComparator).
using CompiledComparator = ComparatorFn;

// The immutable result of compilation, shared by the executable's runs.
struct Program {
  // Keeps the device's JIT (which owns the code) alive as long as any
  // executable of it.
  std::shared_ptr<const void> device;
  std::shared_ptr<const ir::Module> module;
  const ir::Function* entry = nullptr;
  std::shared_ptr<ThreadPool> pool;
  std::unique_ptr<JitCode> code;
  std::vector<ConstantSlot> constants;
  std::vector<int64_t> temp_offsets;
  int64_t arena_bytes = 0;
  int num_boxed = 0;
  std::vector<BufferRef> arg_refs;
  std::vector<BufferRef> result_refs;
  ThunkSequence thunks;
  std::vector<std::string> kernel_names;
  // Compiled sort comparators: symbols (resolved after kernel_names) and
  // the slots their LibraryOps call through, filled once the code is linked.
  std::vector<std::string> comparator_names;
  std::vector<std::unique_ptr<CompiledComparator>> comparator_slots;
  bool compile_comparators = true;  // CpuDeviceOptions::compile_sort_comparators
  // Compiled reduce_window bodies (codegen::EmitReduceWindowBody), resolved
  // after the comparators, for bodies the library does not fold itself.
  std::vector<std::string> window_body_names;
  std::vector<std::unique_ptr<WindowBodyFn>> window_body_slots;
  // Per kernel: the ops it computes (of its first use), for profiles and
  // the "kernels.txt" dump.
  std::vector<std::string> kernel_descriptions;
  CpuProgramStats stats;
  // What seeds elided weights and rng ops (eval::OpPlaces), counted once:
  // the fallback and the seeded constants evaluate ops one at a time.
  eval::OpPlaces places;
  // Executable::size_bytes, counted once built (ProgramBytes).
  uint64_t size_bytes = 0;

  // Arenas of finished runs, reused (first touch of fresh pages is costly).
  mutable std::mutex arenas_mu;
  mutable std::vector<Arena> free_arenas;
  // Elided resources materialized per seed.
  mutable std::mutex seeded_mu;
  mutable std::map<std::pair<uint64_t, eval::RandomFill>,
                   std::shared_ptr<const SeededSet>> seeded;  // by (seed, fill)
};

void* ExecState::Ptr(BufferRef r) const {
  switch (r.kind) {
    case BufferRef::Kind::kArg: return const_cast<void*>(args[static_cast<size_t>(r.index)]);
    case BufferRef::Kind::kOutput: return outputs[static_cast<size_t>(r.index)];
    case BufferRef::Kind::kTemp:
      return arena + program.temp_offsets[static_cast<size_t>(r.index)];
    case BufferRef::Kind::kConstant: {
      const ConstantSlot& c = program.constants[static_cast<size_t>(r.index)];
      const ir::Literal& lit = c.needs_seed ? seeded->values[static_cast<size_t>(r.index)] : c.literal;
      return const_cast<uint8_t*>(lit.bytes().data());
    }
    default: return nullptr;
  }
}

// "reduce <- exponential, subtract @12:5": the root op, the other ops the
// kernel computes (distinct, in order, constants left out) and where the root
// is in the source.
std::string DescribeKernel(const codegen::KernelSpec& spec) {
  auto short_name = [](const ir::Op& op) {
    std::string name(op.name());
    if (name.rfind("stablehlo.", 0) == 0) name.erase(0, 10);
    return name;
  };
  std::string out = short_name(*spec.root);
  std::vector<std::string> others;
  for (const ir::Op* op : spec.fused) {
    if (op == spec.root || op->code() == ir::OpCode::kConstant) continue;
    std::string name = short_name(*op);
    if (std::find(others.begin(), others.end(), name) == others.end()) others.push_back(name);
  }
  for (size_t i = 0; i < others.size(); ++i) out += (i == 0 ? " <- " : ", ") + others[i];
  // Multi-output fusion: "[+add]" names the extra outputs' ops.
  for (size_t i = 0; i < spec.extra_outputs.size(); ++i) {
    const ir::Op* def = spec.extra_outputs[i]->defining_op();
    out += (i == 0 ? " [+" : ", ") + (def ? short_name(*def) : std::string("?"));
    if (i + 1 == spec.extra_outputs.size()) out += "]";
  }
  if (spec.root->loc().line != 0) out += " @" + spec.root->loc().ToString();
  return out;
}

// ---- Thunks -----------------------------------------------------------------

class KernelThunk final : public Thunk {
 public:
  KernelThunk(size_t kernel, std::vector<BufferRef> params, int64_t work_items, int64_t min_chunk)
      : kernel_(kernel), params_(std::move(params)), work_items_(work_items), min_chunk_(min_chunk) {}
  // A split reduction's second phase: kernel `combine` over `items` (its
  // first phase, `kernel`, wrote the partials buffer, the last param).
  void SetCombine(size_t combine, int64_t items, int64_t min_chunk) {
    combine_ = combine;
    combine_items_ = items;
    combine_min_chunk_ = min_chunk;
  }
  Status Run(ExecState& state) const override {
    using Fn = void (*)(void**, int64_t, int64_t);
    auto fn = reinterpret_cast<Fn>(state.program.code->addresses()[kernel_]);
    void* ptrs[64];
    std::vector<void*> heap;
    void** p = ptrs;
    if (params_.size() > 64) {
      heap.resize(params_.size());
      p = heap.data();
    }
    for (size_t i = 0; i < params_.size(); ++i) p[i] = state.Ptr(params_[i]);
    auto combine = combine_items_ > 0 ? reinterpret_cast<Fn>(state.program.code->addresses()[combine_]) : nullptr;
    const ExecuteOptions& options = state.options;
    const int64_t slice = std::max<int64_t>(1, min_chunk_ / 4);
    const int64_t combine_slice = std::max<int64_t>(1, combine_min_chunk_ / 4);
    // Without a deadline or cancel flag, or when each phase is one slice
    // (RunSequence checked just before), no checks inside.
    if ((!options.deadline && !options.cancel) || (work_items_ <= slice && combine_items_ <= combine_slice)) {
      state.program.pool->ParallelFor(work_items_, min_chunk_, [fn, p](int64_t b, int64_t e) { fn(p, b, e); });
      if (combine) {
        state.program.pool->ParallelFor(combine_items_, combine_min_chunk_,
                                        [combine, p](int64_t b, int64_t e) { combine(p, b, e); });
      }
      return Status::Ok();
    }
    // With a deadline or a cancel flag: the pool's chunks run in slices of a
    // quarter of the planner's minimum chunk (~256 KiB of memory traffic),
    // checking before each; once one check fails, every thread skips what
    // is left.
    std::atomic<bool> stopped{false};
    auto sliced = [&](Fn f, int64_t step) {
      return [&, f, step](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; b += step) {
          if (stopped.load(std::memory_order_relaxed) || devices::ShouldStop(options)) {
            stopped.store(true, std::memory_order_relaxed);
            return;
          }
          f(p, b, std::min(end, b + step));
        }
      };
    };
    state.program.pool->ParallelFor(work_items_, min_chunk_, sliced(fn, slice));
    if (combine && !stopped.load(std::memory_order_relaxed)) {
      state.program.pool->ParallelFor(combine_items_, combine_min_chunk_, sliced(combine, combine_slice));
    }
    if (stopped.load(std::memory_order_relaxed)) {
      Status why = CheckDeadline(state);
      return why.ok() ? Status(StatusCode::kDeadlineExceeded, "execution ran past its deadline") : why;
    }
    return Status::Ok();
  }
  std::string label() const override { return "kernel jitd_k" + std::to_string(kernel_); }

 private:
  size_t kernel_;
  std::vector<BufferRef> params_;
  int64_t work_items_;
  int64_t min_chunk_;
  size_t combine_ = 0;
  int64_t combine_items_ = 0;  // 0: not a split reduction
  int64_t combine_min_chunk_ = 1;
};

// Reads a value for the interpreter.
RuntimeValue ReadValue(const ExecState& state, BufferRef ref, const ir::Type& type) {
  if (ref.kind == BufferRef::Kind::kBoxed) return state.boxed[static_cast<size_t>(ref.index)];
  const auto* p = static_cast<const uint8_t*>(state.Ptr(ref));
  std::vector<uint8_t> bytes(p, p + type.byte_size());
  return RuntimeValue(*ir::Literal::FromBytes(type, std::move(bytes)));
}

Status WriteValue(ExecState& state, BufferRef ref, RuntimeValue value, const ir::Type& type) {
  if (ref.kind == BufferRef::Kind::kBoxed) {
    state.boxed[static_cast<size_t>(ref.index)] = std::move(value);
    return Status::Ok();
  }
  if (!value.is_tensor() || value.literal().type() != type) {
    return Internal("a fallback op produced " + value.type().ToString() + " where " +
                    type.ToString() + " was planned");
  }
  std::memcpy(state.Ptr(ref), value.literal().bytes().data(), value.literal().bytes().size());
  return Status::Ok();
}

class FallbackThunk final : public Thunk {
 public:
  FallbackThunk(const Op* op, std::vector<const ir::Value*> values, std::vector<BufferRef> refs,
                std::vector<BufferRef> results)
      : op_(op), values_(std::move(values)), refs_(std::move(refs)), results_(std::move(results)) {}
  Status Run(ExecState& state) const override {
    std::vector<RuntimeValue> bindings;
    bindings.reserve(values_.size());
    for (size_t i = 0; i < values_.size(); ++i) {
      bindings.push_back(ReadValue(state, refs_[i], values_[i]->type()));
    }
    // Infeed/outfeed reach the daemon's queues through the same hooks.
    eval::EvalOptions options = devices::ToEvalOptions(state.options);
    options.op_places = &state.program.places;
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out,
                          eval::EvaluateOp(*state.program.module, *op_, values_, bindings, options));
    if (out.size() != results_.size()) return Internal("fallback result count mismatch");
    for (size_t i = 0; i < out.size(); ++i) {
      JITD_RETURN_IF_ERROR(WriteValue(state, results_[i], std::move(out[i]), op_->result(i)->type()));
    }
    return Status::Ok();
  }
  std::string label() const override { return "fallback " + std::string(op_->name()); }

 private:
  const Op* op_;
  std::vector<const ir::Value*> values_;
  std::vector<BufferRef> refs_;
  std::vector<BufferRef> results_;
};

class LibraryThunk final : public Thunk {
 public:
  LibraryThunk(std::string name, std::unique_ptr<LibraryOp> op, std::vector<BufferRef> operands,
               std::vector<BufferRef> results)
      : name_(std::move(name)), op_(std::move(op)), operands_(std::move(operands)),
        results_(std::move(results)) {}
  std::string label() const override { return "library " + name_; }
  Status Run(ExecState& state) const override {
    std::vector<const void*> in;
    std::vector<void*> out;
    // Constants are immutable: stamp 1 for the program's own (they live as
    // long as this thunk), the materialization's stamp for seeded ones.
    std::vector<uint64_t> stamps(operands_.size(), 0);
    bool stamped = false;
    for (size_t i = 0; i < operands_.size(); ++i) {
      const BufferRef r = operands_[i];
      in.push_back(state.Ptr(r));
      if (r.kind != BufferRef::Kind::kConstant) continue;
      const bool seeded = state.program.constants[static_cast<size_t>(r.index)].needs_seed;
      stamps[i] = seeded ? state.seeded->stamp : 1;
      stamped = true;
    }
    for (BufferRef r : results_) out.push_back(state.Ptr(r));
    ParallelFor parallel_for = [&state](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
      state.program.pool->ParallelFor(n, 1, fn);
    };
    RunContext context;
    context.parallel_for = &parallel_for;
    context.deadline = state.options.deadline;
    context.cancel = state.options.cancel;
    std::atomic<bool> stopped{false};
    context.stopped = &stopped;
    if (stamped) context.operand_stamps = stamps;
    Status status = op_->Run(in, out, context);
    // The library stops past the deadline or when cancelled: with an error
    // from its own loops, or by skipping slices of its parallel loops.
    if (status.ok() && !stopped.load(std::memory_order_relaxed)) return status;
    if (!status.ok() && status.code() != StatusCode::kDeadlineExceeded) return status;
    if (state.options.cancel && state.options.cancel->load(std::memory_order_relaxed)) {
      return eval::CancelledStatus();
    }
    if (!status.ok()) return status;  // the op's own "... ran past its deadline"
    return Status(StatusCode::kDeadlineExceeded, "library " + name_ + " ran past its deadline");
  }

 private:
  std::string name_;
  std::unique_ptr<LibraryOp> op_;
  std::vector<BufferRef> operands_;
  std::vector<BufferRef> results_;
};

// Copies values (tensors or boxed) from `from` to `to`, staging the sources
// that are themselves destinations so a permutation stays correct.
Status CopyValues(ExecState& state, const std::vector<BufferRef>& from,
                  const std::vector<BufferRef>& to, const std::vector<int64_t>& bytes) {
  std::vector<std::vector<uint8_t>> staged(from.size());
  std::vector<RuntimeValue> staged_boxed(from.size());
  std::vector<bool> is_staged(from.size(), false);
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == to[i]) continue;
    if (std::find(to.begin(), to.end(), from[i]) == to.end()) continue;
    is_staged[i] = true;
    if (from[i].kind == BufferRef::Kind::kBoxed) {
      staged_boxed[i] = state.boxed[static_cast<size_t>(from[i].index)];
    } else {
      const auto* p = static_cast<const uint8_t*>(state.Ptr(from[i]));
      staged[i].assign(p, p + bytes[i]);
    }
  }
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == to[i] || is_staged[i]) continue;
    if (to[i].kind == BufferRef::Kind::kBoxed) {
      state.boxed[static_cast<size_t>(to[i].index)] = state.boxed[static_cast<size_t>(from[i].index)];
    } else if (bytes[i] > 0) {
      std::memcpy(state.Ptr(to[i]), state.Ptr(from[i]), static_cast<size_t>(bytes[i]));
    }
  }
  for (size_t i = 0; i < from.size(); ++i) {
    if (!is_staged[i]) continue;
    if (to[i].kind == BufferRef::Kind::kBoxed) {
      state.boxed[static_cast<size_t>(to[i].index)] = std::move(staged_boxed[i]);
    } else if (bytes[i] > 0) {
      std::memcpy(state.Ptr(to[i]), staged[i].data(), static_cast<size_t>(bytes[i]));
    }
  }
  return Status::Ok();
}

class CopyThunk final : public Thunk {
 public:
  CopyThunk(std::vector<BufferRef> from, std::vector<BufferRef> to, std::vector<int64_t> bytes)
      : from_(std::move(from)), to_(std::move(to)), bytes_(std::move(bytes)) {}
  Status Run(ExecState& state) const override { return CopyValues(state, from_, to_, bytes_); }
  std::string label() const override { return "copy"; }

 private:
  std::vector<BufferRef> from_, to_;
  std::vector<int64_t> bytes_;
};

// A region's plan: its thunks and where its terminator's operands live.
struct RegionPlan {
  ThunkSequence thunks;
  std::vector<BufferRef> returns;
};

class WhileThunk final : public Thunk {
 public:
  WhileThunk(std::vector<BufferRef> init, std::vector<BufferRef> state, std::vector<int64_t> bytes,
             RegionPlan cond, RegionPlan body)
      : init_(std::move(init)), state_(std::move(state)), bytes_(std::move(bytes)),
        cond_(std::move(cond)), body_(std::move(body)) {}
  Status Run(ExecState& s) const override {
    JITD_RETURN_IF_ERROR(CopyValues(s, init_, state_, bytes_));
    while (true) {
      JITD_RETURN_IF_ERROR(CheckDeadline(s));
      JITD_RETURN_IF_ERROR(RunSequence(cond_.thunks, s));
      if (*static_cast<const uint8_t*>(s.Ptr(cond_.returns[0])) == 0) return Status::Ok();
      JITD_RETURN_IF_ERROR(RunSequence(body_.thunks, s));
      JITD_RETURN_IF_ERROR(CopyValues(s, body_.returns, state_, bytes_));
    }
  }
  std::string label() const override { return "while (own time + body)"; }

 private:
  std::vector<BufferRef> init_, state_;
  std::vector<int64_t> bytes_;
  RegionPlan cond_, body_;
};

// if (pred: i1) and case (index: i32; out of range = the last branch).
class BranchThunk final : public Thunk {
 public:
  BranchThunk(bool is_if, BufferRef selector, std::vector<RegionPlan> branches,
              std::vector<BufferRef> results, std::vector<int64_t> bytes)
      : is_if_(is_if), selector_(selector), branches_(std::move(branches)),
        results_(std::move(results)), bytes_(std::move(bytes)) {}
  Status Run(ExecState& s) const override {
    size_t branch;
    if (is_if_) {
      branch = *static_cast<const uint8_t*>(s.Ptr(selector_)) != 0 ? 0 : 1;
    } else {
      int32_t index;
      std::memcpy(&index, s.Ptr(selector_), sizeof(index));
      const int64_t n = static_cast<int64_t>(branches_.size());
      branch = static_cast<size_t>(index < 0 || index >= n ? n - 1 : index);
    }
    JITD_RETURN_IF_ERROR(RunSequence(branches_[branch].thunks, s));
    return CopyValues(s, branches_[branch].returns, results_, bytes_);
  }
  std::string label() const override { return is_if_ ? "if" : "case"; }

 private:
  bool is_if_;
  BufferRef selector_;
  std::vector<RegionPlan> branches_;
  std::vector<BufferRef> results_;
  std::vector<int64_t> bytes_;
};

// ---- Planning -----------------------------------------------------------------

// Values defined inside `op`'s regions.
void CollectDefined(const Op& op, std::unordered_set<const ir::Value*>& defined) {
  for (size_t r = 0; r < op.num_regions(); ++r) {
    const ir::Region& region = op.region(r);
    for (size_t b = 0; b < region.num_blocks(); ++b) {
      const ir::Block& block = region.block(b);
      for (size_t i = 0; i < block.num_args(); ++i) defined.insert(block.arg(i));
      for (const auto& inner : block.ops()) {
        for (size_t i = 0; i < inner->num_results(); ++i) defined.insert(inner->result(i));
        CollectDefined(*inner, defined);
      }
    }
  }
}

// Operands of `op` and of its nested ops that are defined outside it.
std::vector<const ir::Value*> FreeValues(const Op& op) {
  std::unordered_set<const ir::Value*> defined;
  CollectDefined(op, defined);
  std::vector<const ir::Value*> out;
  std::unordered_set<const ir::Value*> seen;
  auto visit = [&](const Op& o, auto& self) -> void {
    for (const ir::Value* v : o.operands()) {
      if (!defined.count(v) && seen.insert(v).second) out.push_back(v);
    }
    for (size_t r = 0; r < o.num_regions(); ++r) {
      for (size_t b = 0; b < o.region(r).num_blocks(); ++b) {
        for (const auto& inner : o.region(r).block(b).ops()) self(*inner, self);
      }
    }
  };
  visit(op, visit);
  return out;
}

[[maybe_unused]] bool IsLibraryCandidate(OpCode code) {
  switch (code) {
    case OpCode::kDotGeneral:
    case OpCode::kDot:
    case OpCode::kConvolution:
    case OpCode::kFft:
    case OpCode::kTriangularSolve:
    case OpCode::kCholesky:
    case OpCode::kSort:
    case OpCode::kReduceWindow:
    case OpCode::kGather:
    case OpCode::kScatter:
    case OpCode::kSelectAndScatter:
    case OpCode::kRngBitGenerator:
      return true;
    default:
      return false;
  }
}

class Planner {
 public:
  // `llvm_module` null: plan only (kernels come from a cached object).
  Planner(Program& program, llvm::Module* llvm_module)
      : p_(program), llvm_module_(llvm_module) {}

  Status Plan() {
    int64_t ops = 0;
    for (const auto& f : p_.module->functions()) {
      ir::WalkOps(static_cast<const ir::Region&>(f->body()), [&](const Op&) { ++ops; });
    }
    plan_budget_ = std::max(kMinPlanBudget, 4 * ops);
    const ir::Function& fn = *p_.entry;
    const ir::Block* block = fn.entry();
    if (!block) return InvalidArgument("entry function @" + fn.name() + " has no body");
    scopes_.push_back({});
    // Entry results produced directly into the caller's result buffers.
    const Op* term = block->terminator();
    if (!term) return InvalidArgument("entry function has no terminator");
    for (size_t i = 0; i < term->num_operands(); ++i) {
      const ir::Value* v = term->operand(i);
      const Op* def = v->defining_op();
      if (!v->type().is_tensor() || !def || def->parent_block() != block ||
          def->code() == OpCode::kConstant || output_of_.count(v)) {
        continue;
      }
      output_of_[v] = static_cast<int>(i);
    }
    for (size_t i = 0; i < block->num_args(); ++i) {
      const ir::Value* arg = block->arg(i);
      BufferRef ref = arg->type().is_tensor() ? BufferRef{BufferRef::Kind::kArg, static_cast<int32_t>(i)}
                                              : NewBoxed();
      p_.arg_refs.push_back(ref);
      Bind(arg, ref);
    }
    inlining_.insert(&fn);
    RegionPlan plan;
    JITD_RETURN_IF_ERROR(PlanBlock(*block, plan));
    // Results not produced in place are copied there at the end.
    std::vector<BufferRef> from, to;
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < plan.returns.size(); ++i) {
      const BufferRef r = plan.returns[i];
      p_.result_refs.push_back(r);
      const ir::Type& t = term->operand(i)->type();
      if (!t.is_tensor()) continue;
      const BufferRef out{BufferRef::Kind::kOutput, static_cast<int32_t>(i)};
      if (r == out) continue;
      from.push_back(r);
      to.push_back(out);
      bytes.push_back(t.byte_size());
      Use(r);
    }
    if (!from.empty()) {
      plan.thunks.push_back(std::make_unique<CopyThunk>(std::move(from), std::move(to), std::move(bytes)));
    }
    p_.thunks = std::move(plan.thunks);
    AssignBuffers();
    return Status::Ok();
  }

 private:
  struct Temp {
    int64_t bytes = 0;
    int64_t def = 0;
    int64_t last_use = 0;
    size_t depth = 0;
  };
  struct Scope {
    std::unordered_map<const ir::Value*, BufferRef> refs;
    bool barrier = false;  // an inlined callee sees nothing outside
  };

  BufferRef NewBoxed() { return {BufferRef::Kind::kBoxed, p_.num_boxed++}; }

  BufferRef NewTemp(const ir::Type& type) {
    if (!type.is_tensor()) return NewBoxed();
    Temp t;
    t.bytes = std::max<int64_t>(type.byte_size(), 1);
    t.def = pos_;
    t.last_use = pos_;
    t.depth = open_.size();
    temps_.push_back(t);
    return {BufferRef::Kind::kTemp, static_cast<int32_t>(temps_.size() - 1)};
  }

  // Scratch used within one thunk (a split reduction's partials).
  BufferRef NewScratch(int64_t bytes) {
    Temp t;
    t.bytes = std::max<int64_t>(bytes, 1);
    t.def = pos_;
    t.last_use = pos_;
    t.depth = open_.size();
    temps_.push_back(t);
    return {BufferRef::Kind::kTemp, static_cast<int32_t>(temps_.size() - 1)};
  }

  // The buffer for result `v` of an op planned at this level.
  BufferRef NewResult(const ir::Value* v) {
    auto it = output_of_.find(v);
    if (it != output_of_.end() && open_.empty() && scopes_.size() == 1) {
      return {BufferRef::Kind::kOutput, it->second};
    }
    return NewTemp(v->type());
  }

  void Bind(const ir::Value* v, BufferRef r) { scopes_.back().refs[v] = r; }

  StatusOr<BufferRef> Lookup(const ir::Value* v) {
    for (size_t i = scopes_.size(); i-- > 0;) {
      auto it = scopes_[i].refs.find(v);
      if (it != scopes_[i].refs.end()) return it->second;
      if (scopes_[i].barrier) break;
    }
    if (const Op* def = v->defining_op(); def && def->code() == OpCode::kConstant) {
      // Constants are materialized where a buffer is needed.
      p_.constants.push_back({def, false, false, {}});
      const BufferRef r{BufferRef::Kind::kConstant, static_cast<int32_t>(p_.constants.size() - 1)};
      scopes_.back().refs[v] = r;
      return r;
    }
    const Op* def = v->defining_op();
    return Internal("value " + (def ? "of '" + std::string(def->name()) + "' at " + def->loc().ToString()
                                    : std::string("(a block argument)")) +
                    " used before it was planned");
  }

  // Records a read of `r` at the current position.
  void Use(BufferRef r) {
    if (r.kind == BufferRef::Kind::kConstant) {
      p_.constants[static_cast<size_t>(r.index)].referenced = true;
      return;
    }
    if (r.kind != BufferRef::Kind::kTemp) return;
    Temp& t = temps_[static_cast<size_t>(r.index)];
    if (t.depth < open_.size()) {
      open_[t.depth].push_back(r.index);
    } else {
      t.last_use = std::max(t.last_use, pos_);
    }
  }

  StatusOr<BufferRef> UseValue(const ir::Value* v) {
    JITD_ASSIGN_OR_RETURN(BufferRef r, Lookup(v));
    Use(r);
    return r;
  }

  void OpenOp() { open_.emplace_back(); }
  // Extends temps used inside the op from outside to its end.
  void CloseOp() {
    std::vector<int32_t> pending = std::move(open_.back());
    open_.pop_back();
    for (int32_t id : pending) {
      Temp& t = temps_[static_cast<size_t>(id)];
      if (t.depth < open_.size()) {
        open_[t.depth].push_back(id);
      } else {
        t.last_use = std::max(t.last_use, pos_);
      }
    }
  }
  void KeepAlive(BufferRef r) {
    if (r.kind == BufferRef::Kind::kTemp) {
      Temp& t = temps_[static_cast<size_t>(r.index)];
      t.last_use = std::max(t.last_use, pos_);
    }
  }

  static std::vector<int64_t> ByteSizes(const Op& op) {
    std::vector<int64_t> bytes;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const ir::Type& t = op.result(i)->type();
      bytes.push_back(t.is_tensor() ? t.byte_size() : 0);
    }
    return bytes;
  }

  Status PlanBlock(const ir::Block& block, RegionPlan& plan) {
    for (const auto& op_ptr : block.ops()) {
      const Op& op = *op_ptr;
      ++pos_;
      if (&op == block.terminator() &&
          (op.code() == OpCode::kReturn || op.code() == OpCode::kFuncReturn)) {
        for (const ir::Value* v : op.operands()) {
          JITD_ASSIGN_OR_RETURN(BufferRef r, UseValue(v));
          plan.returns.push_back(r);
        }
        return Status::Ok();
      }
      if (op.code() == OpCode::kConstant) continue;
      switch (op.code()) {
        case OpCode::kFusion:
          JITD_RETURN_IF_ERROR(PlanFusionOp(op, plan));
          continue;
        case OpCode::kWhile:
          JITD_RETURN_IF_ERROR(PlanWhile(op, plan));
          continue;
        case OpCode::kIf:
        case OpCode::kCase:
          JITD_RETURN_IF_ERROR(PlanBranches(op, plan));
          continue;
        case OpCode::kFuncCall:
          if (Status s = PlanCall(op, plan); s.code() != StatusCode::kUnimplemented) {
            JITD_RETURN_IF_ERROR(s);
            continue;
          }
          break;  // recursive: the interpreter runs it
        default:
          break;
      }
#ifdef JITD_CPU_HAVE_LIBRARY
      if (IsLibraryCandidate(op.code()) && !ir::HasQuantizedTypes(op)) {
        const LibraryOpOptions library_options = LibraryOptions(op);
        auto library = CreateLibraryOp(op, library_options);
        if (library.ok() && *library) {
          if (library_options.compiled_comparator) ++p_.stats.compiled_comparators;
          std::vector<BufferRef> in, out;
          for (const ir::Value* v : op.operands()) {
            JITD_ASSIGN_OR_RETURN(BufferRef r, UseValue(v));
            in.push_back(r);
          }
          for (size_t i = 0; i < op.num_results(); ++i) {
            const BufferRef r = NewResult(op.result(i));
            Bind(op.result(i), r);
            out.push_back(r);
          }
          plan.thunks.push_back(std::make_unique<LibraryThunk>(std::string(op.name()), std::move(*library),
                                                               std::move(in), std::move(out)));
          plan.thunks.back()->set_loc(op.loc());
          ++p_.stats.library_ops;
          continue;
        }
      }
#endif
      JITD_RETURN_IF_ERROR(PlanFallback(op, plan));
    }
    return InvalidArgument("block ends without a terminator");
  }

  Status PlanFusionOp(const Op& op, RegionPlan& plan) {
    // nullopt when codegen cannot emit it (a hand-written fusion, or one of
    // more than codegen::kMaxKernelOps ops): the interpreter runs it then.
    std::optional<codegen::KernelSpec> spec = codegen::KernelSpecOfFusion(op, codegen::HostTargetMath());
    if (!spec) return PlanFallback(op, plan);
    std::vector<const ir::Value*> reads(op.operands().begin(), op.operands().end());
    std::vector<const ir::Value*> writes;
    for (size_t i = 0; i < op.num_results(); ++i) writes.push_back(op.result(i));
    Status planned = PlanKernel(std::move(*spec), reads, writes, plan);
    // A kernel that would recompute too much (codegen::kMaxKernelComputations).
    if (planned.code() == StatusCode::kResourceExhausted) return PlanFallback(op, plan);
    return planned;
  }

  // One kernel thunk for `spec`, reading `reads` (one per spec.inputs) and
  // writing `writes` (the root's results, then the extra outputs).
  // RESOURCE_EXHAUSTED, and nothing planned, when codegen refuses the kernel
  // for its size (the caller interprets the op instead).
  Status PlanKernel(codegen::KernelSpec spec, const std::vector<const ir::Value*>& reads,
                    const std::vector<const ir::Value*>& writes, RegionPlan& plan) {
    // Structurally equal kernels (repeated layers) are emitted once, and
    // refused once.
    const std::string key = codegen::KernelKey(spec);
    auto [it, is_new] = emitted_.try_emplace(key);
    if (is_new) {
      spec.name = "jitd_k" + std::to_string(p_.kernel_names.size());
      const size_t ops = codegen::KernelOps(spec);
      StatusOr<codegen::CpuKernelPlan> emitted =
          kernel_ops_ + ops > kMaxProgramKernelOps || p_.kernel_names.size() >= kMaxProgramKernels
              ? StatusOr<codegen::CpuKernelPlan>(ResourceExhausted("the program's kernels are over budget"))
              : codegen::EmitCpuKernel(llvm_module_ ? *llvm_module_ : *scratch_module(), spec);
      if (emitted.ok()) kernel_ops_ += ops;
      if (!emitted.ok()) {
        if (emitted.status().code() != StatusCode::kResourceExhausted) return emitted.status();
        it->second = {kRefusedKernel, {}};
        refused_[key] = emitted.status();
      } else {
        it->second = {p_.kernel_names.size(), *emitted};
      }
    }
    if (it->second.first == kRefusedKernel) return refused_.at(key);
    std::vector<BufferRef> params;
    for (const ir::Value* v : reads) {
      JITD_ASSIGN_OR_RETURN(BufferRef r, UseValue(v));
      params.push_back(r);
    }
    for (const ir::Value* v : writes) {
      const BufferRef r = NewResult(v);
      Bind(v, r);
      params.push_back(r);
    }
    if (is_new) {
      const codegen::CpuKernelPlan& info = it->second.second;
      p_.kernel_names.push_back(spec.name);
      p_.kernel_descriptions.push_back(DescribeKernel(spec));
      // A split reduction's phase 2 follows its phase 1.
      if (info.split_chunks > 0) {
        p_.kernel_names.push_back(codegen::CombineSymbol(spec.name));
        p_.kernel_descriptions.push_back("(combine of " + spec.name + ")");
      }
      ++p_.stats.unique_kernels;
    }
    const auto& [kernel, info] = it->second;
    if (info.split_chunks > 0) params.push_back(NewScratch(info.partial_bytes));
    auto thunk = std::make_unique<KernelThunk>(kernel, std::move(params), info.work_items, info.min_chunk);
    if (info.split_chunks > 0) {
      thunk->SetCombine(kernel + 1, info.combine_items, info.combine_min_chunk);
      ++p_.stats.split_reductions;
    }
    thunk->set_loc(spec.root->loc());
    plan.thunks.push_back(std::move(thunk));
    ++p_.stats.kernels;
    for (const Op* op : spec.fused) {
      if (op->code() != OpCode::kConstant) ++p_.stats.kernel_ops;
    }
    return Status::Ok();
  }

  // A sort's comparator compiled into the program's module (codegen::
  // EmitComparator), called through a slot Build fills once the code is
  // linked; a serialized program's object file holds the symbol. Comparators
  // codegen cannot compile (or all of them, when
  // CpuDeviceOptions::compile_sort_comparators is off) stay with the
  // library's interpreted region.
  LibraryOpOptions LibraryOptions(const Op& op) {
    LibraryOpOptions options;
    if (op.code() == OpCode::kReduceWindow) return WindowBodyOptions(op);
    if (op.code() != OpCode::kSort || !p_.compile_comparators || !codegen::IsEmittableComparator(op)) {
      return options;
    }
    const std::string name = "jitd_cmp" + std::to_string(p_.comparator_names.size());
    // Emitted on both paths (into a scratch module when loading), so a
    // comparator codegen rejects is rejected alike and the symbol lists match.
    if (!codegen::EmitComparator(llvm_module_ ? *llvm_module_ : *scratch_module(), op, name).ok()) {
      return options;
    }
    p_.comparator_names.push_back(name);
    p_.comparator_slots.push_back(std::make_unique<CompiledComparator>(nullptr));
    options.compiled_comparator = p_.comparator_slots.back().get();
    return options;
  }

  // A reduce_window body the library does not fold itself, compiled into
  // the program's module and called through a slot Build fills (as sort
  // comparators are).
  LibraryOpOptions WindowBodyOptions(const Op& op) {
    LibraryOpOptions options;
    auto plain = CreateLibraryOp(op);
    if ((plain.ok() && *plain) || !codegen::IsEmittableReduceWindowBody(op)) return options;
    const std::string name = "jitd_wbody" + std::to_string(p_.window_body_names.size());
    if (!codegen::EmitReduceWindowBody(llvm_module_ ? *llvm_module_ : *scratch_module(), op, name).ok()) {
      return options;
    }
    p_.window_body_names.push_back(name);
    p_.window_body_slots.push_back(std::make_unique<WindowBodyFn>(nullptr));
    options.compiled_window_body = p_.window_body_slots.back().get();
    return options;
  }

  // Planning without emission still emits into a module that is thrown
  // away (cheap next to optimisation and machine code): whether codegen
  // refuses a kernel (kMaxKernelComputations) or a comparator is known only
  // then, and the symbol lists must match the object files'.
  llvm::Module* scratch_module() {
    if (!scratch_) {
      scratch_context_ = std::make_unique<llvm::LLVMContext>();
      scratch_ = std::make_unique<llvm::Module>("scratch", *scratch_context_);
    }
    return scratch_.get();
  }

  Status PlanFallback(const Op& op, RegionPlan& plan) {
    std::vector<const ir::Value*> values = FreeValues(op);
    std::vector<BufferRef> refs;
    for (const ir::Value* v : values) {
      JITD_ASSIGN_OR_RETURN(BufferRef r, UseValue(v));
      refs.push_back(r);
    }
    std::vector<BufferRef> results;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const BufferRef r = NewResult(op.result(i));
      Bind(op.result(i), r);
      results.push_back(r);
    }
    plan.thunks.push_back(std::make_unique<FallbackThunk>(&op, std::move(values), std::move(refs),
                                                          std::move(results)));
    plan.thunks.back()->set_loc(op.loc());
    ++p_.stats.fallback_ops;
    ++p_.stats.fallback_by_op[std::string(op.name())];
    return Status::Ok();
  }

  Status PlanWhile(const Op& op, RegionPlan& plan) {
    std::vector<BufferRef> init, state;
    for (const ir::Value* v : op.operands()) {
      JITD_ASSIGN_OR_RETURN(BufferRef r, UseValue(v));
      init.push_back(r);
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      const BufferRef r = NewResult(op.result(i));
      state.push_back(r);
    }
    OpenOp();
    RegionPlan regions[2];
    for (size_t k = 0; k < 2; ++k) {
      const ir::Block& block = op.region(k).block(0);
      scopes_.push_back({});
      for (size_t i = 0; i < block.num_args(); ++i) Bind(block.arg(i), state[i]);
      Status s = PlanBlock(block, regions[k]);
      scopes_.pop_back();
      JITD_RETURN_IF_ERROR(s);
    }
    CloseOp();
    for (BufferRef r : state) KeepAlive(r);
    for (size_t i = 0; i < op.num_results(); ++i) Bind(op.result(i), state[i]);
    plan.thunks.push_back(std::make_unique<WhileThunk>(std::move(init), std::move(state), ByteSizes(op),
                                                       std::move(regions[0]), std::move(regions[1])));
    plan.thunks.back()->set_loc(op.loc());
    ++p_.stats.control_ops;
    return Status::Ok();
  }

  Status PlanBranches(const Op& op, RegionPlan& plan) {
    JITD_ASSIGN_OR_RETURN(BufferRef selector, UseValue(op.operand(0)));
    std::vector<BufferRef> results;
    for (size_t i = 0; i < op.num_results(); ++i) results.push_back(NewResult(op.result(i)));
    OpenOp();
    std::vector<RegionPlan> branches(op.num_regions());
    for (size_t k = 0; k < op.num_regions(); ++k) {
      scopes_.push_back({});
      Status s = PlanBlock(op.region(k).block(0), branches[k]);
      scopes_.pop_back();
      JITD_RETURN_IF_ERROR(s);
    }
    CloseOp();
    for (BufferRef r : results) KeepAlive(r);
    for (size_t i = 0; i < op.num_results(); ++i) Bind(op.result(i), results[i]);
    plan.thunks.push_back(std::make_unique<BranchThunk>(op.code() == OpCode::kIf, selector,
                                                        std::move(branches), std::move(results),
                                                        ByteSizes(op)));
    plan.thunks.back()->set_loc(op.loc());
    ++p_.stats.control_ops;
    return Status::Ok();
  }

  // func.call: the callee's block is planned in place (inlined), its
  // arguments aliasing the caller's operands. Recursion is UNIMPLEMENTED
  // here (the caller falls back to the interpreter).
  Status PlanCall(const Op& op, RegionPlan& plan) {
    const auto* callee_attr = op.attr("callee") ? op.attr("callee")->get_if<ir::SymbolRefAttr>() : nullptr;
    const ir::Function* callee = callee_attr ? p_.module->FindFunction(callee_attr->name) : nullptr;
    if (!callee || !callee->entry() || inlining_.count(callee) || inlining_.size() > 64) {
      return Unimplemented("call not inlined");
    }
    // Planning recurses once per scope: calls are planned in place only while
    // few are open (so at most twice ir::kMaxRegionNesting nest), and only
    // while the ops planned stay within the budget (a tree of calls the
    // inline pass left would otherwise be planned exponentially often).
    if (scopes_.size() > static_cast<size_t>(ir::kMaxRegionNesting) || pos_ > plan_budget_) {
      return Unimplemented("call not inlined");
    }
    std::vector<BufferRef> args;
    for (const ir::Value* v : op.operands()) {
      JITD_ASSIGN_OR_RETURN(BufferRef r, UseValue(v));
      args.push_back(r);
    }
    const ir::Block& block = *callee->entry();
    scopes_.push_back({});
    scopes_.back().barrier = true;
    for (size_t i = 0; i < block.num_args() && i < args.size(); ++i) Bind(block.arg(i), args[i]);
    inlining_.insert(callee);
    RegionPlan body;
    Status s = PlanBlock(block, body);
    inlining_.erase(callee);
    scopes_.pop_back();
    JITD_RETURN_IF_ERROR(s);
    for (auto& t : body.thunks) plan.thunks.push_back(std::move(t));
    for (size_t i = 0; i < op.num_results() && i < body.returns.size(); ++i) {
      Bind(op.result(i), body.returns[i]);
    }
    ++p_.stats.control_ops;
    return Status::Ok();
  }

  // Temporaries packed by liveness (jit/passes/buffer_assignment.h).
  void AssignBuffers() {
    intervals_.clear();
    for (const Temp& t : temps_) intervals_.push_back({t.bytes, t.def, t.last_use});
    const passes::BufferAssignment a = passes::AssignBuffers(intervals_, kAlignment);
    p_.temp_offsets = a.offsets;
    p_.arena_bytes = a.arena_bytes;
    p_.stats.arena_bytes = a.arena_bytes;
    p_.stats.unshared_bytes = a.unshared_bytes;
    assignment_ = a;
  }

 public:
  // The "buffers.txt" dump: every temporary's size, live range (thunk
  // positions) and arena offset.
  std::string BufferListing() const { return passes::DescribeAssignment(intervals_, assignment_); }

 private:
  Program& p_;
  llvm::Module* llvm_module_;
  std::unique_ptr<llvm::LLVMContext> scratch_context_;
  std::unique_ptr<llvm::Module> scratch_;
  std::vector<Scope> scopes_;
  std::vector<Temp> temps_;
  std::vector<std::vector<int32_t>> open_;
  std::unordered_map<const ir::Value*, int> output_of_;
  std::unordered_set<const ir::Function*> inlining_;
  // KernelKey -> (kernel index, its info); the index is kRefusedKernel when
  // codegen refused the kernel (its status in refused_).
  std::unordered_map<std::string, std::pair<size_t, codegen::CpuKernelPlan>> emitted_;
  static constexpr size_t kRefusedKernel = SIZE_MAX;
  std::unordered_map<std::string, Status> refused_;
  size_t kernel_ops_ = 0;  // ops of the distinct kernels emitted
  int64_t pos_ = 0;
  int64_t plan_budget_ = 0;  // ops planned after which calls are not inlined
  std::vector<passes::BufferInterval> intervals_;
  passes::BufferAssignment assignment_;
};

// Materializes referenced constants (those needing a seed only per run).
Status MaterializeConstants(Program& p) {
  for (ConstantSlot& c : p.constants) {
    const auto& value = *c.op->attr("value");
    if (const auto* r = value.get_if<ir::DenseResourceAttr>()) {
      if (!p.module->FindResourceBlob(r->handle)) {
        c.needs_seed = true;
        continue;
      }
    }
    if (!c.referenced) continue;
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> v, eval::EvaluateOp(*p.module, *c.op, {}, {}));
    c.literal = std::move(v[0].literal());
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<const SeededSet>> SeededConstants(const Program& p,
                                                                         std::optional<uint64_t> seed,
                                                                         eval::RandomFill fill) {
  bool any = false;
  for (const ConstantSlot& c : p.constants) any = any || c.needs_seed;
  if (!any) return std::shared_ptr<const SeededSet>();
  if (!seed) {
    for (const ConstantSlot& c : p.constants) {
      if (c.needs_seed) {
        return InvalidArgument(c.op->loc().ToString() + ": 'stablehlo.constant' op dense_resource<" +
                               c.op->attr("value")->as<ir::DenseResourceAttr>().handle +
                               "> has no data in the module (elided weights); supply a fill seed");
      }
    }
  }
  std::lock_guard<std::mutex> lock(p.seeded_mu);
  auto it = p.seeded.find({*seed, fill});
  if (it != p.seeded.end()) return it->second;
  static std::atomic<uint64_t> next_stamp{2};  // 1: constants of the program itself
  auto values = std::make_shared<SeededSet>();
  values->values.resize(p.constants.size());
  values->stamp = next_stamp.fetch_add(1);
  eval::EvalOptions options;
  options.resource_fill_seed = seed;
  options.resource_fill = fill;
  options.op_places = &p.places;
  for (size_t i = 0; i < p.constants.size(); ++i) {
    if (!p.constants[i].needs_seed) continue;
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> v,
                          eval::EvaluateOp(*p.module, *p.constants[i].op, {}, {}, options));
    values->values[i] = std::move(v[0].literal());
  }
  if (p.seeded.size() > 4) p.seeded.clear();  // bounded
  p.seeded[{*seed, fill}] = values;
  return std::shared_ptr<const SeededSet>(values);
}

// The memory a built program keeps (Executable::size_bytes): its module,
// materialized constants, linked code and data pages, the object files kept
// for Serialize, one arena of temporaries (kept after the first run), and
// estimates for the thunks and for the JIT's own records of the program.
uint64_t ProgramBytes(const Program& p) {
  // The JIT's records of one program while it is linked (its JITDylib, its
  // symbol and materialization tables, the link's bookkeeping): ~10 KiB of
  // heap for a one-kernel program, measured with heaptrack (x86-64, LLVM 19).
  constexpr uint64_t kJitRecords = 10 << 10;
  constexpr uint64_t kJitRecordsPerSymbol = 256;
  constexpr uint64_t kPerThunk = 256;  // a thunk, its buffer lists and label
  uint64_t bytes = sizeof(Program) + devices::ModuleBytes(*p.module) + static_cast<uint64_t>(p.arena_bytes) +
                   p.temp_offsets.size() * sizeof(int64_t);
  for (const ConstantSlot& c : p.constants) bytes += sizeof(ConstantSlot) + c.literal.bytes().size();
  bytes += p.places.size() * (sizeof(eval::OpPlaces::value_type) + 2 * sizeof(void*));  // node + bucket
  if (p.code) {
    bytes += kJitRecords + p.code->code_bytes() +
             p.code->addresses().size() * (sizeof(void*) + kJitRecordsPerSymbol);
    for (const std::string& object : p.code->objects()) bytes += object.size();
  }
  for (const std::string& s : p.kernel_names) bytes += s.size() + sizeof(s);
  for (const std::string& s : p.kernel_descriptions) bytes += s.size() + sizeof(s);
  for (const std::string& s : p.comparator_names) bytes += s.size() + sizeof(s);
  for (const std::string& s : p.window_body_names) bytes += s.size() + sizeof(s);
  const CpuProgramStats& st = p.stats;
  bytes += kPerThunk * static_cast<uint64_t>(st.kernels + st.library_ops + st.fallback_ops + st.control_ops + 1);
  return bytes;
}

class CpuExecutableImpl final : public CpuExecutable {
 public:
  explicit CpuExecutableImpl(std::shared_ptr<Program> program)
      : p_(std::move(program)), all_tensors_(AllTensors(p_->entry->arg_types()) &&
                                             AllTensors(p_->entry->result_types())) {}

  const std::vector<ir::Type>& argument_types() const override { return p_->entry->arg_types(); }
  const std::vector<ir::Type>& result_types() const override { return p_->entry->result_types(); }
  const CpuProgramStats& stats() const override { return p_->stats; }
  uint64_t size_bytes() const override { return p_->size_bytes; }
  const Program& program() const { return *p_; }

  StatusOr<std::vector<RuntimeValue>> Execute(std::span<const RuntimeValue> args,
                                              const ExecuteOptions& options) const override {
    const auto& types = argument_types();
    if (args.size() != types.size()) {
      return InvalidArgument("@" + p_->entry->name() + " takes " + std::to_string(types.size()) +
                             " arguments, got " + std::to_string(args.size()));
    }
    std::vector<const void*> arg_ptrs(args.size(), nullptr);
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].type() != types[i]) {
        return InvalidArgument("argument " + std::to_string(i) + " of @" + p_->entry->name() +
                               " must be " + types[i].ToString() + ", got " + args[i].type().ToString());
      }
      if (args[i].is_tensor()) arg_ptrs[i] = args[i].literal().bytes().data();
    }
    std::vector<RuntimeValue> results;
    std::vector<void*> out_ptrs;
    for (const ir::Type& t : result_types()) {
      if (t.is_tensor()) {
        JITD_ASSIGN_OR_RETURN(ir::Literal lit, ir::Literal::Create(t));
        results.emplace_back(std::move(lit));
        out_ptrs.push_back(results.back().literal().mutable_bytes().data());
      } else {
        results.emplace_back();
        out_ptrs.push_back(nullptr);
      }
    }
    std::vector<RuntimeValue> boxed_out;
    JITD_RETURN_IF_ERROR(RunInternal(arg_ptrs, args, out_ptrs, options, &boxed_out));
    for (size_t i = 0; i < results.size(); ++i) {
      if (!result_types()[i].is_tensor()) results[i] = std::move(boxed_out[i]);
    }
    return results;
  }

  bool runs_on_buffers() const override { return all_tensors_; }

  Status Run(std::span<const void* const> args, std::span<void* const> results,
             const ExecuteOptions& options) const override {
    if (!all_tensors_) return InvalidArgument("Run takes and returns tensors only");
    if (args.size() != argument_types().size() || results.size() != result_types().size()) {
      return InvalidArgument("wrong number of argument or result buffers");
    }
    return RunInternal(args, {}, results, options, nullptr);
  }

 private:
  // A profile row's or trace event's name for `thunk`: its label, for a
  // kernel what it computes ("kernel jitd_k3 reduce <- exponential"), then
  // " @line:col" of its op.
  std::string ThunkName(const Thunk& thunk) const {
    std::string name = thunk.label();
    constexpr std::string_view kKernel = "kernel jitd_k";
    if (name.rfind(kKernel, 0) == 0) {
      const size_t k = static_cast<size_t>(std::atoll(name.c_str() + kKernel.size()));
      if (k < p_->kernel_descriptions.size()) {
        // The description ends in its first use's place; this one's follows.
        const std::string& description = p_->kernel_descriptions[k];
        name += " " + description.substr(0, description.rfind(" @"));
      }
    }
    if (thunk.loc().line != 0) name += " @" + thunk.loc().ToString();
    return name;
  }

  Status RunInternal(std::span<const void* const> args, std::span<const RuntimeValue> boxed_args,
                     std::span<void* const> outputs, const ExecuteOptions& options,
                     std::vector<RuntimeValue>* boxed_out) const {
    JITD_ASSIGN_OR_RETURN(auto seeded, SeededConstants(*p_, options.resource_fill_seed, options.resource_fill));
    Arena arena;
    {
      std::lock_guard<std::mutex> lock(p_->arenas_mu);
      if (!p_->free_arenas.empty()) {
        arena = std::move(p_->free_arenas.back());
        p_->free_arenas.pop_back();
      }
    }
    if (!arena && p_->arena_bytes > 0) {
      arena.reset(new (std::align_val_t(kAlignment)) uint8_t[static_cast<size_t>(p_->arena_bytes)]);
    }
    ExecState state{*p_, args, outputs, arena.get(), {}, seeded.get(), options};
    state.boxed.resize(static_cast<size_t>(p_->num_boxed));
    for (size_t i = 0; i < boxed_args.size(); ++i) {
      if (p_->arg_refs[i].kind == BufferRef::Kind::kBoxed) {
        state.boxed[static_cast<size_t>(p_->arg_refs[i].index)] = boxed_args[i];
      }
    }
    static const bool profile_to_stderr = std::getenv("JITD_CPU_PROFILE") != nullptr;
    std::map<const Thunk*, std::pair<double, int64_t>> profile_data;
    if (profile_to_stderr || options.profile) state.profile = &profile_data;
    std::vector<ExecState::Span> spans;
    if (options.trace) {
      state.spans = &spans;
      state.max_spans = options.trace->max_events > options.trace->events.size()
                            ? options.trace->max_events - options.trace->events.size()
                            : 0;
    }
    Status status = RunSequence(p_->thunks, state);
    if (options.profile) {
      // One row per name and call site (a kernel or library op used at
      // several places has a row for each).
      std::map<std::string, std::pair<double, int64_t>> rows;
      for (const auto& [thunk, e] : profile_data) {
        auto& row = rows[ThunkName(*thunk)];
        row.first += e.first;
        row.second += e.second;
      }
      options.profile->clear();
      for (const auto& [name, e] : rows) {
        options.profile->push_back({name, e.second, static_cast<int64_t>(e.first * 1e9)});
      }
      devices::SortProfile(*options.profile);
    }
    if (options.trace) {
      const uint64_t thread = static_cast<uint64_t>(::gettid());
      std::map<const Thunk*, std::string> names;
      for (const ExecState::Span& span : spans) {
        auto [it, added] = names.try_emplace(span.thunk);
        if (added) it->second = ThunkName(*span.thunk);
        options.trace->events.push_back({it->second, span.start_nanos, span.duration_nanos, thread});
      }
      options.trace->dropped += state.dropped_spans;
    }
    if (profile_to_stderr) {
      std::vector<std::pair<double, std::string>> rows;
      double total = 0;
      for (const auto& [thunk, e] : profile_data) {
        const std::string label = thunk->label();
        rows.emplace_back(e.first, label + " x" + std::to_string(e.second));
        if (label.rfind("while", 0) != 0) total += e.first;
      }
      std::sort(rows.rbegin(), rows.rend());
      std::fprintf(stderr, "cpu profile (top thunks; %.3f ms outside loops' own rows):\n", total * 1e3);
      for (size_t i = 0; i < rows.size() && i < 12; ++i) {
        std::fprintf(stderr, "  %10.3f ms  %s\n", rows[i].first * 1e3, rows[i].second.c_str());
      }
    }
    if (status.ok() && boxed_out) {
      boxed_out->resize(p_->result_refs.size());
      for (size_t i = 0; i < p_->result_refs.size(); ++i) {
        if (p_->result_refs[i].kind == BufferRef::Kind::kBoxed) {
          (*boxed_out)[i] = state.boxed[static_cast<size_t>(p_->result_refs[i].index)];
        }
      }
    }
    if (arena) {
      std::lock_guard<std::mutex> lock(p_->arenas_mu);
      if (p_->free_arenas.size() < 4) p_->free_arenas.push_back(std::move(arena));
    }
    return status;
  }

  static bool AllTensors(const std::vector<ir::Type>& types) {
    return std::all_of(types.begin(), types.end(), [](const ir::Type& t) { return t.is_tensor(); });
  }

  std::shared_ptr<Program> p_;
  const bool all_tensors_;  // Run works (runs_on_buffers)
};

// Version 2: the object files of the program's compiled parts (version 1,
// one object file, is still read).
constexpr std::string_view kSerialMagic = "JITDCPU2";
constexpr std::string_view kSerialMagicV1 = "JITDCPU1";
// More parts than any compile makes (CpuJitOptions::compile_threads).
constexpr uint64_t kMaxSerialObjects = 1024;

void PutString(std::string& out, std::string_view s) {
  const uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out.append(s);
}

bool GetString(std::string_view& in, std::string_view& s) {
  uint64_t n;
  if (in.size() < sizeof(n)) return false;
  std::memcpy(&n, in.data(), sizeof(n));
  in.remove_prefix(sizeof(n));
  if (in.size() < n) return false;
  s = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}

}  // namespace

struct CpuDevice::Impl : public std::enable_shared_from_this<CpuDevice::Impl> {
  std::unique_ptr<CpuJit> jit;
  std::shared_ptr<ThreadPool> pool;
  CpuDeviceOptions options;

  passes::FusionPolicy FusionPolicy() const {
    passes::FusionPolicy policy = codegen::CpuFusionPolicy();
    policy.multi_output = options.multi_output_fusion;
    return policy;
  }

  // Plans (and with `emit`, generates code for) a verified module. Kernels
  // are the module's jitd.fusion ops (jit/passes' fusion pass, the last of
  // this device's pipeline); a module without any (compiled with another
  // pipeline, or none) is fused here first, on a copy, with the same policy.
  StatusOr<std::shared_ptr<Program>> Build(std::shared_ptr<const ir::Module> module,
                                           const std::vector<std::string>* objects,
                                           std::vector<devices::CompileDump>* dumps = nullptr) const {
    const auto start = std::chrono::steady_clock::now();
    if (!passes::HasFusionOps(*module)) {
      std::unique_ptr<ir::Module> fused = ir::CloneModule(*module);
      JITD_RETURN_IF_ERROR(passes::FuseModule(*fused, FusionPolicy()));
      module = std::move(fused);
    }
    auto program = std::make_shared<Program>();
    program->device = shared_from_this();
    program->module = std::move(module);
    program->pool = pool;
    program->compile_comparators = options.compile_sort_comparators;
    program->entry = program->module->EntryFunction();
    if (!program->entry) {
      return InvalidArgument("module has no entry function (@main, or exactly one public function)");
    }
    program->places = eval::ComputeOpPlaces(*program->module);
    auto context = std::make_unique<llvm::LLVMContext>();
    std::unique_ptr<llvm::Module> llvm_module = jit->NewModule("program", *context);
    Planner planner(*program, objects ? nullptr : llvm_module.get());
    JITD_RETURN_IF_ERROR(planner.Plan());
    JITD_RETURN_IF_ERROR(MaterializeConstants(*program));
    if (dumps) {
      std::string listing;
      for (size_t k = 0; k < program->kernel_names.size(); ++k) {
        listing += program->kernel_names[k] + " " + program->kernel_descriptions[k] + "\n";
      }
      dumps->push_back({"kernels.txt", std::move(listing)});
      dumps->push_back({"buffers.txt", planner.BufferListing()});
    }
    program->stats.codegen_seconds = Seconds(start);
    const auto llvm_start = std::chrono::steady_clock::now();
    std::vector<std::string> symbols = program->kernel_names;
    symbols.insert(symbols.end(), program->comparator_names.begin(), program->comparator_names.end());
    symbols.insert(symbols.end(), program->window_body_names.begin(), program->window_body_names.end());
    if (!symbols.empty()) {
      if (objects) {
        JITD_ASSIGN_OR_RETURN(program->code, jit->AddObjects(*objects, symbols));
      } else {
        LlvmDumps llvm_dumps;
        JITD_ASSIGN_OR_RETURN(program->code,
                              jit->AddModule(std::move(llvm_module), std::move(context), symbols,
                                             dumps ? &llvm_dumps : nullptr));
        if (dumps) {
          dumps->push_back({"llvm.ll", std::move(llvm_dumps.ir)});
          dumps->push_back({"llvm.opt.ll", std::move(llvm_dumps.optimized_ir)});
          dumps->push_back({"asm.s", std::move(llvm_dumps.assembly)});
        }
      }
      for (size_t i = 0; i < program->comparator_slots.size(); ++i) {
        *program->comparator_slots[i] = reinterpret_cast<CompiledComparator>(
            program->code->addresses()[program->kernel_names.size() + i]);
      }
      const size_t first_body = program->kernel_names.size() + program->comparator_names.size();
      for (size_t i = 0; i < program->window_body_slots.size(); ++i) {
        *program->window_body_slots[i] = reinterpret_cast<WindowBodyFn>(program->code->addresses()[first_body + i]);
      }
    }
    program->stats.llvm_seconds = Seconds(llvm_start);
    program->size_bytes = ProgramBytes(*program);
    return program;
  }
};

StatusOr<std::unique_ptr<CpuDevice>> CpuDevice::Create(const CpuDeviceOptions& options) {
  auto impl = std::make_shared<Impl>();
  impl->options = options;
  CpuJitOptions jit_options;
  jit_options.dump_dir = options.dump_dir;
  if (jit_options.dump_dir.empty()) {
    if (const char* env = std::getenv("JITD_CPU_DUMP_DIR")) jit_options.dump_dir = env;
  }
  int threads = options.num_threads;
  if (threads <= 0) {
    if (const char* env = std::getenv("JITD_CPU_THREADS")) threads = std::atoi(env);
  }
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // A big program's compile uses the device's threads too.
  jit_options.compile_threads = threads;
  JITD_ASSIGN_OR_RETURN(impl->jit, CpuJit::Create(jit_options));
  impl->pool = std::make_shared<ThreadPool>(threads);
  // The device's thread budget covers the GEMMs of its library calls too
  // (process-wide: the latest device created sets it).
  SetBlasThreads(threads);
  return std::unique_ptr<CpuDevice>(new CpuDevice(std::move(impl)));
}

CpuDevice::~CpuDevice() = default;

int CpuDevice::num_threads() const { return impl_->pool->num_threads(); }

void CpuDevice::ConfigurePipeline(passes::PipelineOptions& options) const {
  options.fusion = std::make_shared<const passes::FusionPolicy>(impl_->FusionPolicy());
  // Quantized ops become integer / float ops the kernels and libraries run.
  options.lower_quantized = true;
}

StatusOr<std::unique_ptr<devices::Executable>> CpuDevice::Compile(
    std::shared_ptr<const ir::Module> module, const devices::CompileOptions& options) const {
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*module));
  JITD_ASSIGN_OR_RETURN(std::shared_ptr<Program> program,
                        impl_->Build(std::move(module), nullptr, options.dumps));
  return std::unique_ptr<devices::Executable>(new CpuExecutableImpl(std::move(program)));
}

StatusOr<std::string> CpuDevice::Serialize(const devices::Executable& executable) const {
  const auto* cpu = dynamic_cast<const CpuExecutableImpl*>(&executable);
  if (!cpu) return InvalidArgument("not an executable of the cpu device");
  const Program& p = cpu->program();
  std::string out(kSerialMagic);
  PutString(out, impl_->jit->cpu_features());
  PutString(out, ir::PrintModule(*p.module));
  const std::vector<std::string> none;
  const std::vector<std::string>& objects = p.code ? p.code->objects() : none;
  const uint64_t count = objects.size();
  out.append(reinterpret_cast<const char*>(&count), sizeof(count));
  for (const std::string& object : objects) PutString(out, object);
  return out;
}

StatusOr<std::unique_ptr<devices::Executable>> CpuDevice::Deserialize(std::string_view bytes) const {
  const bool v1 = bytes.substr(0, kSerialMagicV1.size()) == kSerialMagicV1;
  if (!v1 && bytes.substr(0, kSerialMagic.size()) != kSerialMagic) {
    return InvalidArgument("not a serialized cpu executable (bad magic)");
  }
  bytes.remove_prefix(kSerialMagic.size());
  std::string_view features, text;
  std::vector<std::string> objects;
  bool complete = GetString(bytes, features) && GetString(bytes, text);
  uint64_t count = 1;
  if (complete && !v1) {
    complete = bytes.size() >= sizeof(count);
    if (complete) {
      std::memcpy(&count, bytes.data(), sizeof(count));
      bytes.remove_prefix(sizeof(count));
    }
    if (count > kMaxSerialObjects) {
      return InvalidArgument("serialized cpu executable claims " + std::to_string(count) + " object files (at most " +
                             std::to_string(kMaxSerialObjects) + ")");
    }
  }
  for (uint64_t i = 0; complete && i < count; ++i) {
    std::string_view object;
    complete = GetString(bytes, object);
    if (complete && !object.empty()) objects.emplace_back(object);
  }
  if (!complete || !bytes.empty()) return InvalidArgument("truncated serialized cpu executable");
  if (features != impl_->jit->cpu_features()) {
    return Status(StatusCode::kFailedPrecondition,
                  "serialized cpu executable was built for other CPU features");
  }
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> parsed, frontend::ParseModule(text));
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*parsed));
  JITD_ASSIGN_OR_RETURN(std::shared_ptr<Program> program,
                        impl_->Build(std::shared_ptr<const ir::Module>(std::move(parsed)), &objects));
  return std::unique_ptr<devices::Executable>(new CpuExecutableImpl(std::move(program)));
}

}  // namespace jitd::cpu
