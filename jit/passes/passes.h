// The individual passes of jit/passes and what they share. Each pass is a
// stateless object (thread-compatible: one run at a time per object); every
// rewrite it makes gives the same results as the input program under the
// reference evaluator (jit/eval), bit for bit, except where a pass's comment
// says otherwise. PassManager (pass_manager.h) runs them in order.
#ifndef JITD_JIT_PASSES_PASSES_H_
#define JITD_JIT_PASSES_PASSES_H_

#include <cstdint>
#include <memory>

#include "jit/ir/module.h"
#include "jit/passes/pass_manager.h"

namespace jitd::passes {

// inline.cc: inlines every func.call whose callee has a body and is not
// (mutually) recursive, then removes private functions nothing calls. The
// entry function and public functions stay.
std::unique_ptr<Pass> CreateInlinePass();

// inline_async.cc: replaces each stablehlo.async_start by the op of its body
// and each async_done by that op's results (a synchronous run, which
// spec.md allows); a future it cannot follow is refused (UNIMPLEMENTED).
// The inline pass ends with it: after it, no value of the module is a
// future.
Status InlineAsyncOps(ir::Module& module);

// chlo_decompose.cc: rewrites the CHLO ops whose StableHLO expansion the
// evaluator computes bit-identically (see the file for the list).
std::unique_ptr<Pass> CreateDecomposeChloPass();

// canonicalize.cc: algebraic simplifications that are exact (each rewrite's
// comment says why).
std::unique_ptr<Pass> CreateCanonicalizePass();

// fold_constants.cc: evaluates side-effect-free ops whose operands are all
// constants through jit/eval and replaces them by a dense constant of at most
// `max_folded_bytes` result bytes.
std::unique_ptr<Pass> CreateFoldConstantsPass(int64_t max_folded_bytes);

// cse.cc: merges ops with identical opcode, operands, attributes, result
// types and (structurally equal) regions.
std::unique_ptr<Pass> CreateCsePass();

// dce.cc: removes side-effect-free ops whose results are unused, in nested
// regions too.
std::unique_ptr<Pass> CreateDcePass();

// ---- Shared op properties ----------------------------------------------------

// True when running `op` does something besides computing its results
// (infeed/outfeed, custom_call, rng, checks, calls, barriers...), or when
// one of its regions holds such an op. Such ops are never removed, merged or
// folded.
bool HasSideEffects(const ir::Op& op);

// Number of ops in the module (nested regions included, terminators too).
int64_t CountOps(const ir::Module& module);

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_PASSES_H_
