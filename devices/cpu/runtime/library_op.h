// The CPU device's runtime library: the heavy ops that JIT-compiled code does
// not generate loops for but calls — dot_general through OpenBLAS,
// convolution through oneDNN (f32) or GEMM, fft through KISS FFT, triangular_solve,
// cholesky, sort — each as a LibraryOp planned once at compile time from the
// op's types and attributes and run many times on raw buffers. Also covered,
// for their common bodies only: reduce_window, select_and_scatter, gather
// and scatter (see docs/ARCHITECTURE.md for what each accepts), and
// rng_bit_generator (jit/eval/rng_bits.h's streams).
//
// Semantics are exactly the interpreter's (jit/eval), which is the golden
// model: same rounding where the spec is exact, the corpus tolerance
// otherwise.
//
// Thread safety: a LibraryOp is immutable after creation; Run may be called
// concurrently from several threads with distinct buffers.
#ifndef JITD_DEVICES_CPU_RUNTIME_LIBRARY_OP_H_
#define JITD_DEVICES_CPU_RUNTIME_LIBRARY_OP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::cpu {

// Splits [0, n) into chunks run on the device's thread pool; blocks until
// every chunk ran. fn(begin, end) must be safe to call concurrently on
// disjoint ranges.
using ParallelFor = std::function<void(int64_t n, const std::function<void(int64_t, int64_t)>& fn)>;

struct RunContext {
  // Null: run on the calling thread.
  const ParallelFor* parallel_for = nullptr;
  // Long-running ops check this in their own loops and fail with
  // DEADLINE_EXCEEDED past it (and, with `stopped` given, between slices of
  // ~1M operations of their parallel loops).
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Set (by another thread) = stop as if the deadline had passed; the
  // caller reports the cancellation.
  const std::atomic<bool>* cancel = nullptr;
  // Optional: when given, parallel loops check the deadline and `cancel`
  // too, and set it when they skipped work; the caller must then treat the
  // op as failed (its results are incomplete) though Run returned OK.
  std::atomic<bool>* stopped = nullptr;
  // Optional, one per operand: nonzero when operand i's bytes are immutable
  // and the pair (its address, stamp) names them for as long as the op
  // lives — the caller never reuses a pair for other bytes. An op may then
  // keep what it derives from the operand between runs (convolution: the
  // weights in oneDNN's layout). Empty or zero: no such promise.
  std::span<const uint64_t> operand_stamps;
};

// A sort comparator over one element of each operand: lhs[i] and rhs[i]
// point at element values of operand i. Returns true when lhs sorts before
// rhs. May be a JIT-compiled function or an adapter over the interpreter.
// Sort slices run on RunContext::parallel_for when one is given, so the
// comparator must be safe to call from several threads at once.
using Comparator = std::function<bool(const void* const* lhs, const void* const* rhs)>;

// A JIT-compiled comparator (jit/codegen EmitComparator): nonzero when lhs
// sorts before rhs. Pure; safe to call from several threads at once.
using ComparatorFn = uint8_t (*)(const void* const* lhs, const void* const* rhs);

// A JIT-compiled reduce_window body (jit/codegen EmitReduceWindowBody):
// acc[i] points at accumulator i, x[i] at one element of input i; the
// body's results overwrite the accumulators. Safe to call from several
// threads at once on distinct accumulators.
using WindowBodyFn = void (*)(void* const* acc, const void* const* x);

struct LibraryOpOptions {
  // For stablehlo.sort, in order of preference: compiled code, read through
  // `compiled_comparator` at every Run (the slot may be filled after
  // CreateLibraryOp, once the program's code is linked, and must outlive the
  // op); `comparator`; else the library evaluates the comparator region
  // with jit/eval (correct, ~75x slower).
  const ComparatorFn* compiled_comparator = nullptr;
  Comparator comparator;
  // For stablehlo.reduce_window bodies the library does not fold itself
  // (several inputs, complex values, selections): compiled code read
  // through this slot at every Run (filled once the program is linked; it
  // must outlive the op). Without it such ops are declined.
  const WindowBodyFn* compiled_window_body = nullptr;
};

class LibraryOp {
 public:
  virtual ~LibraryOp() = default;
  // operands[i] points at the dense row-major bytes of operand i (of type
  // op.operand(i)->type()); results[j] at storage for result j, allocated
  // by the caller with the result type's size. Results never alias operands.
  virtual Status Run(std::span<const void* const> operands, std::span<void* const> results,
                     const RunContext& context) const = 0;
};

// A LibraryOp for `op`, or nullptr when the library has no implementation
// for this op or element type (the caller then uses another strategy).
// Errors only for attributes the verifier should have rejected.
StatusOr<std::unique_ptr<LibraryOp>> CreateLibraryOp(const ir::Op& op,
                                                     const LibraryOpOptions& options = {});

}  // namespace jitd::cpu

#endif  // JITD_DEVICES_CPU_RUNTIME_LIBRARY_OP_H_
