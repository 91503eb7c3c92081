// jit/passes fusion: groups ops into fused kernels and rewrites each group
// into a `jitd.fusion` op (ops.def), so the IR after the pass shows the
// kernels a device will emit (one NNN-fusion.mlir dump).
//
// Greedy producer-into-consumer fusion, as XLA's loop fusion: walking a
// block backwards, every op the target can compute element by element
// (FusionPolicy::is_fusible) or reduce (is_fusible_reduce) roots a kernel,
// and a fusible producer used only by that kernel joins it; cheap ops
// (is_cheap_to_duplicate: splat constants, iota, scalar broadcasts) are
// recomputed in every kernel that uses them; a reduce takes its elementwise
// producers along. Behind a broadcast that adds elements only data movement
// and cheap constants join (arithmetic there would be recomputed for every
// element of the bigger result: batch norm's per-channel rsqrt at every
// pixel); such arithmetic becomes a small kernel of its own.
//
// Multi-output fusion (FusionPolicy::multi_output): a producer that other
// ops read too (which would otherwise be written by a kernel of its own and
// read back) joins a consumer kernel that visits each of its elements once,
// at the same index — an elementwise consumer of its shape, or a reduce of
// its shape (BERT's residual add feeding layer norm's mean) — and that
// kernel also writes it as an extra output. It only joins when every other
// reader comes after the consumer (the fusion op takes the consumer's
// place in the block).
//
// Blocks rewritten: function bodies and the bodies of while / if / case
// (not reduce or sort bodies: those are scalar computations), except blocks
// nested ir::kMaxRegionNesting deep (a fusion op there would nest one level
// too deep). Everything else (ops codegen does not handle, ops with regions)
// stays as it is.
#ifndef JITD_JIT_PASSES_FUSION_H_
#define JITD_JIT_PASSES_FUSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"
#include "jit/passes/pass_manager.h"

namespace jitd::passes {

// What the target can compute inside a fused kernel (the CPU device uses
// jit/codegen's predicates: codegen::CpuFusionPolicy). Copyable; the
// functions must be thread-safe.
struct FusionPolicy {
  // Computable element by element inside a kernel (elementwise ops, index
  // maps, splat constants).
  std::function<bool(const ir::Op&)> is_fusible;
  // A reduce a kernel can root (with its elementwise producers fused).
  std::function<bool(const ir::Op&)> is_fusible_reduce;
  // Fusible and worth recomputing in every consumer.
  std::function<bool(const ir::Op&)> is_cheap_to_duplicate;
  bool multi_output = true;
  // At most this many ops in one kernel, constants not counted. Chains and
  // trees longer than that are cut into kernels of about this size, cut
  // points chosen bottom-up (see CutsForSize in fusion.cc): a chain of N
  // elementwise ops becomes N / max_ops kernels. It bounds code generation
  // per kernel.
  size_t max_ops = SIZE_MAX;
};

// One kernel of a block.
struct FusionGroup {
  const ir::Op* root = nullptr;
  // Ops computed inside, root first, then producers by descending position.
  std::vector<const ir::Op*> ops;
  // Values read from buffers, in first-use order.
  std::vector<const ir::Value*> inputs;
  // Results of member ops (not the root) that ops outside read too: the
  // kernel writes them after the root's results (multi-output fusion).
  std::vector<const ir::Value*> extra_outputs;
};

struct FusionPlan {
  std::vector<FusionGroup> groups;
  std::unordered_map<const ir::Op*, size_t> group_of_root;
  // Ops computed only inside the groups that use them (need no buffer).
  // Constants are never listed.
  std::unordered_set<const ir::Op*> fused_away;
  // Ops written as an extra output of a group (no kernel of their own).
  std::unordered_map<const ir::Op*, size_t> extra_output_of;
};

// The plan for one block (the block's own ops; uses inside nested regions
// count as uses by the op holding them).
FusionPlan PlanFusion(const ir::Block& block, const FusionPolicy& policy);

// Rewrites every function of `module` (see the file comment).
Status FuseModule(ir::Module& module, const FusionPolicy& policy);

// True when `module` holds a jitd.fusion op.
bool HasFusionOps(const ir::Module& module);

// The pass "fusion" (FuseModule).
std::unique_ptr<Pass> CreateFusionPass(FusionPolicy policy);

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_FUSION_H_
