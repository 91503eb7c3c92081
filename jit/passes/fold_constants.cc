// fold-constants: evaluates ops whose operands are all constants through the
// reference evaluator (jit/eval/EvaluateDetachedOp) and replaces them by a
// dense constant, so the folded program computes exactly what the
// interpreter would have. Folding cascades in one run: ops are visited in
// program order, and an op's operands already point at folded constants.
//
// Not folded:
//  - ops with side effects (HasSideEffects), token and tuple results;
//  - replica_id / partition_id (they differ per replica at run time);
//  - while (may not terminate), if/case and region ops whose regions use
//    values from outside the op (the evaluator runs the op alone);
//  - iota, and broadcast_in_dim / broadcast of a non-splat operand to a
//    bigger result: they turn a small program into a big constant (XLA's
//    HloConstantFolding skips them too). Broadcasts of splat constants
//    become splat constants of any size (one element in the IR);
//  - results bigger than max_folded_bytes in total;
//  - anything the evaluator fails on (unimplemented op, elided resource
//    data, a run-time error): the op stays and reports at run time.
#include <unordered_set>

#include "jit/eval/eval.h"
#include "jit/passes/internal/rewrite_util.h"
#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Op;
using ir::OpCode;

// True when some op inside `op`'s regions uses a value defined outside them.
bool RegionsCapture(const Op& op) {
  std::unordered_set<const ir::Value*> inside;
  bool captures = false;
  for (size_t r = 0; r < op.num_regions(); ++r) {
    ir::WalkOps(static_cast<const ir::Region&>(op.region(r)), [&](const Op& inner) {
      for (size_t i = 0; i < inner.num_results(); ++i) inside.insert(inner.result(i));
      for (size_t k = 0; k < inner.num_regions(); ++k) {
        const ir::Region& reg = inner.region(k);
        for (size_t b = 0; b < reg.num_blocks(); ++b) {
          for (size_t a = 0; a < reg.block(b).num_args(); ++a) inside.insert(reg.block(b).arg(a));
        }
      }
    });
    const ir::Region& reg = op.region(r);
    for (size_t b = 0; b < reg.num_blocks(); ++b) {
      for (size_t a = 0; a < reg.block(b).num_args(); ++a) inside.insert(reg.block(b).arg(a));
    }
  }
  // Values are defined before their uses, so a second walk sees them all.
  for (size_t r = 0; r < op.num_regions() && !captures; ++r) {
    ir::WalkOps(static_cast<const ir::Region&>(op.region(r)), [&](const Op& inner) {
      for (const ir::Value* v : inner.operands()) {
        if (!inside.count(v)) captures = true;
      }
    });
  }
  return captures;
}

bool Foldable(const Op& op, int64_t max_bytes) {
  switch (op.code()) {
    case OpCode::kConstant:
    case OpCode::kReplicaId:
    case OpCode::kPartitionId:
    case OpCode::kWhile:
    case OpCode::kIota:
    case OpCode::kAfterAll:
    case OpCode::kCreateToken:
    case OpCode::kGetDimensionSize:  // static shapes: fine, but left to codegen
    // Collectives: their values depend on the other processes of the
    // execution, which a compile-time evaluation (one process) lacks.
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kAllToAll:
    case OpCode::kReduceScatter:
    case OpCode::kCollectivePermute:
    case OpCode::kCollectiveBroadcast:
    case OpCode::kCollectiveReduce:
    case OpCode::kCrossReplicaSum:
      return false;
    case OpCode::kBroadcastInDim:
    case OpCode::kBroadcast:
      // Splats are handled without evaluation (Fold); others only when the
      // result is no bigger than the operand.
      if (op.operand(0)->type().num_elements() < op.result(0)->type().num_elements()) {
        return false;
      }
      break;
    default:
      break;
  }
  if (op.num_results() == 0 || HasSideEffects(op)) return false;
  int64_t bytes = 0;
  for (size_t i = 0; i < op.num_results(); ++i) {
    const ir::Type& t = op.result(i)->type();
    if (!t.is_tensor()) return false;
    bytes += t.byte_size();
  }
  if (bytes > max_bytes) return false;
  for (const ir::Value* v : op.operands()) {
    const Op* def = v->defining_op();
    if (!def || def->code() != OpCode::kConstant) return false;
  }
  return op.num_regions() == 0 || !RegionsCapture(op);
}

class FoldConstantsPass : public Pass {
 public:
  explicit FoldConstantsPass(int64_t max_bytes) : max_bytes_(max_bytes) {}
  std::string_view name() const override { return "fold-constants"; }

  Status Run(ir::Module& module) override {
    eval::EvalOptions options;
    options.max_literal_bytes = std::max<int64_t>(max_bytes_, 1);
    for (const auto& fn : module.functions()) {
      internal::RewriteWalker walker([&](Op& op, internal::RewriteWalker& w) {
        return Fold(module, op, w, options);
      });
      walker.Run(*fn);
    }
    cache_.clear();
    return Status::Ok();
  }

 private:
  std::vector<ir::Value*> Fold(const ir::Module& module, Op& op, internal::RewriteWalker& w,
                               const eval::EvalOptions& options) {
    if ((op.code() == OpCode::kBroadcastInDim || op.code() == OpCode::kBroadcast) &&
        op.result(0)->type().is_tensor()) {
      // Broadcasting a splat constant copies its one element everywhere: a
      // splat constant of the result type, whatever its size (it stays one
      // element in the IR).
      if (std::optional<ir::Literal> s = internal::SplatValue(op.operand(0))) {
        return {w.Insert(internal::MakeConstant(internal::SplatAttr(op.result(0)->type(), *s),
                                                op.loc()))
                    ->result(0)};
      }
    }
    if (!Foldable(op, max_bytes_)) return {};
    std::vector<eval::RuntimeValue> operands;
    operands.reserve(op.num_operands());
    for (const ir::Value* v : op.operands()) {
      // Evaluate the defining constant (dense, or a resource blob).
      auto value = ConstantValue(module, *v->defining_op());
      if (!value) return {};
      operands.push_back(*value);
    }
    auto results = eval::EvaluateDetachedOp(module, op, std::move(operands), options);
    if (!results.ok()) return {};
    std::vector<ir::Value*> replacements;
    for (size_t i = 0; i < results->size(); ++i) {
      const eval::RuntimeValue& r = (*results)[i];
      if (!r.is_tensor() || r.type() != op.result(i)->type()) return {};
    }
    for (size_t i = 0; i < results->size(); ++i) {
      ir::Op* c = w.Insert(internal::MakeConstant(ir::MakeDenseElements((*results)[i].literal()),
                                                  op.loc()));
      replacements.push_back(c->result(0));
    }
    return replacements;
  }

  // The value of a constant op, cached per op (a constant feeds many ops).
  const eval::RuntimeValue* ConstantValue(const ir::Module& module, const Op& constant) {
    auto it = cache_.find(&constant);
    if (it != cache_.end()) return it->second ? &*it->second : nullptr;
    eval::EvalOptions options;
    options.max_literal_bytes = int64_t{1} << 30;
    auto r = eval::EvaluateDetachedOp(module, constant, {}, options);
    std::optional<eval::RuntimeValue> value;
    if (r.ok() && r->size() == 1) value = std::move((*r)[0]);
    auto [pos, _] = cache_.emplace(&constant, std::move(value));
    return pos->second ? &*pos->second : nullptr;
  }

  int64_t max_bytes_;
  std::unordered_map<const Op*, std::optional<eval::RuntimeValue>> cache_;
};

}  // namespace

std::unique_ptr<Pass> CreateFoldConstantsPass(int64_t max_folded_bytes) {
  return std::make_unique<FoldConstantsPass>(max_folded_bytes);
}

}  // namespace jitd::passes
