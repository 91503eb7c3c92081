// KernelSpec: what one fused kernel computes, the input of every kernel
// plan (kernel_plan.h) and schedule (cpu/cpu_kernel_emitter.h,
// nvptx/grid_kernel_emitter.h), with the limits every target keeps.
//
// A kernel computes the results of one root op — an elementwise op (index
// maps such as broadcast_in_dim / reshape / transpose / slice / iota / pad /
// dynamic_slice / dynamic_update_slice included) or a reduce — together with
// the producers fused into it, reading every other value from a buffer.
// Plain data over borrowed IR: the pointers point into the module, which
// outlives the spec.
#ifndef JITD_JIT_CODEGEN_KERNEL_SPEC_H_
#define JITD_JIT_CODEGEN_KERNEL_SPEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "jit/ir/module.h"

namespace jitd::codegen {

struct KernelSpec {
  std::string name;                       // the symbol
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

// The second kernel of a split reduction named `kernel` (the cpu's
// CpuKernelKind::kSplitReduce, the gpu's split kBlockReduce).
inline std::string CombineSymbol(const std::string& kernel) { return kernel + "_combine"; }

// A structural key: two specs with equal keys compute the same function of
// their inputs (same ops, types, attributes and wiring), so one emitted
// kernel serves both (repeated layers of a model share their kernels).
std::string KernelKey(const KernelSpec& spec);

// At most this many ops (constants not counted) in one kernel. The fusion
// policies keep kernels this small (a longer chain becomes several
// kernels), the CPU device interprets bigger hand-written jitd.fusion ops,
// and PlanCpuKernel refuses bigger specs (INVALID_ARGUMENT). It bounds a
// kernel's LLVM time, which grows faster than its size (a chain of 10^5
// adds in one function took 30 s), and the emitter's native recursion: the
// elemental emitter computes an element's operands with an explicit stack,
// except the guarded reads of pad and dynamic_update_slice, bitcasts
// between widths and f16 / bf16 bits (one level of recursion per such op
// on a path: at most ~1 KiB of stack each).
inline constexpr size_t kMaxKernelOps = 1024;

// The ops of `spec` that count against kMaxKernelOps.
size_t KernelOps(const KernelSpec& spec);

// At most this many op computations emitted for one element of a kernel.
// An op is computed once per distinct index it is read at, so operands read
// at several indices (concatenate(x, x), add(reverse(x), x), bitcasts to
// narrower types) recompute their producers, and a chain of such ops
// doubles the work at every step. Past the limit emission fails with
// RESOURCE_EXHAUSTED (the CPU device then interprets that fusion op).
inline constexpr int64_t kMaxKernelComputations = 8192;

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_KERNEL_SPEC_H_
