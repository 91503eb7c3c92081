// Scalar regions, in one place: which blocks the emitter computes on
// scalars (IsScalarBlock: reduce bodies, sort comparators, reduce_window
// bodies, scatter updates, select_and_scatter's regions, on every target)
// and how (ScalarEmitter::EmitBlock), see scalar_emitter.h.
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/scalar_emitter.h"
#include "llvm/IR/Constants.h"

namespace jitd::codegen {

using ir::OpCode;

namespace {

// Scalar math on rank-0 values: one result, no index map (those are
// trivial on scalars but need an index).
bool IsScalarOp(const ir::Op& op, const TargetMath& target, const ScalarBlockRules& rules) {
  if (op.num_results() != 1 || op.result(0)->type().rank() != 0 || !IsFusibleOp(op, target)) return false;
  if (op.code() == OpCode::kBitcastConvert) return rules.bitcasts;
  return !IsIndexMap(op.code());
}

}  // namespace

bool IsScalarBlock(const ir::Block& block, const std::vector<ir::DType>& args, const std::vector<ir::DType>& results,
                   const TargetMath& target, ScalarBlockRules rules) {
  if (block.num_args() != args.size()) return false;
  std::unordered_set<const ir::Value*> defined;
  for (size_t i = 0; i < block.num_args(); ++i) {
    const ir::Type& t = block.arg(i)->type();
    if (!t.is_tensor() || t.rank() != 0 || t.dtype() != args[i]) return false;
    defined.insert(block.arg(i));
  }
  auto known = [&](const ir::Value* v) {
    if (defined.count(v)) return true;
    const ir::Op* def = v->defining_op();  // a splat constant outside the region
    return rules.outer_constants && def && def->code() == OpCode::kConstant && v->type().is_tensor() &&
           v->type().rank() == 0 && IsFusibleOp(*def, target);
  };
  for (const auto& op : block.ops()) {
    for (const ir::Value* v : op->operands()) {
      if (!known(v)) return false;
    }
    if (op->code() == OpCode::kReturn) {
      if (op.get() != block.ops().back().get() || op->num_operands() != results.size()) return false;
      for (size_t i = 0; i < results.size(); ++i) {
        const ir::Type& t = op->operand(i)->type();
        if (!t.is_tensor() || t.rank() != 0 || t.dtype() != results[i]) return false;
      }
      return true;
    }
    if (!IsScalarOp(*op, target, rules)) return false;
    defined.insert(op->result(0));
  }
  return false;  // no return
}

std::vector<llvm::Value*> ScalarEmitter::EmitBlock(const ir::Block& block, const std::vector<llvm::Value*>& args) {
  std::unordered_map<const ir::Value*, llvm::Value*> values;
  for (size_t i = 0; i < args.size() && i < block.num_args(); ++i) values[block.arg(i)] = args[i];
  auto value = [&](const ir::Value* v) -> llvm::Value* {
    if (auto it = values.find(v); it != values.end()) return it->second;
    if (const ir::Op* def = v->defining_op(); def && def->code() == OpCode::kConstant) return Constant(*def);
    Fail("a value of a region defined outside it");
    return llvm::UndefValue::get(ComputeType(v->type().dtype()));
  };
  for (const auto& op : block.ops()) {
    std::vector<llvm::Value*> operands;
    for (const ir::Value* v : op->operands()) operands.push_back(value(v));
    if (op->code() == OpCode::kReturn) return operands;
    if (op->num_results() != 1) {
      Fail("op '" + std::string(op->name()) + "' in a region has " + std::to_string(op->num_results()) +
           " results");
      return args;
    }
    values[op->result(0)] = op->code() == OpCode::kConstant ? Constant(*op) : Scalar(*op, operands);
  }
  Fail("a region without a return");
  return args;
}

}  // namespace jitd::codegen
