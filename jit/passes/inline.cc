// inline: replaces every func.call by a copy of its callee's body, then
// drops the private functions nothing calls any more.
//
// Functions are processed callees first, so a body that is copied into a
// caller has no calls left to inline. Calls into a cycle of the call graph
// (recursion, which the verifier does not forbid and the evaluator bounds by
// depth) and calls to bodiless declarations stay as they are.
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Function;
using ir::Op;
using ir::OpCode;

const Function* Callee(const ir::Module& module, const Op& call) {
  const ir::Attribute* a = call.attr("callee");
  const auto* ref = a ? a->get_if<ir::SymbolRefAttr>() : nullptr;
  return ref ? module.FindFunction(ref->name) : nullptr;
}

class InlinePass : public Pass {
 public:
  std::string_view name() const override { return "inline"; }

  Status Run(ir::Module& module) override {
    FindRecursive(module);
    done_.clear();
    for (const auto& fn : module.functions()) {
      JITD_RETURN_IF_ERROR(InlineInto(module, *fn));
    }
    RemoveUnusedPrivateFunctions(module);
    return Status::Ok();
  }

 private:
  // Marks every function that lies on a cycle of the call graph.
  void FindRecursive(const ir::Module& module) {
    std::unordered_map<const Function*, std::vector<const Function*>> edges;
    for (const auto& fn : module.functions()) {
      auto& out = edges[fn.get()];
      ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const Op& op) {
        if (op.code() != OpCode::kFuncCall) return;
        if (const Function* callee = Callee(module, op)) out.push_back(callee);
      });
    }
    // A function is recursive when it can reach itself.
    recursive_.clear();
    for (const auto& fn : module.functions()) {
      std::unordered_set<const Function*> seen;
      std::vector<const Function*> stack(edges[fn.get()].begin(), edges[fn.get()].end());
      while (!stack.empty()) {
        const Function* f = stack.back();
        stack.pop_back();
        if (f == fn.get()) {
          recursive_.insert(fn.get());
          break;
        }
        if (!seen.insert(f).second) continue;
        for (const Function* g : edges[f]) stack.push_back(g);
      }
    }
  }

  bool Inlinable(const Function* callee) const {
    return callee && callee->entry() && callee->body().num_blocks() == 1 &&
           !recursive_.count(callee);
  }

  // Inlines every inlinable call in `fn` (after doing the same in its callees).
  Status InlineInto(ir::Module& module, Function& fn) {
    if (!done_.insert(&fn).second) return Status::Ok();
    std::vector<Op*> calls;
    ir::WalkOps(fn.body(), [&](Op& op) {
      if (op.code() == OpCode::kFuncCall && Inlinable(Callee(module, op))) calls.push_back(&op);
    });
    if (calls.empty()) return Status::Ok();
    for (Op* call : calls) {
      Function* callee = const_cast<Function*>(Callee(module, *call));
      if (callee == &fn) continue;  // unreachable: self-calls are recursive
      JITD_RETURN_IF_ERROR(InlineInto(module, *callee));
    }
    // Copy each body before its call; the call's results become the copied
    // return's operands. Uses are rewritten in one sweep at the end, and the
    // calls erased after that (so no pointer in `results` dangles meanwhile).
    ir::ValueMap results;
    for (Op* call : calls) {
      const Function* callee = Callee(module, *call);
      const ir::Block& body = *callee->entry();
      if (body.num_args() != call->num_operands()) {
        return Internal(call->loc().ToString() + ": call to @" + callee->name() +
                        " has the wrong number of operands");
      }
      ir::ValueMap mapping;
      for (size_t i = 0; i < body.num_args(); ++i) mapping[body.arg(i)] = call->operand(i);
      ir::Block& block = *call->parent_block();
      size_t at = *block.IndexOf(call);
      const Op* ret = body.terminator();
      for (const auto& op : body.ops()) {
        if (op.get() == ret) break;
        block.InsertOp(at++, ir::CloneOp(*op, mapping));
      }
      if (!ret || ret->num_operands() != call->num_results()) {
        return Internal(call->loc().ToString() + ": @" + callee->name() +
                        " returns a different number of values than the call has results");
      }
      for (size_t i = 0; i < ret->num_operands(); ++i) {
        auto it = mapping.find(ret->operand(i));
        results[call->result(i)] = it == mapping.end() ? ret->operand(i) : it->second;
      }
    }
    ir::RemapOperands(fn.body(), results);
    std::unordered_set<const Op*> erase(calls.begin(), calls.end());
    std::function<void(ir::Region&)> sweep = [&](ir::Region& region) {
      for (size_t b = 0; b < region.num_blocks(); ++b) {
        ir::Block& block = region.block(b);
        block.EraseOpsIf([&](const Op& op) { return erase.count(&op) > 0; });
        for (const auto& op : block.ops()) {
          for (size_t r = 0; r < op->num_regions(); ++r) sweep(op->region(r));
        }
      }
    };
    sweep(fn.body());
    return Status::Ok();
  }

  void RemoveUnusedPrivateFunctions(ir::Module& module) {
    const Function* entry = module.EntryFunction();
    // Repeat: removing a function can leave its callees unused.
    for (bool changed = true; changed;) {
      changed = false;
      std::unordered_set<std::string> called;
      for (const auto& fn : module.functions()) {
        ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const Op& op) {
          if (op.code() != OpCode::kFuncCall) return;
          const ir::Attribute* a = op.attr("callee");
          if (const auto* ref = a ? a->get_if<ir::SymbolRefAttr>() : nullptr) {
            called.insert(ref->name);
          }
        });
      }
      std::vector<std::string> unused;
      for (const auto& fn : module.functions()) {
        if (fn.get() == entry || fn->is_public() || called.count(fn->name())) continue;
        unused.push_back(fn->name());
      }
      for (const std::string& name : unused) changed |= module.RemoveFunction(name);
    }
  }

  std::unordered_set<const Function*> recursive_;
  std::unordered_set<const Function*> done_;
};

}  // namespace

std::unique_ptr<Pass> CreateInlinePass() { return std::make_unique<InlinePass>(); }

}  // namespace jitd::passes
