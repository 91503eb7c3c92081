#include "jit/codegen/fusion.h"

#include <algorithm>
#include <queue>

namespace jitd::codegen {
namespace {

// Every op of `op`'s regions, recursively.
template <typename F>
void WalkNested(const ir::Op& op, F&& fn) {
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
bool Expands(const ir::Op& op) {
  return op.code() == ir::OpCode::kBroadcastInDim &&
         op.result(0)->type().num_elements() > op.operand(0)->type().num_elements();
}

// Moves or selects elements without computing new values.
bool MovesData(const ir::Op& op) {
  switch (op.code()) {
    case ir::OpCode::kBroadcastInDim:
    case ir::OpCode::kReshape:
    case ir::OpCode::kTranspose:
    case ir::OpCode::kSlice:
    case ir::OpCode::kReverse:
      return true;
    default:
      return false;
  }
}

}  // namespace

FusionPlan PlanFusion(const ir::Block& block) {
  FusionPlan plan;
  const auto& ops = block.ops();
  std::unordered_map<const ir::Op*, size_t> position;
  for (size_t i = 0; i < ops.size(); ++i) position[ops[i].get()] = i;

  // Users at this level: the top-level op whose operands (or nested ops)
  // read a value. The terminator and nested uses count as external.
  std::unordered_map<const ir::Value*, std::vector<const ir::Op*>> users;
  std::unordered_set<const ir::Value*> external_use;
  for (const auto& op : ops) {
    const bool is_terminator = op.get() == block.terminator();
    for (const ir::Value* v : op->operands()) {
      users[v].push_back(op.get());
      if (is_terminator) external_use.insert(v);
    }
    WalkNested(*op, [&](const ir::Op& inner) {
      for (const ir::Value* v : inner.operands()) external_use.insert(v);
    });
  }

  std::unordered_map<const ir::Op*, std::vector<size_t>> groups_of;
  auto in_group = [&](const ir::Op* op, size_t g) {
    auto it = groups_of.find(op);
    return it != groups_of.end() && std::find(it->second.begin(), it->second.end(), g) != it->second.end();
  };
  // All users of all results of `op` are in group g (and none is external).
  auto only_used_in = [&](const ir::Op* op, size_t g) {
    for (size_t i = 0; i < op->num_results(); ++i) {
      const ir::Value* v = op->result(i);
      if (external_use.count(v)) return false;
      auto it = users.find(v);
      if (it == users.end()) continue;
      for (const ir::Op* u : it->second) {
        if (!in_group(u, g)) return false;
      }
    }
    return true;
  };
  // Computed inside every kernel that reads it, so no buffer is needed.
  auto fully_fused = [&](const ir::Op* op) {
    bool any_user = false;
    for (size_t i = 0; i < op->num_results(); ++i) {
      const ir::Value* v = op->result(i);
      if (external_use.count(v)) return false;
      auto it = users.find(v);
      if (it == users.end()) continue;
      for (const ir::Op* u : it->second) {
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

  for (size_t k = ops.size(); k-- > 0;) {
    const ir::Op* op = ops[k].get();
    if (op == block.terminator() || op->code() == ir::OpCode::kConstant) continue;
    const bool fusible = IsFusibleOp(*op);
    const bool reduce = !fusible && IsEmittableReduce(*op);
    if (!fusible && !reduce) continue;
    if (fusible && groups_of.count(op)) {
      if (fully_fused(op)) {
        plan.fused_away.insert(op);
        continue;
      }
    }
    const size_t g = plan.kernels.size();
    plan.kernels.emplace_back();
    plan.kernel_of_root[op] = g;
    KernelSpec& spec = plan.kernels.back();
    spec.root = op;
    std::vector<const ir::Op*> members = {op};
    groups_of[op].push_back(g);
    auto cmp = [&](const ir::Op* a, const ir::Op* b) { return position[a] < position[b]; };
    std::priority_queue<const ir::Op*, std::vector<const ir::Op*>, decltype(cmp)> work(cmp);
    // Ops reached through an expanding broadcast: inside the kernel they
    // would run once per element of the bigger result (batch norm's
    // rsqrt(var + eps) * scale, per channel, recomputed at every pixel), so
    // only data movement and cheap constants join from there; arithmetic on
    // the small side gets a kernel of its own and a small buffer.
    std::unordered_set<const ir::Op*> behind_expansion;
    auto push_producers = [&](const ir::Op* consumer) {
      const bool behind = behind_expansion.count(consumer) != 0 || Expands(*consumer);
      for (const ir::Value* v : consumer->operands()) {
        const ir::Op* p = v->defining_op();
        if (p && position.count(p) && ops[position[p]].get() == p) {
          if (behind) behind_expansion.insert(p);
          work.push(p);
        }
      }
    };
    push_producers(op);
    while (!work.empty()) {
      const ir::Op* p = work.top();
      work.pop();
      if (in_group(p, g)) continue;
      if (!IsFusibleOp(*p)) continue;
      if (behind_expansion.count(p) && !IsCheapToDuplicate(*p) && !MovesData(*p)) continue;
      if (IsCheapToDuplicate(*p) || only_used_in(p, g)) {
        groups_of[p].push_back(g);
        members.push_back(p);
        push_producers(p);
      }
    }
    std::unordered_set<const ir::Value*> seen;
    for (const ir::Op* m : members) {
      for (const ir::Value* v : m->operands()) {
        const ir::Op* d = v->defining_op();
        if (d && in_group(d, g)) continue;
        if (seen.insert(v).second) spec.inputs.push_back(v);
      }
    }
    spec.fused = std::move(members);
  }
  return plan;
}

}  // namespace jitd::codegen
