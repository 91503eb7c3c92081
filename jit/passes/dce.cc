// dce: removes ops without side effects whose results nothing uses, in
// nested regions too. Blocks are scanned from the end, so a whole dead chain
// goes in one run: removing an op releases its operands' uses (and the uses
// inside its regions) before the ops defining them are reached.
#include <unordered_map>
#include <unordered_set>

#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Op;

class DcePass : public Pass {
 public:
  std::string_view name() const override { return "dce"; }

  Status Run(ir::Module& module) override {
    for (const auto& fn : module.functions()) {
      uses_ = ir::CountUses(fn->body());
      SweepRegion(fn->body());
    }
    uses_.clear();
    return Status::Ok();
  }

 private:
  void SweepRegion(ir::Region& region) {
    for (size_t b = region.num_blocks(); b-- > 0;) SweepBlock(region.block(b));
  }

  void SweepBlock(ir::Block& block) {
    std::unordered_set<const Op*> dead;
    const auto& ops = block.ops();
    for (size_t i = ops.size(); i-- > 0;) {
      Op& op = *ops[i];
      if (IsDead(op)) {
        dead.insert(&op);
        Release(op);
      } else {
        for (size_t r = 0; r < op.num_regions(); ++r) SweepRegion(op.region(r));
      }
    }
    if (!dead.empty()) block.EraseOpsIf([&](const Op& op) { return dead.count(&op) > 0; });
  }

  bool IsDead(const Op& op) const {
    if (HasSideEffects(op)) return false;
    for (size_t i = 0; i < op.num_results(); ++i) {
      auto it = uses_.find(op.result(i));
      if (it != uses_.end() && it->second > 0) return false;
    }
    return true;
  }

  // Drops the uses `op` (and everything inside it) makes.
  void Release(const Op& op) {
    for (const ir::Value* v : op.operands()) --uses_[v];
    for (size_t r = 0; r < op.num_regions(); ++r) {
      ir::WalkOps(static_cast<const ir::Region&>(op.region(r)), [&](const Op& inner) {
        for (const ir::Value* v : inner.operands()) --uses_[v];
      });
    }
  }

  std::unordered_map<const ir::Value*, int> uses_;
};

}  // namespace

std::unique_ptr<Pass> CreateDcePass() { return std::make_unique<DcePass>(); }

}  // namespace jitd::passes
