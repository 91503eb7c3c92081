// flatten_signature: rewrites a module's entry function so that it takes and
// returns tensors only, for callers that pass raw buffers (the daemon: a
// program whose signature holds tuples or tokens then runs on the same
// buffer path as any other, daemon/value_tree.h).
//
// The leaves keep the order of a depth-first walk over the old signature
// (daemon::FlattenTypes' order), tokens contributing none:
//  - a tensor argument stays an argument (its attributes kept);
//  - a tuple argument becomes one argument per tensor leaf, and the tuple is
//    rebuilt at the top of the body with stablehlo.tuple (canonicalize folds
//    get_tuple_element of it);
//  - a token argument becomes a fresh token made inside (stablehlo.after_all
//    without operands): a caller's token carries no data;
//  - a tuple result is taken apart with get_tuple_element, one result per
//    tensor leaf; a token result is dropped (the op that made it stays, its
//    side effect kept by HasSideEffects).
// Other functions keep their signatures. The rewritten entry is a new
// function of the same name, visibility and attributes, appended to the
// module in place of the old one (the function order changes). Calls of
// the entry inside the module (func.call, a composite's decomposition) go
// to a private copy of it as it was, `@<name>_structured`, which keeps the
// old signature. A signature of tensors only is left as it is.
//
// Not a pipeline pass (it changes what a caller passes): devices::
// CompileProgram runs it on request (ProgramCompileOptions::flatten_signature).
// Thread-compatible: one call per module at a time.
#ifndef JITD_JIT_PASSES_FLATTEN_SIGNATURE_H_
#define JITD_JIT_PASSES_FLATTEN_SIGNATURE_H_

#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::passes {

// Whether every type is a tensor (no tuple, token or future).
bool AllTensorTypes(const std::vector<ir::Type>& types);

// Rewrites `module`'s entry function as above. The module must verify.
Status FlattenEntrySignature(ir::Module& module);

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_FLATTEN_SIGNATURE_H_
