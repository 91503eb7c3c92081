// Tuples and tokens across the wire (issue 16, item 6). The daemon passes
// only tensors as buffers; a program whose arguments or results hold tuples
// or tokens has them flattened into their tensor leaves, depth first, and
// described by a structure string that clients use to rebuild the tree:
//
//   structure := value*           one per top-level argument / result
//   value     := 't'              a tensor: the next leaf buffer
//              | 'k'              a token: no buffer, no bytes
//              | '(' value* ')'   a tuple of its elements
//
// e.g. (tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>) -> "t(tk)".
#ifndef JITD_DAEMON_VALUE_TREE_H_
#define JITD_DAEMON_VALUE_TREE_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/eval/eval.h"
#include "jit/ir/literal.h"
#include "jit/ir/type.h"

namespace jitd::daemon {

// The types' tensor leaves and structure. Fails naming the value for a type
// that cannot cross the wire (a !stablehlo.future).
struct ValueTree {
  std::vector<ir::Type> leaves;
  std::string structure;
  // Whether every value is a plain tensor (structure is "t" * count).
  bool flat = true;
};
StatusOr<ValueTree> FlattenTypes(const std::vector<ir::Type>& types, const char* what);

// Whether every type is a tensor (no tuple, token or future): the hot path's
// check, allocation-free.
bool AllTensors(const std::vector<ir::Type>& types);

// Rebuilds runtime values of `types` from their leaves (consumed in order);
// tokens become fresh tokens. The leaves' count must match.
StatusOr<std::vector<eval::RuntimeValue>> AssembleValues(const std::vector<ir::Type>& types,
                                                         std::vector<ir::Literal> leaves);

// The tensor leaves of `values`, depth first (tokens contribute none).
std::vector<const ir::Literal*> ValueLeaves(const std::vector<eval::RuntimeValue>& values);

// The inverse of FlattenTypes: the top-level types a structure string
// describes over `leaves` (tensor types, consumed in order). An empty
// structure means one tensor per leaf. Fails naming the position of a
// malformed structure or a leaf count that does not match.
StatusOr<std::vector<ir::Type>> TypesFromStructure(std::string_view structure,
                                                   const std::vector<ir::Type>& leaves);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_VALUE_TREE_H_
