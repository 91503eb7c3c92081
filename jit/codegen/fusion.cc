#include "jit/codegen/fusion.h"

#include "jit/codegen/kernel_emitter.h"

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

}  // namespace jitd::codegen
