// The custom-call targets jitd implements: a fixed registry with the
// semantics of the targets jaxlib registers for the CPU, which programs
// exported by `jax.export` for CPU call (jnp.linalg's LAPACK kernels), plus
// jax's own `shape_assertion` and the single-device `Sharding` marker.
//
// LAPACK targets (`lapack_{s,d,c,z}<routine>_ffi`, and `blas_?trsm_ffi`, the
// name trsm had before jaxlib renamed it) follow jaxlib's typed-FFI
// conventions: operands and results as jaxlib's kernels bind them (e.g.
// potrf: (a) -> (a_out, info)), attributes in the `mhlo.backend_config`
// dictionary (`uplo = 76 : ui8` is 'L'), leading dimensions batch, and each
// buffer in the physical order its `operand_layouts` / `result_layouts`
// entry gives (minor-to-major; jaxlib writes column-major matrices). A
// buffer without a layout is row-major, as XLA's default layout. LAPACK
// status travels in the `info` results as jaxlib's kernels leave it; only a
// program that breaks the conventions (wrong arity, element type, shape or
// attribute) is an error, and it names the target and what is wrong.
//
// The computation is Debian's OpenBLAS (its LAPACK symbols). Thread-safe.
#ifndef JITD_JIT_EVAL_CUSTOM_CALLS_H_
#define JITD_JIT_EVAL_CUSTOM_CALLS_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/ir/literal.h"
#include "jit/ir/module.h"

namespace jitd::eval {

// True when `target` is a call_target_name the registry implements.
bool IsRegisteredCustomCall(std::string_view target);

// OK when `target` is one the registry implements; otherwise UNIMPLEMENTED
// naming it (with what jitd implements instead, for LAPACK-like names, and
// why for jax's Python callbacks). What compiles check before any run.
Status CheckCustomCallTarget(std::string_view target);

// Runs the custom_call `op` on its operand values (one tensor literal per
// operand, in order) and returns one literal per result. Unknown targets are
// UNIMPLEMENTED, naming the target; a failed @shape_assertion is
// INVALID_ARGUMENT with its error_message (`{0}` etc. filled with the
// dimension operands).
StatusOr<std::vector<ir::Literal>> RunCustomCall(const ir::Op& op,
                                                 std::span<const ir::Literal* const> operands);

// The operands a shape-polymorphic export appended to carry its results'
// shapes (jax's `indices_of_shape_operands`: the k-th listed operand holds
// result k's dimensions as an integer vector); empty when absent. Shape
// refinement reads them; the kernels never see them.
StatusOr<std::vector<int64_t>> ShapeOperandIndices(const ir::Op& op);

// The names the registry implements, sorted (for errors and documentation).
std::vector<std::string> RegisteredCustomCalls();

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_CUSTOM_CALLS_H_
