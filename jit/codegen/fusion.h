// Fusion planning for one block: which ops become loop kernels (KernelSpec
// roots), which producers are computed inside their consumers' kernels, and
// which values those kernels read from buffers.
//
// Greedy producer-into-consumer fusion, as XLA's loop fusion: walking the
// block backwards, a fusible op used only by one kernel joins that kernel;
// cheap ops (splat constants, iota, scalar broadcasts) are recomputed in
// every kernel that uses them; a reduce takes its elementwise producers
// along. Behind a broadcast that adds elements only data movement and cheap
// constants join (arithmetic there would be recomputed for every element of
// the bigger result: batch norm's per-channel rsqrt at every pixel); such
// arithmetic becomes a small kernel of its own. Everything else (ops codegen
// does not handle, ops with regions) is left to the caller, which reads
// their results from buffers.
#ifndef JITD_JIT_CODEGEN_FUSION_H_
#define JITD_JIT_CODEGEN_FUSION_H_

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/codegen/kernel_emitter.h"
#include "jit/ir/module.h"

namespace jitd::codegen {

struct FusionPlan {
  // KernelSpec::name is left empty (the caller names symbols).
  std::vector<KernelSpec> kernels;
  // root op -> index into kernels.
  std::unordered_map<const ir::Op*, size_t> kernel_of_root;
  // Ops of the block that need no thunk: computed inside every kernel that
  // uses them (constants are never listed; the caller materializes them
  // where a buffer is needed).
  std::unordered_set<const ir::Op*> fused_away;
};

FusionPlan PlanFusion(const ir::Block& block);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_FUSION_H_
