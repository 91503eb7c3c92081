#include "jit/codegen/fusion.h"

#include <algorithm>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/codegen/target_math.h"

namespace jitd::codegen {

passes::FusionPolicy CpuFusionPolicy() {
  passes::FusionPolicy policy;
  policy.is_fusible = [](const ir::Op& op) { return IsFusibleOp(op); };
  policy.is_fusible_reduce = [](const ir::Op& op) { return IsEmittableReduce(op); };
  policy.is_cheap_to_duplicate = [](const ir::Op& op) { return IsCheapToDuplicate(op); };
  policy.multi_output = true;
  policy.max_ops = kMaxKernelOps;
  return policy;
}

passes::FusionPolicy NvptxFusionPolicy() {
  passes::FusionPolicy policy;
  policy.is_fusible = [](const ir::Op& op) { return IsFusibleOp(op, NvptxMath()); };
  policy.is_fusible_reduce = [](const ir::Op& op) { return IsEmittableReduce(op, NvptxMath()); };
  policy.is_cheap_to_duplicate = [](const ir::Op& op) { return IsCheapToDuplicate(op); };
  policy.multi_output = true;
  policy.max_ops = kMaxKernelOps;
  return policy;
}

std::optional<KernelSpec> KernelSpecOfFusion(const ir::Op& fusion, const TargetMath& target) {
  using ir::OpCode;
  if (fusion.code() != OpCode::kFusion || fusion.num_regions() != 1 || fusion.region(0).num_blocks() != 1) {
    return std::nullopt;
  }
  const ir::Block& block = fusion.region(0).block(0);
  const ir::Op* ret = block.terminator();
  if (!ret || ret->code() != OpCode::kReturn || ret->num_operands() == 0) return std::nullopt;
  KernelSpec spec;
  spec.root = ret->operand(0)->defining_op();
  if (!spec.root || spec.root->parent_block() != &block) return std::nullopt;
  const size_t n = spec.root->num_results();
  if (ret->num_operands() < n) return std::nullopt;
  for (size_t i = 0; i < n; ++i) {
    if (ret->operand(i) != spec.root->result(i)) return std::nullopt;
  }
  const bool reduce = spec.root->code() == OpCode::kReduce;
  if (reduce ? !IsEmittableReduce(*spec.root, target) : !IsFusibleOp(*spec.root, target)) return std::nullopt;
  const ir::Type& space = reduce ? spec.root->operand(0)->type() : spec.root->result(0)->type();
  for (size_t i = n; i < ret->num_operands(); ++i) {
    const ir::Value* v = ret->operand(i);
    const ir::Op* def = v->defining_op();
    if (!def || def == spec.root || def->parent_block() != &block || v->type().dims() != space.dims()) {
      return std::nullopt;
    }
    spec.extra_outputs.push_back(v);
  }
  const auto& ops = block.ops();
  for (size_t i = ops.size() - 1; i-- > 0;) {
    const ir::Op* op = ops[i].get();
    if (op != spec.root && !IsFusibleOp(*op, target)) return std::nullopt;
    spec.fused.push_back(op);
  }
  if (spec.fused.front() != spec.root) {
    auto it = std::find(spec.fused.begin(), spec.fused.end(), spec.root);
    std::rotate(spec.fused.begin(), it, it + 1);
  }
  for (size_t i = 0; i < block.num_args(); ++i) spec.inputs.push_back(block.arg(i));
  if (KernelOps(spec) > kMaxKernelOps) return std::nullopt;
  return spec;
}

}  // namespace jitd::codegen
