// stablehlo.rng_bit_generator on NVPTX, THREE_FRY with a 2-word u64 state
// and 64-bit output elements (jit/eval/rng_bits.h's 64-bit stream):
// element i is Threefry-2x32 (20 rounds) of counter + i under the key's
// words, low word first — the interpreter's bits exactly (integer
// arithmetic). Thread 0 also writes the new state [key, counter + n].
// Other algorithms, states and widths are refused by the cuda compiler.
//
//   ptx_kernel void NAME(ptr addrspace(1) noalias state, new_state, output)
#ifndef JITD_JIT_CODEGEN_NVPTX_RNG_KERNEL_H_
#define JITD_JIT_CODEGEN_NVPTX_RNG_KERNEL_H_

#include <string>

#include "base/status.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

bool IsNvptxEmittableRngBitGenerator(const ir::Op& op);

StatusOr<GridPlan> EmitRngBitGeneratorKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                             const GridLimits& limits);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_RNG_KERNEL_H_
