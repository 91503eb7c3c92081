// stablehlo.scatter on NVPTX, first lowering: exactly the interpreter's
// semantics (jit/eval/indexing.cc) by one thread that applies the update
// elements in row-major order of the updates' index space, skipping those
// whose result index is out of bounds, so duplicates combine in the same
// order and the results are the interpreter's bit for bit. The results
// start as copies of the operands (the caller's copy steps); the kernel is
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias result0, ..., resultN-1,
//                        indices, update0, ..., updateN-1)
//
// launched as one block of one thread. Serial: correct first; a parallel
// scatter (sorted or unique indices, a thread per update window) is next.
#ifndef JITD_JIT_CODEGEN_NVPTX_SCATTER_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_SCATTER_KERNEL_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// Whether EmitSerialScatterKernel handles `op`: N operands, integer
// indices, N updates of the operands' element types (no promotion), and an
// update computation of scalar math NVPTX kernels compute, using only its
// own arguments and values.
bool IsNvptxEmittableScatter(const ir::Op& op);

// Whether `block` is a region NVPTX kernels run on scalars
// (ElementalEmitter::EmitScalarBlock): rank-0 arguments of `args`' types
// (plain element types: pred, integers, f16, bf16, f32, f64, complex), ops
// IsNvptxFusibleOp computes on scalars, every value defined inside it, a
// return of `results`' types.
bool IsNvptxScalarBlock(const ir::Block& block, const std::vector<ir::DType>& args,
                        const std::vector<ir::DType>& results);

Status EmitSerialScatterKernel(llvm::Module& module, const ir::Op& scatter, const std::string& name);

// `ptx_kernel void NAME(ptr addrspace(1) noalias from, ptr addrspace(1)
// noalias to)` copying `bytes` bytes (in 8-, 4-, 2- or 1-byte words, the
// widest that divides `bytes`; buffers are aligned to that), a flat
// grid-stride kernel; its launch is the returned plan.
StatusOr<GridPlan> EmitCopyKernel(llvm::Module& module, const std::string& name, int64_t bytes,
                                  const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_SCATTER_KERNEL_H_
