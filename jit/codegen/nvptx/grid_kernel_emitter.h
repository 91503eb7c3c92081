// The gpu schedule for NVPTX: one PTX kernel per KernelSpec, laid out by its
// GridPlan (kernel_plan.h), the element math from ElementalEmitter with
// NvptxTargetMath. The kernel's signature is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias in0, ..., out0, ...)
//
// inputs in KernelSpec::inputs order, then the root's results, then the
// extra outputs: every buffer a global-memory pointer, aligned to
// GridLimits::buffer_alignment bytes (declared `align N` when N > 1; the
// cuda device's buffers are 256-byte aligned), not aliasing any other (the
// caller's buffer assignment must not hand one kernel an input and an
// output that overlap). Flat plans with a vector_width above 1 compute
// that many neighbouring elements per thread, which the NVPTX backend
// turns into vector loads and stores (ld.global.v4.f32 ...). Launched with
// (plan.grid, 1, 1) blocks of (plan.block, 1, 1) threads and
// plan.shared_bytes of static shared memory (declared in the kernel).
#ifndef JITD_JIT_CODEGEN_NVPTX_GRID_KERNEL_EMITTER_H_
#define JITD_JIT_CODEGEN_NVPTX_GRID_KERNEL_EMITTER_H_

#include "base/status.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/codegen/kernel_plan.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether the NVPTX kernels can compute `op` element by element / root a
// reduce with it (IsFusibleOp / IsEmittableReduce with NvptxMath()).
bool IsNvptxFusibleOp(const ir::Op& op);
bool IsNvptxEmittableReduce(const ir::Op& op);

// Appends the kernel to `module` (triple nvptx64-nvidia-cuda and the
// target machine's data layout set). Errors name the op codegen could not
// handle; on an error nothing of the kernel stays in the module.
Status EmitGridKernel(llvm::Module& module, const KernelSpec& spec, const GridPlan& plan,
                      const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_GRID_KERNEL_EMITTER_H_
