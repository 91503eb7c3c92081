// What jit/codegen can compute inside one fused kernel, as the fusion pass's
// target policy (jit/passes/fusion.h): IsFusibleOp, IsEmittableReduce and
// IsCheapToDuplicate of kernel_emitter.h. The CPU device's pipeline fuses
// with it, and its planner fuses a module that arrives unfused with it.
#ifndef JITD_JIT_CODEGEN_FUSION_H_
#define JITD_JIT_CODEGEN_FUSION_H_

#include <memory>

#include "jit/passes/fusion.h"

namespace jitd::codegen {

passes::FusionPolicy CpuFusionPolicy();

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_FUSION_H_
