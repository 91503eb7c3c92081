// refine_shapes: turns a shape-polymorphic program (dynamism.md: `?`
// dimensions, the dynamic_* ops, shape computations on get_dimension_size)
// into a static one for the concrete argument types of one compile — what
// StableHLO's refine-arguments, refine-shapes and canonicalize-dynamism
// passes do for jax.export's shape polymorphism, in one pass of our own.
//
// What it does, in program order over the entry function (after inlining
// every call, so callees refine with their call site's types):
//  - the entry's arguments take `argument_types` (each must be static and
//    compatible with the declared type: same element type and rank, equal
//    static dimensions, within `#stablehlo.bounds`);
//  - each op's result types are inferred from its (now static) operand types
//    and the values of its constant shape operands;
//  - shape computations fold to constants: get_dimension_size, and the
//    integer ops on constants feeding shape operands (through jit/eval);
//  - dynamic ops whose shape operands are constants become their static
//    forms (dynamic_broadcast_in_dim -> broadcast_in_dim, dynamic_reshape ->
//    reshape, dynamic_iota -> iota, dynamic_pad -> pad, real_dynamic_slice ->
//    slice, dynamic_gather -> gather, dynamic_conv -> convolution);
//  - jax.export's `custom_call @shape_assertion` is checked and removed (a
//    false assertion fails with its error message);
//  - function result types become the returned values' types.
// A value still dynamic afterwards is refused: INVALID_ARGUMENT naming the
// value, its op and the op's line:col. The result is a static module that
// ir::VerifyModule checks in full.
//
// Thread-compatible: one call per module at a time.
#ifndef JITD_JIT_PASSES_REFINE_SHAPES_H_
#define JITD_JIT_PASSES_REFINE_SHAPES_H_

#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::passes {

// Whether some function signature, block argument or op result of `module`
// has a dynamic type (`?` dimension or a #stablehlo.bounds encoding).
bool HasDynamicShapes(const ir::Module& module);

// Refines `module` in place for `argument_types` (one per entry-function
// argument). A static module given its own argument types is left as it
// is; a static module given other types is refused (naming the argument).
Status RefineShapes(ir::Module& module, std::span<const ir::Type> argument_types);

// Rewrites every `custom_call @ApproxTopK` (jax's lax.approx_max_k /
// approx_min_k with a constant k, as jax.export writes it for CPU) into what
// XLA computes for it on CPU: a stable sort of its inputs along
// reduction_dim by its called comparator, then the first k. Programs of
// static shapes need this without refinement; devices::CompileProgram runs
// it on every program. Errors name the call and what is wrong.
Status LowerApproxTopK(ir::Module& module);

// Reads argument types written as a list of MLIR tensor types separated by
// commas or semicolons, e.g. "tensor<8x4xf32>, tensor<i32>" (the
// `--arg-shapes` flag of `jitd run` / `jitd check`). Errors name the entry.
StatusOr<std::vector<ir::Type>> ParseArgumentTypes(std::string_view text);

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_REFINE_SHAPES_H_
