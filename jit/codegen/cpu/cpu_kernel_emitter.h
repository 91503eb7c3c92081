// The cpu schedule: a kernel's loops as its CpuKernelPlan (kernel_plan.h)
// lays them out — flat, rows, tiled transpose, reductions, split
// reductions, streaming stores — the element math from ElementalEmitter
// (elemental_emitter.h) with the host's TargetMath. These are the CPU
// device's KernelThunks. A kernel's LLVM signature is
//
//   void NAME(void** buffers, int64_t begin, int64_t end)
//
// where buffers[i] is input i (KernelSpec::inputs order) followed by one
// output per root result, then one per extra output (then a split
// reduction's partials), and [begin, end) is a range of the plan's work
// items that may run on different threads; a split reduction has a second
// function, CombineSymbol(NAME), of the same signature.
//
// Streaming stores (CpuKernelPlan::stream_stores): the kernel's loop starts
// with a short head loop up to the first 64-byte-aligned output element, so
// the vector stores after it are aligned (an llvm.assume the device's last
// pass reads with SCEV); the function carries kStreamStoresAttr, and the CPU
// device's pass pipeline marks that function's aligned vector stores
// !nontemporal at the end of optimisation (the loop vectorizer refuses to
// vectorize scalar stores that carry the hint). The kernel ends with an
// sfence: non-temporal stores are weakly ordered, and other threads read
// the output after the pool's (plain release-store) hand-off.
#ifndef JITD_JIT_CODEGEN_CPU_CPU_KERNEL_EMITTER_H_
#define JITD_JIT_CODEGEN_CPU_CPU_KERNEL_EMITTER_H_

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/codegen/kernel_spec.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

inline constexpr const char* kStreamStoresAttr = "jitd-stream-stores";

// Appends the kernel's functions, laid out as `plan` (PlanCpuKernel of
// `spec`) says, to `module` (which must have the target's data layout
// set). Errors name the op codegen could not handle (RESOURCE_EXHAUSTED:
// past kMaxKernelComputations); on an error nothing of the kernel stays in
// `module`.
Status EmitCpuKernel(llvm::Module& module, const KernelSpec& spec, const CpuKernelPlan& plan);

// PlanCpuKernel, then the above: the plan it emitted.
StatusOr<CpuKernelPlan> EmitCpuKernel(llvm::Module& module, const KernelSpec& spec);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_CPU_CPU_KERNEL_EMITTER_H_
