// Random arguments for `jitd run --random-inputs` that a real model computes
// meaningful (finite, well-scaled) numbers on.
//
// Uniform [-1, 1) weights blow a deep network's activations up to Inf/NaN,
// and random integers index outside the tables they select from. So each
// argument of the entry function is classified by how the program uses it,
// following its value through shape-only ops (reshape, transpose, convert,
// broadcast, slice, concatenate), calls and returns, and — for integers —
// index arithmetic (add, subtract, select, clamp):
//  - a float reaching an operand of dot_general / dot, or the kernel of a
//    convolution, is a weight: uniform in +-sqrt(3 / fan_in), fan_in the
//    product of the contracting dimensions (of the kernel: all but its
//    output feature dimension) — unit variance gain per layer;
//  - an integer reaching gather's start indices, or the start indices of
//    dynamic_slice / dynamic_update_slice, is an index: uniform in
//    [0, extent), extent the number of valid starts of the indexed dimension;
//  - other floats are data, uniform in [-1, 1); other integers are masks or
//    flags, 0 or 1 (a mask of -4 or 3 turns attention scores into -inf).
// Where a use is not found (a value that flows through other ops first), a
// float of rank >= 2 takes its fan-in from its shape: all dimensions but the
// last (JAX's [in, out] matrices and HWIO kernels).
//
// Stateless functions; thread-safe.
#ifndef JITD_TOOLS_RANDOM_INPUTS_H_
#define JITD_TOOLS_RANDOM_INPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/eval/eval.h"
#include "jit/ir/module.h"

namespace jitd::tools {

// What an entry argument is used for. Plain value.
struct ArgumentRole {
  enum class Kind : uint8_t { kData, kWeight, kIndex };
  Kind kind = Kind::kData;
  int64_t fan_in = 0;        // kWeight: the contraction a value is summed over
  int64_t index_extent = 0;  // kIndex: values lie in [0, index_extent)
  // "dot_general contracting 768", "gather of 30522" (for messages, tests).
  std::string why;
};

// One role per argument of `entry` (a function of `module`).
std::vector<ArgumentRole> InferArgumentRoles(const ir::Module& module, const ir::Function& entry);

// A seeded value of `type` for an argument of role `role` (tokens and tuples
// as before: tokens, tuples of data elements).
StatusOr<eval::RuntimeValue> RandomArgument(const ir::Type& type, const ArgumentRole& role,
                                            uint64_t seed);

// True when `results` hold at least one floating-point element and none of
// them is finite (all NaN or Inf): a run worth a hint.
bool AllFloatResultsNonFinite(const std::vector<eval::RuntimeValue>& results);

// The hint printed after such a run.
std::string NonFiniteHint(bool random_inputs);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_RANDOM_INPUTS_H_
