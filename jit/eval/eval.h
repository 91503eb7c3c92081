// jit/eval: the reference evaluator — StableHLO semantics, op by op, on host
// literals. devices/interpreter wraps it as a device; constant folding in the
// compiler reuses it. Readability over speed: kernels are plain loops.
#ifndef JITD_JIT_EVAL_EVAL_H_
#define JITD_JIT_EVAL_EVAL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/status.h"
#include "jit/ir/literal.h"
#include "jit/ir/module.h"

namespace jitd::eval {

// A value at run time: a tensor (an ir::Literal), a token, a tuple, or a
// future (what async_start produces: the values of its body's op, computed
// when it ran; async_done yields them).
// Value type; copies are deep. Thread-compatible.
class RuntimeValue {
 public:
  RuntimeValue() : storage_(TokenTag{}) {}  // a token
  explicit RuntimeValue(ir::Literal literal) : storage_(std::move(literal)) {}
  static RuntimeValue Token() { return RuntimeValue(); }
  static RuntimeValue Tuple(std::vector<RuntimeValue> elements) {
    RuntimeValue v;
    v.storage_ = std::move(elements);
    return v;
  }

  static RuntimeValue Future(std::vector<RuntimeValue> values) {
    RuntimeValue v;
    v.storage_ = FutureValues{std::move(values)};
    return v;
  }

  bool is_tensor() const { return std::holds_alternative<ir::Literal>(storage_); }
  bool is_future() const { return std::holds_alternative<FutureValues>(storage_); }
  // The values a future holds (only when is_future()).
  const std::vector<RuntimeValue>& future_values() const {
    return std::get<FutureValues>(storage_).values;
  }
  bool is_token() const { return std::holds_alternative<TokenTag>(storage_); }
  bool is_tuple() const { return std::holds_alternative<std::vector<RuntimeValue>>(storage_); }
  const ir::Literal& literal() const { return std::get<ir::Literal>(storage_); }
  ir::Literal& literal() { return std::get<ir::Literal>(storage_); }
  const std::vector<RuntimeValue>& elements() const {
    return std::get<std::vector<RuntimeValue>>(storage_);
  }
  // The IR type this value has.
  ir::Type type() const;

 private:
  struct TokenTag {};
  struct FutureValues {
    std::vector<RuntimeValue> values;
  };
  std::variant<TokenTag, ir::Literal, std::vector<RuntimeValue>, FutureValues> storage_;
};

// How seeded pseudo-random tensors (RandomLiteral, dense_resource fills)
// are distributed.
enum class RandomFill : uint8_t {
  // Floats uniform in [-1, 1), integers in a small range (-4..4, unsigned
  // 0..7), booleans fair. The default.
  kUniform,
  // Values that trained weights could hold, so that a network with elided
  // weights computes finite, well-scaled activations instead of NaN: floats
  // of rank >= 2 (kernels, matrices) uniform in +-sqrt(3 / fan_in), fan_in
  // the product of all dimensions but the last (JAX's HWIO kernels and
  // [in, out] matrices: unit variance gain per layer); floats of rank <= 1
  // (biases, scales, batch-norm means and variances) uniform in [0.5, 1.5),
  // positive so that variances and scales are valid. Integers and booleans
  // as kUniform.
  kWeights,
};

// "uniform" / "weights" (the --resource-fill spellings) and back.
std::string_view RandomFillName(RandomFill fill);
StatusOr<RandomFill> ParseRandomFill(std::string_view name);

// The status of an evaluation (or a device's execution) stopped through its
// cancel flag (EvalOptions::cancel, devices::ExecuteOptions::cancel).
// UNAVAILABLE: jitd has no CANCELLED code, and the client that would read
// it is gone.
inline Status CancelledStatus() {
  return Status(StatusCode::kUnavailable, "execution cancelled (the client went away)");
}

// Which op of its kind each elided dense_resource constant (per resource
// name) and each stablehlo.rng op of a module is, counting in the order
// inlining lays the program out (from the entry function, a callee at its
// first call): what seeds their values, stable when the module is printed
// and parsed again. See ComputeOpPlaces.
using OpPlaces = std::unordered_map<const ir::Op*, uint64_t>;

// The places of `module`'s ops (linear in its ops, no recursion). A caller
// that evaluates many ops of one module one at a time (EvaluateOp) computes
// them once and passes them in EvalOptions::op_places.
OpPlaces ComputeOpPlaces(const ir::Module& module);

struct ProcessContext;  // jit/eval/collectives.h

struct EvalOptions {
  // Largest tensor one op may produce; bigger results fail with
  // RESOURCE_EXHAUSTED instead of allocating.
  int64_t max_literal_bytes = int64_t{1} << 32;
  // Evaluation stops with DEADLINE_EXCEEDED after this point (while loops
  // can run forever). Checked before every op, at every nesting level.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // When set and it becomes true, evaluation stops where the deadline is
  // checked, with CancelledStatus(). Must outlive the evaluation.
  const std::atomic<bool>* cancel = nullptr;
  // dense_resource constants whose bytes the module does not carry: filled
  // with seeded pseudo-random values when set, an error otherwise.
  std::optional<uint64_t> resource_fill_seed;
  // The distribution of those fills.
  RandomFill resource_fill = RandomFill::kUniform;
  // Infeed and outfeed: where `stablehlo.infeed` takes its tensor results
  // from and where `stablehlo.outfeed` sends its tensor operands (the daemon
  // connects them to its per-device queues, daemon/feed_queues.h). `infeed`
  // gets the op's tensor result types and returns one literal per type, in
  // order; it may block, and must give up at `deadline` (the evaluator
  // passes the deadline above) with DEADLINE_EXCEEDED. `outfeed` gets the
  // operands' values. Both run on the evaluating thread. Unset: the op fails
  // with UNIMPLEMENTED (there is no queue to talk to).
  std::function<StatusOr<std::vector<ir::Literal>>(
      const std::vector<ir::Type>& types,
      std::optional<std::chrono::steady_clock::time_point> deadline)>
      infeed;
  std::function<Status(std::vector<ir::Literal> values,
                       std::optional<std::chrono::steady_clock::time_point> deadline)>
      outfeed;
  // interpreter.probe: gets the probe_id and the value the op passes
  // through, each time it runs (the reference interpreter serializes it for
  // check.expect_serialized_eq). Unset: the op only passes its value on.
  std::function<Status(const std::string& probe_id, const ir::Literal& value)> probe;
  // When set, every evaluated op adds its wall time to its row ({runs,
  // nanoseconds}); ops with regions include their bodies' time. Costs two
  // clock reads per op.
  std::map<const ir::Op*, std::pair<int64_t, int64_t>>* op_profile = nullptr;
  // When set, every evaluated op appends a span (when it started, how long
  // it took, steady_clock nanoseconds); ops with regions enclose their
  // bodies' spans, which end first. Past max_spans the rest are counted in
  // dropped. Two clock reads per op.
  struct OpSpan {
    const ir::Op* op;
    int64_t start_nanos;
    int64_t duration_nanos;
  };
  struct OpTrace {
    std::vector<OpSpan> spans;
    size_t max_spans = size_t{1} << 18;
    uint64_t dropped = 0;
  };
  OpTrace* op_trace = nullptr;
  // The module's OpPlaces, when the caller has them (must be of the module
  // evaluated); else the evaluator computes them when first needed.
  const OpPlaces* op_places = nullptr;
  // The process this evaluation is, in a replicated execution
  // (jit/eval/collectives.h): replica_id / partition_id read it and the
  // collectives meet the other processes through its exchange. Null = the
  // one process (0, 0) of a 1x1 grid. Must outlive the evaluation.
  const ProcessContext* process = nullptr;
  // interpreter.run_parallel (the reference interpreter's multi-process
  // driver): run by the caller — `jitd conformance` compiles its programs
  // for the device under test and runs them as processes
  // (tools/conformance/runner.cc). Gets the op and its operands, returns its
  // results. Unset: the op fails with UNIMPLEMENTED.
  std::function<StatusOr<std::vector<RuntimeValue>>(const ir::Op& op, std::vector<RuntimeValue> operands)>
      run_parallel;
};

// Evaluates `function` of `module` on `args`. The module must have passed
// ir::VerifyModule. Errors name the op and its line:col; an op the
// evaluator does not implement yields UNIMPLEMENTED.
StatusOr<std::vector<RuntimeValue>> EvaluateFunction(const ir::Module& module,
                                                     const ir::Function& function,
                                                     std::vector<RuntimeValue> args,
                                                     const EvalOptions& options = {});

// Evaluates the single op `op` of `module` (not a terminator), with
// `values[i]` bound to `bindings[i]`: the op's operands, plus every value
// defined outside the op that its regions use. Compiled devices run the ops
// their code generator does not handle through this (one op at a time).
StatusOr<std::vector<RuntimeValue>> EvaluateOp(const ir::Module& module, const ir::Op& op,
                                               std::span<const ir::Value* const> values,
                                               std::span<const RuntimeValue> bindings,
                                               const EvalOptions& options = {});

// Whether the evaluator runs ops like `op`: OK, or UNIMPLEMENTED saying
// why not (an op jitd parses and verifies but does not run: channels between
// processes, !stablehlo.future values, quantized types, ...). A device that
// runs ops through the evaluator reports these when it compiles (naming
// itself); what depends on values (a collective over several processes, a
// custom_call target) still fails when the op runs.
Status CheckEvaluable(const ir::Op& op);

// Seeded pseudo-random contents for a tensor type (dense_resource fills and
// `--random-inputs`), distributed as `fill` says (by default floats uniform
// in [-1, 1), integers in a small range, booleans fair). Deterministic for a
// seed and fill.
StatusOr<ir::Literal> RandomLiteral(const ir::Type& type, uint64_t seed,
                                    int64_t max_bytes = int64_t{1} << 32,
                                    RandomFill fill = RandomFill::kUniform);

// The seeded contents of an elided dense_resource constant (no blob in the
// module): a distinct, reproducible fill per resource name and, for elided
// weights that share one name (`__elided__`), per place in the program
// (`place`: ComputeOpPlaces's number; never the source line, which
// respelling, the canonical cache key and the disk cache's reprinted module
// all change). What the evaluator, the cpu device and the cuda device fill
// such a constant with for a seed.
StatusOr<ir::Literal> ResourceFillLiteral(const ir::Type& type, std::string_view handle, uint64_t place,
                                          uint64_t seed, RandomFill fill,
                                          int64_t max_bytes = int64_t{1} << 32);

// Evaluates the single op `op` of `module` on `operands` (one value per
// operand, in order), outside any function: what constant folding needs. The
// op's regions run as usual; a value they use from outside the op is an
// error (INTERNAL), as is a terminator. `module` supplies callees and
// resource blobs. Same errors as EvaluateFunction otherwise.
StatusOr<std::vector<RuntimeValue>> EvaluateDetachedOp(const ir::Module& module,
                                                       const ir::Op& op,
                                                       std::vector<RuntimeValue> operands,
                                                       const EvalOptions& options = {});

namespace internal {
class Evaluator;
}  // namespace internal

// Runs one standalone region of an op (a sort comparator, a reducer body)
// on argument values, again and again, without re-creating the evaluator:
// the adapter devices/cpu/runtime uses when no compiled comparator is given.
// The region must not use values defined outside it; `module` resolves any
// func.call inside it and must outlive this object. Not thread-safe: use
// one per thread.
class RegionEvaluator {
 public:
  explicit RegionEvaluator(const ir::Module& module, EvalOptions options = {});
  ~RegionEvaluator();
  RegionEvaluator(const RegionEvaluator&) = delete;
  RegionEvaluator& operator=(const RegionEvaluator&) = delete;

  // What the region's terminator returns for `args` (its block arguments).
  StatusOr<std::vector<RuntimeValue>> Run(const ir::Region& region,
                                          std::vector<RuntimeValue> args);

 private:
  EvalOptions options_;  // the evaluator keeps a reference to it
  std::unique_ptr<internal::Evaluator> evaluator_;
};

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_EVAL_H_
