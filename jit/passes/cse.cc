// cse: common subexpression elimination. Two ops are the same computation
// when they have the same opcode, the same operands (after earlier merges),
// equal attributes, equal result types and structurally equal regions (or
// none); the later one's results are replaced by the earlier one's. Only ops
// without side effects merge; token ops (after_all, create_token) do not
// either, since a token stands for an ordering, and neither do
// dense_resource constants (elided weights share the name __elided__).
//
// Scopes: an op may reuse an equal op defined earlier in its block or in an
// enclosing block, but only through the regions of while/if/case, which
// StableHLO lets capture outer values; the bodies of reduce, sort, map,
// scatter and the like get a fresh scope, so no capture is introduced there.
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Op;
using ir::OpCode;

bool AttributeEqual(const ir::Attribute& a, const ir::Attribute& b) {
  const auto* da = a.get_if<ir::DenseElementsAttr>();
  const auto* db = b.get_if<ir::DenseElementsAttr>();
  if (da || db) {
    if (!da || !db) return false;
    if (da->type != db->type || da->splat != db->splat) return false;
    if (da->data == db->data) return true;
    return da->data && db->data && *da->data == *db->data;
  }
  if (a.storage().index() != b.storage().index()) return false;
  return a.ToString() == b.ToString();
}

bool AttributesEqual(const ir::AttributeList& a, const ir::AttributeList& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.entries()[i].name != b.entries()[i].name) return false;
    if (!AttributeEqual(a.entries()[i].value, b.entries()[i].value)) return false;
  }
  return true;
}

// Ops equal up to a correspondence of the values defined inside the regions
// being compared (`corr` maps b's inner values to a's).
bool OpsEquivalent(const Op& a, const Op& b, std::unordered_map<const ir::Value*, const ir::Value*>& corr);

bool RegionsEquivalent(const ir::Region& a, const ir::Region& b,
                       std::unordered_map<const ir::Value*, const ir::Value*>& corr) {
  if (a.num_blocks() != b.num_blocks()) return false;
  for (size_t i = 0; i < a.num_blocks(); ++i) {
    const ir::Block& ba = a.block(i);
    const ir::Block& bb = b.block(i);
    if (ba.num_args() != bb.num_args() || ba.ops().size() != bb.ops().size()) return false;
    for (size_t k = 0; k < ba.num_args(); ++k) {
      if (ba.arg(k)->type() != bb.arg(k)->type()) return false;
      corr[bb.arg(k)] = ba.arg(k);
    }
    for (size_t k = 0; k < ba.ops().size(); ++k) {
      if (!OpsEquivalent(*ba.ops()[k], *bb.ops()[k], corr)) return false;
    }
  }
  return true;
}

bool OpsEquivalent(const Op& a, const Op& b,
                   std::unordered_map<const ir::Value*, const ir::Value*>& corr) {
  if (a.code() != b.code() || a.num_operands() != b.num_operands() ||
      a.num_results() != b.num_results() || a.num_regions() != b.num_regions()) {
    return false;
  }
  for (size_t i = 0; i < a.num_operands(); ++i) {
    const ir::Value* vb = b.operand(i);
    auto it = corr.find(vb);
    if ((it == corr.end() ? vb : it->second) != a.operand(i)) return false;
  }
  for (size_t i = 0; i < a.num_results(); ++i) {
    if (a.result(i)->type() != b.result(i)->type()) return false;
  }
  if (!AttributesEqual(a.attrs(), b.attrs())) return false;
  for (size_t r = 0; r < a.num_regions(); ++r) {
    if (!RegionsEquivalent(a.region(r), b.region(r), corr)) return false;
  }
  for (size_t i = 0; i < a.num_results(); ++i) corr[b.result(i)] = a.result(i);
  return true;
}

// Agrees with AttributeEqual: equal attributes hash equal.
size_t HashAttribute(const ir::Attribute& a) {
  if (const auto* d = a.get_if<ir::DenseElementsAttr>()) {
    size_t h = std::hash<std::string>()(d->type.ToString()) + d->splat;
    if (d->data) {
      const std::string_view bytes(reinterpret_cast<const char*>(d->data->data()), d->data->size());
      h ^= std::hash<std::string_view>()(bytes) * 31;
    }
    return h;
  }
  return std::hash<std::string>()(a.ToString());
}

// Every attribute counts: ops that differ only there (10^5 slices of one
// value at different offsets) must not share a bucket, or finding a match
// costs a comparison with each of them.
size_t HashOp(const Op& op) {
  size_t h = static_cast<size_t>(op.code()) * 0x9E3779B97F4A7C15ull;
  auto mix = [&](size_t v) { h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2); };
  for (const ir::Value* v : op.operands()) mix(std::hash<const void*>()(v));
  mix(op.num_results());
  mix(op.num_regions());
  for (const auto& entry : op.attrs().entries()) {
    mix(std::hash<std::string>()(entry.name));
    mix(HashAttribute(entry.value));
  }
  return h;
}

bool Mergeable(const Op& op) {
  if (op.num_results() == 0 || HasSideEffects(op)) return false;
  switch (op.code()) {
    case OpCode::kConstant: {
      // `dense_resource<__elided__>` names data the printer dropped: two
      // such constants are distinct, unknown weights, not one value.
      const ir::Attribute* value = op.attr("value");
      return value && !value->is<ir::DenseResourceAttr>();
    }
    case OpCode::kAfterAll:
    case OpCode::kCreateToken:
      return false;
    default:
      return true;
  }
}

class CsePass : public Pass {
 public:
  std::string_view name() const override { return "cse"; }

  Status Run(ir::Module& module) override {
    for (const auto& fn : module.functions()) {
      map_.clear();
      erase_.clear();
      Scope scope;
      ProcessRegion(fn->body(), scope);
      // Erase after the whole function is rewritten: nothing uses them now.
      ir::WalkOps(fn->body(), [&](Op& op) {
        for (size_t r = 0; r < op.num_regions(); ++r) EraseIn(op.region(r));
      });
      EraseIn(fn->body());
    }
    map_.clear();
    erase_.clear();
    return Status::Ok();
  }

 private:
  // Candidates by hash; a child scope sees its parent's entries.
  struct Scope {
    const Scope* parent = nullptr;
    std::unordered_multimap<size_t, Op*> ops;
  };

  void EraseIn(ir::Region& region) {
    if (erase_.empty()) return;
    for (size_t b = 0; b < region.num_blocks(); ++b) {
      region.block(b).EraseOpsIf([&](const Op& op) { return erase_.count(&op) > 0; });
    }
  }

  Op* FindEqual(const Scope& scope, const Op& op, size_t hash) {
    for (const Scope* s = &scope; s; s = s->parent) {
      auto [begin, end] = s->ops.equal_range(hash);
      for (auto it = begin; it != end; ++it) {
        std::unordered_map<const ir::Value*, const ir::Value*> corr;
        if (OpsEquivalent(*it->second, op, corr)) return it->second;
      }
    }
    return nullptr;
  }

  void ProcessRegion(ir::Region& region, Scope& scope) {
    for (size_t b = 0; b < region.num_blocks(); ++b) {
      Scope block_scope{&scope, {}};
      for (const auto& op_ptr : region.block(b).ops()) {
        Op& op = *op_ptr;
        for (size_t i = 0; i < op.num_operands(); ++i) {
          auto it = map_.find(op.operand(i));
          if (it != map_.end()) op.set_operand(i, it->second);
        }
        for (size_t r = 0; r < op.num_regions(); ++r) {
          const bool captures = op.code() == OpCode::kWhile || op.code() == OpCode::kIf ||
                                op.code() == OpCode::kCase;
          Scope fresh;
          Scope child{&block_scope, {}};
          ProcessRegion(op.region(r), captures ? child : fresh);
        }
        if (!Mergeable(op)) continue;
        const size_t hash = HashOp(op);
        if (Op* same = FindEqual(block_scope, op, hash)) {
          for (size_t i = 0; i < op.num_results(); ++i) map_[op.result(i)] = same->result(i);
          erase_.insert(&op);
        } else {
          block_scope.ops.emplace(hash, &op);
        }
      }
    }
  }

  std::unordered_map<const ir::Value*, ir::Value*> map_;
  std::unordered_set<const Op*> erase_;
};

}  // namespace

std::unique_ptr<Pass> CreateCsePass() { return std::make_unique<CsePass>(); }

}  // namespace jitd::passes
