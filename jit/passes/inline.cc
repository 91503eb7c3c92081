// inline: replaces every func.call by a copy of its callee's body, then
// drops the private functions nothing calls any more; last, async_start /
// async_done become the op they wrap (InlineAsyncOps, inline_async.cc).
//
// Each function is expanded top-down: a call becomes a copy of its callee's
// body, and calls met in that body are expanded in turn, with an explicit
// stack of callee frames (a chain of N calls costs no native stack and O(N)
// work; copying fully inlined callees into callers would cost O(N^2)). The
// entry and public functions are expanded first, then the private functions
// something still calls.
//
// Calls stay as they are when their callee lies on a cycle of the call graph
// (recursion, which the verifier does not forbid and the evaluator bounds
// by depth) or has no body; when the copy would nest regions deeper than
// ir::kMaxRegionNesting; and once the ops copied reach the budget (four
// times the module, at least 2^18 ops), since a tree of calls can make the
// inlined program exponentially large. A call left in place still runs:
// devices plan or evaluate calls.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Function;
using ir::Op;
using ir::OpCode;

constexpr int64_t kMinInlineBudget = int64_t{1} << 18;
constexpr int64_t kInlineBudgetFactor = 4;

// A func.call's callee, or a stablehlo.composite's decomposition (the
// function that defines what the composite computes: inlined like a call).
bool IsCall(const Op& op) {
  return op.code() == OpCode::kFuncCall || op.code() == OpCode::kComposite;
}

const Function* Callee(const ir::Module& module, const Op& call) {
  const ir::Attribute* a = call.attr(call.code() == OpCode::kComposite ? "decomposition" : "callee");
  const auto* ref = a ? a->get_if<ir::SymbolRefAttr>() : nullptr;
  return ref ? module.FindFunction(ref->name) : nullptr;
}

// The callees of every call in `fn`'s body, nested regions included.
std::vector<const Function*> CalleesOf(const ir::Module& module, const Function& fn) {
  std::vector<const Function*> out;
  ir::WalkOps(static_cast<const ir::Region&>(fn.body()), [&](const Op& op) {
    if (!IsCall(op)) return;
    if (const Function* callee = Callee(module, op)) out.push_back(callee);
  });
  return out;
}

class InlinePass : public Pass {
 public:
  std::string_view name() const override { return "inline"; }

  Status Run(ir::Module& module) override {
    module_ = &module;
    FindRecursive(module);
    budget_ = std::max(kMinInlineBudget, kInlineBudgetFactor * CountOps(module));
    copied_ = 0;
    nesting_.clear();
    sizes_.clear();
    std::unordered_set<const Function*> expanded;
    // The interface first, then the private functions still called.
    const Function* entry = module.EntryFunction();
    for (const auto& fn : module.functions()) {
      if (fn.get() != entry && !fn->is_public()) continue;
      JITD_RETURN_IF_ERROR(Expand(*fn));
      expanded.insert(fn.get());
    }
    RemoveUnreachablePrivateFunctions(module);
    for (const auto& fn : module.functions()) {
      if (expanded.count(fn.get())) continue;
      JITD_RETURN_IF_ERROR(Expand(*fn));
    }
    RemoveUnreachablePrivateFunctions(module);
    module_ = nullptr;
    return InlineAsyncOps(module);
  }

 private:
  // Marks every function that lies on a cycle of the call graph (Tarjan's
  // strongly connected components, with an explicit stack).
  void FindRecursive(const ir::Module& module) {
    std::unordered_map<const Function*, std::vector<const Function*>> edges;
    for (const auto& fn : module.functions()) edges[fn.get()] = CalleesOf(module, *fn);
    recursive_.clear();
    struct Info {
      int index = -1;
      int low = 0;
      bool on_stack = false;
    };
    std::unordered_map<const Function*, Info> info;
    std::vector<const Function*> scc_stack;
    int next_index = 0;
    struct Frame {
      const Function* fn;
      size_t next_edge = 0;
    };
    for (const auto& root : module.functions()) {
      if (info[root.get()].index >= 0) continue;
      std::vector<Frame> dfs = {{root.get()}};
      info[root.get()] = {next_index, next_index, true};
      ++next_index;
      scc_stack.push_back(root.get());
      while (!dfs.empty()) {
        Frame& f = dfs.back();
        const std::vector<const Function*>& out = edges[f.fn];
        if (f.next_edge < out.size()) {
          const Function* g = out[f.next_edge++];
          if (g == f.fn) recursive_.insert(g);  // calls itself
          Info& gi = info[g];
          if (gi.index < 0) {
            gi = {next_index, next_index, true};
            ++next_index;
            scc_stack.push_back(g);
            dfs.push_back({g});
          } else if (gi.on_stack) {
            Info& fi = info[f.fn];
            fi.low = std::min(fi.low, gi.index);
          }
          continue;
        }
        const Function* fn = f.fn;
        dfs.pop_back();
        const Info fi = info[fn];
        if (!dfs.empty()) {
          Info& parent = info[dfs.back().fn];
          parent.low = std::min(parent.low, fi.low);
        }
        if (fi.low != fi.index) continue;
        // `fn` roots a component: pop it; more than one member is a cycle.
        std::vector<const Function*> component;
        const Function* member = nullptr;
        do {
          member = scc_stack.back();
          scc_stack.pop_back();
          info[member].on_stack = false;
          component.push_back(member);
        } while (member != fn);
        if (component.size() > 1) recursive_.insert(component.begin(), component.end());
      }
    }
  }

  // How deep regions nest in `fn`'s body (0: no op there has regions).
  int BodyNesting(const Function* fn) {
    auto [it, is_new] = nesting_.try_emplace(fn, 0);
    if (is_new && fn->entry()) {
      for (const auto& op : fn->entry()->ops()) {
        it->second = std::max(it->second, ir::RegionNesting(*op));
      }
    }
    return it->second;
  }
  // Ops in `fn`'s body, nested regions included.
  int64_t BodySize(const Function* fn) {
    auto [it, is_new] = sizes_.try_emplace(fn, 0);
    if (is_new) {
      ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const Op&) { ++it->second; });
    }
    return it->second;
  }

  // The callee of `op` when it is a call to inline into a block that
  // `depth` regions enclose (see the file comment); null otherwise.
  const Function* CalleeToInline(const Op& op, int depth) {
    if (!IsCall(op)) return nullptr;
    const Function* callee = Callee(*module_, op);
    if (!callee || !callee->entry() || callee->body().num_blocks() != 1 || recursive_.count(callee)) {
      return nullptr;
    }
    if (depth + BodyNesting(callee) > ir::kMaxRegionNesting) return nullptr;
    if (copied_ + BodySize(callee) > budget_) return nullptr;
    return callee;
  }

  // Inlines every call in `fn` that CalleeToInline accepts.
  Status Expand(Function& fn) {
    if (!fn.entry()) return Status::Ok();
    // Results of expanded calls -> their values; applied in one sweep at the
    // end, the calls kept alive until then (their results are map keys).
    ir::ValueMap results;
    std::vector<std::unique_ptr<Op>> expanded_calls;
    std::vector<std::pair<ir::Block*, int>> blocks = {{fn.entry(), 0}};
    while (!blocks.empty()) {
      auto [block, depth] = blocks.back();
      blocks.pop_back();
      std::vector<std::unique_ptr<Op>> out;
      for (auto& op : block->TakeOps()) {
        if (const Function* callee = CalleeToInline(*op, depth)) {
          JITD_RETURN_IF_ERROR(ExpandCall(*op, *callee, depth, out, results));
          expanded_calls.push_back(std::move(op));
        } else {
          out.push_back(std::move(op));
        }
      }
      block->SetOps(std::move(out));
      // Nested blocks (of copies too) may hold calls.
      for (const auto& op : block->ops()) {
        for (size_t r = 0; r < op->num_regions(); ++r) {
          for (size_t b = 0; b < op->region(r).num_blocks(); ++b) {
            blocks.push_back({&op->region(r).block(b), depth + 1});
          }
        }
      }
    }
    ir::RemapOperands(fn.body(), results);
    nesting_.erase(&fn);
    sizes_.erase(&fn);
    return Status::Ok();
  }

  // Appends to `out` a copy of `callee`'s body for `call` (expanding the
  // calls met there that CalleeToInline accepts) and maps the call's
  // results to the returned values in `results`.
  Status ExpandCall(const Op& call, const Function& callee, int depth,
                    std::vector<std::unique_ptr<Op>>& out, ir::ValueMap& results) {
    struct Frame {
      const ir::Block* body;
      const Op* call;
      size_t next = 0;
      ir::ValueMap mapping;  // the callee's values -> the caller's
    };
    auto lookup = [](const ir::ValueMap& mapping, ir::Value* v) {
      auto it = mapping.find(v);
      return it == mapping.end() ? v : it->second;
    };
    std::vector<Frame> frames;
    // A frame for call `c` of `fn`, its operands read through `caller`'s
    // mapping (null: the block being expanded).
    auto push = [&](const Op& c, const Function& fn, const ir::ValueMap* caller) -> Status {
      const ir::Block& body = *fn.entry();
      if (body.num_args() != c.num_operands()) {
        return Internal(c.loc().ToString() + ": call to @" + fn.name() +
                        " has the wrong number of operands");
      }
      const Op* ret = body.terminator();
      if (!ret || ret->num_operands() != c.num_results()) {
        return Internal(c.loc().ToString() + ": @" + fn.name() +
                        " returns a different number of values than the call has results");
      }
      copied_ += BodySize(&fn);
      Frame frame{&body, &c, 0, {}};
      for (size_t i = 0; i < body.num_args(); ++i) {
        frame.mapping[body.arg(i)] = caller ? lookup(*caller, c.operand(i)) : c.operand(i);
      }
      frames.push_back(std::move(frame));
      return Status::Ok();
    };
    JITD_RETURN_IF_ERROR(push(call, callee, nullptr));
    while (!frames.empty()) {
      Frame& f = frames.back();
      const Op& op = *f.body->ops()[f.next++];
      if (&op == f.body->terminator()) {
        // The callee's results become the call's, in its caller's frame.
        ir::ValueMap& target = frames.size() > 1 ? frames[frames.size() - 2].mapping : results;
        std::vector<ir::Value*> values;
        for (ir::Value* v : op.operands()) values.push_back(lookup(f.mapping, v));
        for (size_t i = 0; i < values.size(); ++i) target[f.call->result(i)] = values[i];
        frames.pop_back();
        continue;
      }
      if (const Function* inner = CalleeToInline(op, depth)) {
        JITD_RETURN_IF_ERROR(push(op, *inner, &f.mapping));  // `f` may move: used before
        continue;
      }
      out.push_back(ir::CloneOp(op, f.mapping));
    }
    return Status::Ok();
  }

  // Removes the private functions that neither the entry nor a public
  // function reaches through calls.
  void RemoveUnreachablePrivateFunctions(ir::Module& module) {
    const Function* entry = module.EntryFunction();
    std::unordered_set<const Function*> reached;
    std::vector<const Function*> stack;
    for (const auto& fn : module.functions()) {
      if (fn.get() == entry || fn->is_public()) {
        reached.insert(fn.get());
        stack.push_back(fn.get());
      }
    }
    while (!stack.empty()) {
      const Function* fn = stack.back();
      stack.pop_back();
      for (const Function* callee : CalleesOf(module, *fn)) {
        if (reached.insert(callee).second) stack.push_back(callee);
      }
    }
    std::vector<std::string> unreached;
    for (const auto& fn : module.functions()) {
      if (!reached.count(fn.get())) unreached.push_back(fn->name());
    }
    for (const std::string& name : unreached) {
      nesting_.erase(module.FindFunction(name));
      sizes_.erase(module.FindFunction(name));
      module.RemoveFunction(name);
    }
  }

  const ir::Module* module_ = nullptr;
  std::unordered_set<const Function*> recursive_;
  std::unordered_map<const Function*, int> nesting_;    // BodyNesting, while unchanged
  std::unordered_map<const Function*, int64_t> sizes_;  // BodySize, while unchanged
  int64_t budget_ = 0;  // ops the pass may copy
  int64_t copied_ = 0;
};

}  // namespace

std::unique_ptr<Pass> CreateInlinePass() { return std::make_unique<InlinePass>(); }

}  // namespace jitd::passes
