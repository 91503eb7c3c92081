// jit/codegen: IR -> LLVM IR for fused loop kernels: the cpu schedule (the
// CPU device's KernelThunks). The element math it shares with the gpu
// schedule is ElementalEmitter (elemental_emitter.h); target math hooks are
// TargetMath (target_math.h).
//
// A kernel computes the results of one root op — an elementwise op (index
// maps such as broadcast_in_dim / reshape / transpose / slice / iota / pad /
// dynamic_slice / dynamic_update_slice included; dynamic start indices are
// read at run time and clamped as the spec says) or a reduce — together
// with the producers fused into it, reading
// every other value from a buffer. Its LLVM signature is
//
//   void NAME(void** buffers, int64_t begin, int64_t end)
//
// where buffers[i] is input i (KernelSpec::inputs order) followed by one
// output per root result, then one per extra output, and [begin, end) is a range of work items
// (KernelInfo::work_items in all) that may run on different threads.
//
// The per-type semantics are exactly jit/eval's: integers wrap, integer
// division / remainder by zero and shifts by the width or more give XLA's
// answers, float -> int converts saturate (NaN -> 0), maximum / minimum
// propagate NaN and order -0 below +0, compare honours TOTALORDER.
// Transcendentals call libm names that LLVM maps to libmvec when it
// vectorizes. Element types: pred, 2..64-bit integers (i2 / i4 / ui2 / ui4
// wrap in their width, one per byte, no bitcast), f16, bf16, the 8-bit
// floats with a zero and a sign (f8E3M4, f8E4M3, f8E4M3FN, f8E4M3FNUZ,
// f8E4M3B11FNUZ, f8E5M2, f8E5M2FNUZ: computed in f32, read through a table,
// written by jit/ir's EncodeFloat; no bitcast, reduce_precision or
// TOTALORDER compare on them), f32, f64,
// and complex<f32> / complex<f64> for the ops jit/eval computes exactly
// (add, subtract, negate, select, real, imag, complex, convert, index maps;
// multiply, divide, abs and compare as jit/eval's long double code;
// transcendentals, sign, power, atan2 and remainder, and the real special
// functions lgamma / digamma / erf_inv / bessel_i1e / CHLO cosh / sinh, as
// calls of jit/eval's own per-element functions, see kernel_runtime.h);
// others are left to the caller's fallback. Converts into f16 / bf16 round
// once, as jit/eval does. bitcast_convert (also between widths: the narrow
// side's extra minor dimension holds the pieces) and reduce_precision work
// on storage bits, f16 / bf16 operands read as bits (see HalfBits).
#ifndef JITD_JIT_CODEGEN_KERNEL_EMITTER_H_
#define JITD_JIT_CODEGEN_KERNEL_EMITTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

class TargetMath;

// True when a fused kernel can compute `op`'s result element by element
// (the op kind, its attributes and every element type are handled) on the
// target whose math is `target` (target_math.h); without one, the host's.
bool IsFusibleOp(const ir::Op& op);
bool IsFusibleOp(const ir::Op& op, const TargetMath& target);
// True when `op` is a stablehlo.reduce whose body a kernel can emit.
bool IsEmittableReduce(const ir::Op& op);
bool IsEmittableReduce(const ir::Op& op, const TargetMath& target);
// Fusible ops that are worth recomputing in every consumer instead of
// materializing (splat constants, iota, broadcasts of scalars).
bool IsCheapToDuplicate(const ir::Op& op);

struct KernelSpec {
  std::string name;                       // the LLVM symbol
  const ir::Op* root = nullptr;           // elementwise op or reduce
  std::vector<const ir::Op*> fused;       // ops computed inside, root included
  std::vector<const ir::Value*> inputs;   // values read from buffers
  // Multi-output fusion: results of fused ops (not the root) the kernel
  // also writes, each to one more buffer after the root's outputs. Each
  // must be computed at the kernel's own iteration index (the root's
  // result index; a reduce's input index), so every element is written
  // exactly once whatever the work split.
  std::vector<const ir::Value*> extra_outputs;
};

struct KernelInfo {
  int64_t work_items = 0;      // the kernel's [begin, end) covers [0, work_items)
  int64_t bytes_per_item = 0;  // rough memory traffic per item (for splitting)
  bool reassociates = false;   // float reduction vectorized with partial sums
  // Split reductions (a reduce with few outputs and a long reduced extent,
  // see kSplitChunkElements): the kernel then takes one more buffer after
  // its outputs, `partial_bytes` of scratch, and runs in two phases.
  // Phase 1, NAME over [0, work_items): item c * outputs + o folds chunk c
  // of output o's reduced elements (from the fold's identity) into
  // partial[item]. Phase 2, NAME_combine over [0, combine_items = outputs):
  // out[o] = init, then folded with partial[c * outputs + o] for ascending c.
  int64_t split_chunks = 0;    // chunks per output; 0 = not split
  int64_t partial_bytes = 0;
  int64_t combine_items = 0;
};

// The phase-2 symbol of a split reduction kernel named `kernel`.
inline std::string CombineSymbol(const std::string& kernel) { return kernel + "_combine"; }

// A structural key: two specs with equal keys compute the same function of
// their inputs (same ops, types, attributes and wiring), so one emitted
// kernel serves both (repeated layers of a model share their kernels).
std::string KernelKey(const KernelSpec& spec);

// At most this many ops (constants not counted) in one kernel. The CPU
// fusion policy keeps kernels this small (a longer chain becomes several
// kernels), the CPU device interprets bigger hand-written jitd.fusion ops,
// and EmitKernel refuses bigger specs (INVALID_ARGUMENT). It bounds a
// kernel's LLVM time, which grows faster than its size (a chain of 10^5
// adds in one function took 30 s), and the emitter's native recursion: the
// emitter computes an element's operands with an explicit stack, except
// the guarded reads of pad and dynamic_update_slice, bitcasts between
// widths and f16 / bf16 bits (one level of recursion per such op on a
// path: at most ~1 KiB of stack each).
inline constexpr size_t kMaxKernelOps = 1024;

// The ops of `spec` that count against kMaxKernelOps.
size_t KernelOps(const KernelSpec& spec);

// At most this many op computations emitted for one element of a kernel.
// An op is computed once per distinct index it is read at, so operands read
// at several indices (concatenate(x, x), add(reverse(x), x), bitcasts to
// narrower types) recompute their producers, and a chain of such ops
// doubles the work at every step. Past the limit EmitKernel fails with
// RESOURCE_EXHAUSTED (the CPU device then interprets that fusion op).
inline constexpr int64_t kMaxKernelComputations = 8192;

// Appends the kernel's function to `module` (which must have the target's
// data layout set). Errors name the op codegen could not handle; on an
// error nothing of the kernel stays in `module`.
StatusOr<KernelInfo> EmitKernel(llvm::Module& module, const KernelSpec& spec);

// Reductions at least this long over floats are vectorized with partial
// sums (the spec leaves the order open; shorter ones keep the interpreter's
// left-to-right order bit for bit).
inline constexpr int64_t kReassociateMinExtent = 1024;

// Split reductions: a single-result reduce whose body jit/eval/fold.h's
// RecognizeFold accepts, with at most kSplitMaxOutputs outputs and a reduced
// extent of at least 2 * kSplitChunkElements, is cut into chunks of about
// kSplitChunkElements reduced elements (by shape only, so the result never
// depends on the thread count). Integer / pred folds and float maximum /
// minimum give exactly the interpreter's result; f32 / f64 sums and products
// are reassociated (chunk partials in ascending chunk order), as every long
// float reduction already is. f16 / bf16 sums and products are not split.
inline constexpr int64_t kSplitChunkElements = int64_t{1} << 15;
inline constexpr int64_t kSplitMaxOutputs = 64;

// Streaming stores: an elementwise kernel whose output is at least this big
// (far past the per-core L2) writes it with non-temporal vector stores, which
// skip the read-for-ownership of every output line (STREAM triad here: 15.5
// -> 10.6 ms over 16M f32). Its loop starts with a short head loop up to the
// first 64-byte-aligned output element, so the vector stores after it are
// aligned (an llvm.assume the device's last pass reads with SCEV); the
// function carries kStreamStoresAttr, and the CPU device's pass pipeline
// marks that function's aligned vector stores !nontemporal at the end of
// optimisation (the loop vectorizer refuses to vectorize scalar stores that
// carry the hint). The kernel ends with an sfence: non-temporal stores are
// weakly ordered, and other threads read the output after the pool's
// (plain release-store) hand-off.
inline constexpr int64_t kStreamStoreMinBytes = int64_t{8} << 20;
inline constexpr const char* kStreamStoresAttr = "jitd-stream-stores";

// True when `sort`'s comparator region compiles: one block of scalar math
// (IsFusibleOp ops on rank-0 values, splat constants, also ones defined
// outside the region) on its 2N rank-0 arguments returning one i1.
bool IsEmittableComparator(const ir::Op& sort);

// Appends `i8 NAME(const void* const* lhs, const void* const* rhs)` to
// `module`: lhs[i] / rhs[i] point at one element of sort operand i; returns
// 1 when lhs sorts before rhs (the region's i1 result), else 0. Pure and
// thread-safe. Errors name the op codegen could not handle.
Status EmitComparator(llvm::Module& module, const ir::Op& sort, const std::string& name);

// True when `reduce_window`'s body compiles: N inputs, N rank-0 inits and N
// results of one element type each (per i), and a body of scalar math
// (IsFusibleOp ops on rank-0 values, splat constants also from outside) on
// its 2N rank-0 arguments returning N values of the result types.
bool IsEmittableReduceWindowBody(const ir::Op& reduce_window);

// Appends `void NAME(void* const* acc, const void* const* x)` to `module`:
// acc[i] points at accumulator i (an element of result i's type), x[i] at
// one element of input i; the body's results overwrite the accumulators
// (all computed before any is written). Thread-safe on distinct
// accumulators. Errors name the op codegen could not handle.
Status EmitReduceWindowBody(llvm::Module& module, const ir::Op& reduce_window, const std::string& name);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_EMITTER_H_
