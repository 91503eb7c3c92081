// Helpers the rewriting passes share (internal to jit/passes): reading
// constants, building small ops, and a walker that lets a rewrite insert ops
// before the op it visits and replace that op's results.
#ifndef JITD_JIT_PASSES_INTERNAL_REWRITE_UTIL_H_
#define JITD_JIT_PASSES_INTERNAL_REWRITE_UTIL_H_

#include <functional>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "jit/ir/literal.h"
#include "jit/ir/module.h"

namespace jitd::passes::internal {

// The DenseElementsAttr of `v` when a stablehlo.constant defines it.
const ir::DenseElementsAttr* ConstantAttr(const ir::Value* v);

// The single element of a constant whose elements are all equal (a splat
// or a dense constant with equal elements), as a rank-0 literal.
std::optional<ir::Literal> SplatValue(const ir::Value* v);

// An array<i64: ...> attribute.
ir::Attribute I64Array(std::vector<int64_t> values);

// A detached stablehlo.constant of `attr`.
std::unique_ptr<ir::Op> MakeConstant(ir::DenseElementsAttr attr, ir::Location loc,
                                     std::string name = "cst");
// A splat constant of `type` whose element is `scalar`'s (same dtype).
ir::DenseElementsAttr SplatAttr(const ir::Type& type, const ir::Literal& scalar);

// Walks every block of a function in program order and offers each op to a
// rewrite callback, which may insert new ops before the op (Insert) and
// return replacements for its results (or an empty vector to keep it).
// Replaced ops are erased when the walk ends, and every later use of their
// results (nested regions included) sees the replacement. Operands are
// remapped before an op is offered, so rewrites see the current program.
class RewriteWalker {
 public:
  using Rewrite = std::function<std::vector<ir::Value*>(ir::Op& op, RewriteWalker& walker)>;

  explicit RewriteWalker(Rewrite rewrite) : rewrite_(std::move(rewrite)) {}

  // Runs over `fn`; returns how many ops were replaced.
  int64_t Run(ir::Function& fn);

  // Inserts `op` before the op being rewritten; returns it.
  ir::Op* Insert(std::unique_ptr<ir::Op> op);

 private:
  void WalkRegion(ir::Region& region);

  Rewrite rewrite_;
  ir::ValueMap map_;
  // Replaced ops live here until the walk ends (map_ points at their results).
  std::vector<std::unique_ptr<ir::Op>> graveyard_;
  // The rebuilt op list of the block being walked.
  std::vector<std::unique_ptr<ir::Op>>* out_ = nullptr;
  ir::Block* block_ = nullptr;
  int64_t count_ = 0;
};

}  // namespace jitd::passes::internal

#endif  // JITD_JIT_PASSES_INTERNAL_REWRITE_UTIL_H_
