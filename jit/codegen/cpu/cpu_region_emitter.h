// Region functions for the CPU device's library ops: a sort comparator or
// a reduce_window body compiled on its own, with the kernels' scalar
// semantics (the elemental emitter's scalar regions, scalar_emitter.h), and
// called by devices/cpu/runtime per element pair.
#ifndef JITD_JIT_CODEGEN_CPU_CPU_REGION_EMITTER_H_
#define JITD_JIT_CODEGEN_CPU_CPU_REGION_EMITTER_H_

#include <string>

#include "base/status.h"
#include "jit/ir/module.h"

namespace llvm {
class Module;
}

namespace jitd::codegen {

// True when `sort`'s comparator region compiles: one block of scalar math
// (IsFusibleOp ops on rank-0 values, splat constants, also ones defined
// outside the region; no bitcast_convert) on its 2N rank-0 arguments
// returning one i1.
bool IsEmittableComparator(const ir::Op& sort);

// Appends `i8 NAME(const void* const* lhs, const void* const* rhs)` to
// `module`: lhs[i] / rhs[i] point at one element of sort operand i; returns
// 1 when lhs sorts before rhs (the region's i1 result), else 0. Pure and
// thread-safe. Errors name the op codegen could not handle.
Status EmitComparator(llvm::Module& module, const ir::Op& sort, const std::string& name);

// True when `reduce_window`'s body compiles: N inputs, N rank-0 inits and N
// results of one element type each (per i), and a body of scalar math (as
// a comparator's) on its 2N rank-0 arguments returning N values of the
// result types.
bool IsEmittableReduceWindowBody(const ir::Op& reduce_window);

// Appends `void NAME(void* const* acc, const void* const* x)` to `module`:
// acc[i] points at accumulator i (an element of result i's type), x[i] at
// one element of input i; the body's results overwrite the accumulators
// (all computed before any is written). Thread-safe on distinct
// accumulators. Errors name the op codegen could not handle.
Status EmitReduceWindowBody(llvm::Module& module, const ir::Op& reduce_window, const std::string& name);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_CPU_CPU_REGION_EMITTER_H_
