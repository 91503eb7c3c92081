// What jit/codegen can compute inside one fused kernel, as the fusion pass's
// target policy (jit/passes/fusion.h): IsFusibleOp, IsEmittableReduce and
// IsCheapToDuplicate of elemental_emitter.h. The CPU device's pipeline fuses
// with it, and its planner fuses a module that arrives unfused with it.
#ifndef JITD_JIT_CODEGEN_FUSION_H_
#define JITD_JIT_CODEGEN_FUSION_H_

#include <memory>
#include <optional>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/passes/fusion.h"

namespace jitd::codegen {

class TargetMath;

passes::FusionPolicy CpuFusionPolicy();

// What NVPTX kernels compute (IsFusibleOp / IsEmittableReduce with
// NvptxMath()): the cuda compiler fuses with it.
passes::FusionPolicy NvptxFusionPolicy();

// The kernel of a `jitd.fusion` op (its block's ops; the root is the op
// whose results the block returns first, extra outputs after them), or
// nullopt when the op is not one kernel `target` can emit (a root or a
// member the target cannot compute, too many ops). The spec's pointers
// point into `fusion`.
std::optional<KernelSpec> KernelSpecOfFusion(const ir::Op& fusion, const TargetMath& target);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_FUSION_H_
