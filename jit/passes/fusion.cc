#include "jit/passes/fusion.h"

#include <algorithm>
#include <queue>
#include <string>

namespace jitd::passes {
namespace {

using ir::Op;
using ir::OpCode;

// Every op of `op`'s regions, recursively.
template <typename F>
void WalkNested(const Op& op, F&& fn) {
  for (size_t r = 0; r < op.num_regions(); ++r) {
    const ir::Region& region = op.region(r);
    for (size_t bi = 0; bi < region.num_blocks(); ++bi) {
      for (const auto& inner : region.block(bi).ops()) {
        fn(*inner);
        WalkNested(*inner, fn);
      }
    }
  }
}

// An index map that reads each operand element for many result elements: a
// broadcast_in_dim that adds elements.
bool Expands(const Op& op) {
  return op.code() == OpCode::kBroadcastInDim &&
         op.result(0)->type().num_elements() > op.operand(0)->type().num_elements();
}

// Moves or selects elements without computing new values.
bool MovesData(const Op& op) {
  switch (op.code()) {
    case OpCode::kBroadcastInDim:
    case OpCode::kReshape:
    case OpCode::kTranspose:
    case OpCode::kSlice:
    case OpCode::kReverse:
      return true;
    default:
      return false;
  }
}

// Reads every operand at the result's own index (no index map).
bool IsPointwise(const Op& op) {
  const OpCode c = op.code();
  return ir::IsElementwiseUnary(c) || ir::IsElementwiseBinary(c) || c == OpCode::kSelect ||
         c == OpCode::kClamp;
}

// Where kernels are cut to stay within FusionPolicy::max_ops, decided
// bottom-up (producers first): an op's weight is 1 (constants 0) plus the
// weights of the producers that would join its kernel (fusible, read by it
// alone); past max_ops its heaviest such producers are cut off and root
// kernels of their own. A chain becomes kernels of max_ops ops and a
// balanced tree full-sized subtrees (cutting top-down instead leaves the
// bottom of a tree in tiny kernels). The walk that builds kernels skips
// cut producers, and still stops at max_ops, for what this does not model
// (duplicated cheap ops, extra outputs).
std::unordered_set<const Op*> CutsForSize(
    const ir::Block& block, const FusionPolicy& policy,
    const std::unordered_map<const ir::Value*, std::vector<const Op*>>& users,
    const std::unordered_set<const ir::Value*>& external_use) {
  std::unordered_set<const Op*> cut;
  if (policy.max_ops == SIZE_MAX) return cut;
  struct Weighed {
    size_t weight;
    size_t position;  // ties cut in block order: the plan is deterministic
    const Op* op;
  };
  std::unordered_map<const Op*, Weighed> weight;  // fusible ops of the block
  for (size_t k = 0; k < block.ops().size(); ++k) {
    const Op* op = block.ops()[k].get();
    if (op == block.terminator()) continue;
    if (!policy.is_fusible(*op) && !policy.is_fusible_reduce(*op)) continue;
    size_t w = op->code() == OpCode::kConstant ? 0 : 1;
    std::vector<Weighed> joining;
    for (const ir::Value* v : op->operands()) {
      const Op* p = v->defining_op();
      auto it = p ? weight.find(p) : weight.end();
      if (it == weight.end() || p->num_results() != 1 || external_use.count(v)) continue;
      const std::vector<const Op*>& readers = users.at(v);
      if (std::any_of(readers.begin(), readers.end(), [&](const Op* u) { return u != op; })) continue;
      if (std::none_of(joining.begin(), joining.end(), [&](const Weighed& j) { return j.op == p; })) {
        joining.push_back(it->second);
        w += it->second.weight;
      }
    }
    if (w > policy.max_ops) {
      std::sort(joining.begin(), joining.end(), [](const Weighed& a, const Weighed& b) {
        return a.weight != b.weight ? a.weight > b.weight : a.position < b.position;
      });
      for (const Weighed& j : joining) {
        if (w <= policy.max_ops) break;
        cut.insert(j.op);
        w -= j.weight;
      }
    }
    weight[op] = {w, k, op};
  }
  return cut;
}

}  // namespace

FusionPlan PlanFusion(const ir::Block& block, const FusionPolicy& policy) {
  FusionPlan plan;
  const auto& ops = block.ops();
  std::unordered_map<const Op*, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i].get()] = i;
  auto is_top = [&](const Op* p) { return p && position.count(p) && ops[position.at(p)].get() == p; };

  // Users at this level: the top-level op whose operands (or nested ops)
  // read a value. The terminator and nested uses count as external too.
  std::unordered_map<const ir::Value*, std::vector<const Op*>> users;
  std::unordered_set<const ir::Value*> external_use;
  for (const auto& op : ops) {
    const bool is_terminator = op.get() == block.terminator();
    for (const ir::Value* v : op->operands()) {
      users[v].push_back(op.get());
      if (is_terminator) external_use.insert(v);
    }
    WalkNested(*op, [&](const Op& inner) {
      for (const ir::Value* v : inner.operands()) {
        external_use.insert(v);
        users[v].push_back(op.get());
      }
    });
  }

  std::unordered_map<const Op*, std::vector<size_t>> groups_of;
  // Group ids are appended in increasing order: each list is sorted.
  auto in_group = [&](const Op* op, size_t g) {
    auto it = groups_of.find(op);
    return it != groups_of.end() && std::binary_search(it->second.begin(), it->second.end(), g);
  };
  // All users of all results of `op` are in group g (and none is external).
  auto only_used_in = [&](const Op* op, size_t g) {
    for (size_t i = 0; i < op->num_results(); ++i) {
      const ir::Value* v = op->result(i);
      if (external_use.count(v)) return false;
      auto it = users.find(v);
      if (it == users.end()) continue;
      for (const Op* u : it->second) {
        if (!in_group(u, g)) return false;
      }
    }
    return true;
  };
  // Computed inside every kernel that reads it, so no buffer is needed.
  auto fully_fused = [&](const Op* op) {
    bool any_user = false;
    for (size_t i = 0; i < op->num_results(); ++i) {
      const ir::Value* v = op->result(i);
      if (external_use.count(v)) return false;
      auto it = users.find(v);
      if (it == users.end()) continue;
      for (const Op* u : it->second) {
        any_user = true;
        // Every kernel computing the user needs the op inside it too.
        auto gu = groups_of.find(u);
        if (gu == groups_of.end()) return false;
        for (size_t g : gu->second) {
          if (!in_group(op, g)) return false;
        }
      }
    }
    return any_user;
  };

  const std::unordered_set<const Op*> cut = CutsForSize(block, policy, users, external_use);

  for (size_t k = ops.size(); k-- > 0;) {
    const Op* op = ops[k].get();
    if (op == block.terminator() || op->code() == OpCode::kConstant) continue;
    if (plan.extra_output_of.count(op)) continue;
    const bool fusible = policy.is_fusible(*op);
    const bool reduce = !fusible && policy.is_fusible_reduce(*op);
    if (!fusible && !reduce) continue;
    if (fusible && groups_of.count(op)) {
      if (fully_fused(op)) {
        plan.fused_away.insert(op);
        continue;
      }
    }
    const size_t g = plan.groups.size();
    plan.groups.emplace_back();
    plan.group_of_root[op] = g;
    FusionGroup& group = plan.groups.back();
    group.root = op;
    std::vector<const Op*> members = {op};
    size_t counted = 1;  // members that are not constants (FusionPolicy::max_ops)
    groups_of[op].push_back(g);
    // Ops whose result elements the kernel computes exactly once each, at
    // its own iteration index (the root, and producers reached only through
    // pointwise ops of the same shape): such a value can be written as an
    // extra output.
    const ir::Type& space = reduce ? op->operand(0)->type() : op->result(0)->type();
    std::unordered_set<const Op*> at_own_index = {op};
    auto reads_at_own_index = [&](const Op* user, const Op* producer) {
      if (!at_own_index.count(user)) return false;
      if (user == op && reduce) {
        const size_t n = op->num_results();
        for (size_t i = 0; i < op->num_operands(); ++i) {
          const Op* d = op->operand(i)->defining_op();
          if (d == producer && i >= n) return false;  // an init value
        }
        return true;
      }
      return IsPointwise(*user) && user->result(0)->type().dims() == producer->result(0)->type().dims();
    };
    // Members reading each producer, recorded as they join: a producer's
    // users in the group all come after it, so all have joined when it is
    // considered (scanning every user instead costs a constant used by a
    // million ops a million steps per kernel).
    std::unordered_map<const Op*, std::vector<const Op*>> group_users;
    auto all_group_users_at_own_index = [&](const Op* p) {
      if (p->num_results() != 1 || p->result(0)->type().dims() != space.dims()) return false;
      auto it = group_users.find(p);
      if (it == group_users.end()) return false;
      for (const Op* u : it->second) {
        if (!reads_at_own_index(u, p)) return false;
      }
      return true;
    };
    auto cmp = [&](const Op* a, const Op* b) { return position[a] < position[b]; };
    std::priority_queue<const Op*, std::vector<const Op*>, decltype(cmp)> work(cmp);
    // Ops reached through an expanding broadcast: inside the kernel they
    // would run once per element of the bigger result (batch norm's
    // rsqrt(var + eps) * scale, per channel, recomputed at every pixel), so
    // only data movement and cheap constants join from there; arithmetic on
    // the small side gets a kernel of its own and a small buffer.
    std::unordered_set<const Op*> behind_expansion;
    auto push_producers = [&](const Op* consumer) {
      const bool behind = behind_expansion.count(consumer) != 0 || Expands(*consumer);
      for (const ir::Value* v : consumer->operands()) {
        const Op* p = v->defining_op();
        if (is_top(p)) {
          if (behind) behind_expansion.insert(p);
          group_users[p].push_back(consumer);
          work.push(p);
        }
      }
    };
    // Multi-output: `p` (read outside the group too) can be written by this
    // kernel when every reader outside comes after the root, where the
    // fusion op will stand, or is itself inside a kernel placed there.
    auto can_be_extra_output = [&](const Op* p) {
      if (!policy.multi_output || policy.is_cheap_to_duplicate(*p)) return false;
      if (groups_of.count(p) || plan.extra_output_of.count(p)) return false;
      if (!all_group_users_at_own_index(p)) return false;
      for (const Op* u : users[p->result(0)]) {
        if (in_group(u, g) || groups_of.count(u)) continue;
        if (position[u] <= position[op]) return false;
      }
      return true;
    };
    push_producers(op);
    while (!work.empty()) {
      const Op* p = work.top();
      work.pop();
      if (in_group(p, g)) continue;
      if (!policy.is_fusible(*p)) continue;
      const bool counts = p->code() != OpCode::kConstant;
      if (cut.count(p) || (counts && counted >= policy.max_ops)) continue;
      if (behind_expansion.count(p) && !policy.is_cheap_to_duplicate(*p) && !MovesData(*p)) continue;
      bool extra = false;
      if (!policy.is_cheap_to_duplicate(*p) && !only_used_in(p, g)) {
        if (behind_expansion.count(p) || !can_be_extra_output(p)) continue;
        extra = true;
      }
      if (all_group_users_at_own_index(p)) at_own_index.insert(p);
      groups_of[p].push_back(g);
      members.push_back(p);
      if (counts) ++counted;
      if (extra) {
        plan.extra_output_of[p] = g;
        group.extra_outputs.push_back(p->result(0));
      }
      push_producers(p);
    }
    std::unordered_set<const ir::Value*> seen;
    for (const Op* m : members) {
      for (const ir::Value* v : m->operands()) {
        const Op* d = v->defining_op();
        if (d && in_group(d, g)) continue;
        if (seen.insert(v).second) group.inputs.push_back(v);
      }
    }
    group.ops = std::move(members);
  }
  return plan;
}

namespace {

// Rewrites `block`, which `depth` regions enclose (then the blocks of its
// while / if / case ops).
void FuseBlock(ir::Block& block, const FusionPolicy& policy, int depth) {
  // A fusion op's region would be one level deeper than the block.
  if (depth >= ir::kMaxRegionNesting) return;
  const FusionPlan plan = PlanFusion(block, policy);
  if (!plan.groups.empty()) {
    std::unordered_map<const Op*, size_t> position;
    for (size_t i = 0; i < block.ops().size(); ++i) position[block.ops()[i].get()] = i;
    std::vector<std::unique_ptr<Op>> old = block.TakeOps();
    std::vector<std::unique_ptr<Op>> out;
    std::vector<std::unique_ptr<Op>> dropped;
    ir::ValueMap replace;
    for (auto& op_ptr : old) {
      const Op* op = op_ptr.get();
      auto it = plan.group_of_root.find(op);
      if (it == plan.group_of_root.end()) {
        if (plan.fused_away.count(op) || plan.extra_output_of.count(op)) {
          dropped.push_back(std::move(op_ptr));
        } else {
          out.push_back(std::move(op_ptr));
        }
        continue;
      }
      const FusionGroup& group = plan.groups[it->second];
      // Cheap constants from enclosing blocks are cloned in, not read.
      auto cloned_in = [&](const ir::Value* v) {
        const Op* def = v->defining_op();
        return def && def->code() == OpCode::kConstant && def->parent_block() != &block &&
               policy.is_fusible(*def) && policy.is_cheap_to_duplicate(*def);
      };
      std::vector<ir::Value*> operands;
      for (const ir::Value* v : group.inputs) {
        if (!cloned_in(v)) operands.push_back(const_cast<ir::Value*>(v));
      }
      std::vector<ir::Type> types = op->result_types();
      for (const ir::Value* v : group.extra_outputs) types.push_back(v->type());
      ir::AttributeList attrs;
      const char* kind = !group.extra_outputs.empty() ? "multi_output"
                         : op->code() == OpCode::kReduce ? "reduction"
                                                         : "loop";
      attrs.Set("kind", ir::StringAttr{kind});
      std::unique_ptr<Op> fusion = ir::CreateOp(OpCode::kFusion, op->loc(), operands, types, std::move(attrs));
      ir::Block& body = fusion->add_region().add_block();
      ir::ValueMap mapping;
      for (const ir::Value* v : group.inputs) {
        if (cloned_in(v)) {
          body.add_op(ir::CloneOp(*v->defining_op(), mapping));
        } else {
          mapping[v] = body.add_arg(v->type());
        }
      }
      std::vector<const Op*> members = group.ops;
      std::sort(members.begin(), members.end(),
                [&](const Op* a, const Op* b) { return position.at(a) < position.at(b); });
      for (const Op* m : members) body.add_op(ir::CloneOp(*m, mapping));
      std::vector<ir::Value*> returned;
      for (size_t i = 0; i < op->num_results(); ++i) returned.push_back(mapping.at(op->result(i)));
      for (const ir::Value* v : group.extra_outputs) returned.push_back(mapping.at(v));
      body.add_op(ir::CreateOp(OpCode::kReturn, op->loc(), returned, {}));
      for (size_t i = 0; i < op->num_results(); ++i) replace[op->result(i)] = fusion->result(i);
      for (size_t j = 0; j < group.extra_outputs.size(); ++j) {
        replace[group.extra_outputs[j]] = fusion->result(op->num_results() + j);
      }
      out.push_back(std::move(fusion));
      dropped.push_back(std::move(op_ptr));
    }
    block.SetOps(std::move(out));
    ir::Region& region = *block.parent_region();
    ir::RemapOperands(region, replace);
    dropped.clear();
    // Constants now read only inside fusions (their clones) are dead.
    const auto uses = ir::CountUses(region);
    block.EraseOpsIf([&](const Op& op) {
      return op.code() == OpCode::kConstant && !uses.count(op.result(0));
    });
  }
  for (const auto& op : block.ops()) {
    if (op->code() != OpCode::kWhile && op->code() != OpCode::kIf && op->code() != OpCode::kCase) continue;
    for (size_t r = 0; r < op->num_regions(); ++r) {
      for (size_t b = 0; b < op->region(r).num_blocks(); ++b) {
        FuseBlock(op->region(r).block(b), policy, depth + 1);
      }
    }
  }
}

class FusionPass final : public Pass {
 public:
  explicit FusionPass(FusionPolicy policy) : policy_(std::move(policy)) {}
  std::string_view name() const override { return "fusion"; }
  Status Run(ir::Module& module) override { return FuseModule(module, policy_); }

 private:
  FusionPolicy policy_;
};

}  // namespace

Status FuseModule(ir::Module& module, const FusionPolicy& policy) {
  if (!policy.is_fusible || !policy.is_fusible_reduce || !policy.is_cheap_to_duplicate) {
    return InvalidArgument("fusion: the target's fusion policy is incomplete");
  }
  if (HasFusionOps(module)) return Status::Ok();  // already fused
  for (const auto& fn : module.functions()) {
    if (fn->entry()) FuseBlock(*fn->entry(), policy, 0);
  }
  return Status::Ok();
}

bool HasFusionOps(const ir::Module& module) {
  bool found = false;
  for (const auto& fn : module.functions()) {
    ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const Op& op) {
      found = found || op.code() == OpCode::kFusion;
    });
  }
  return found;
}

std::unique_ptr<Pass> CreateFusionPass(FusionPolicy policy) {
  return std::make_unique<FusionPass>(std::move(policy));
}

}  // namespace jitd::passes
