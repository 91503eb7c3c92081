// Reducer bodies simple enough to fold without evaluating the region: one
// elementwise add, multiply, maximum, minimum, and, or or xor of the region's
// two scalar arguments, returned. jit/eval's reduce kernels fold these
// directly, and so does the CPU runtime library (devices/cpu/runtime), so
// both recognize exactly the same bodies. Stateless; thread-safe.
#ifndef JITD_JIT_EVAL_FOLD_H_
#define JITD_JIT_EVAL_FOLD_H_

#include <cstddef>
#include <optional>

#include "jit/ir/dtype.h"
#include "jit/ir/module.h"

namespace jitd::eval {

enum class FoldOp { kAdd, kMultiply, kMaximum, kMinimum, kAnd, kOr, kXor };

// The fold region `region` of `op` performs on scalars of `dtype`, for the
// element types where computing the op directly matches the elementwise
// kernel bit for bit (integers and pred; f16, bf16, f32, f64 except the
// bitwise ops); nullopt for anything else.
std::optional<FoldOp> RecognizeFold(const ir::Op& op, size_t region, ir::DType dtype);

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_FOLD_H_
