// InlineAsyncOps (the inline pass's last step): rewrites stablehlo.async_start / async_done into
// the op the async_start wraps, for devices that compile programs (no future values).
//
// spec.md lets a backend perform an asynchronous op synchronously, which is
// what this pass makes explicit: the op in each async_start's body is copied
// in the async_start's place (it runs there, so an async_start nothing waits
// for still runs its collective), and every async_done of that future uses
// the copy's results instead. The results are the values the evaluator's
// future would hold, bit for bit.
//
// A future that reaches an async_done from elsewhere than an async_start in
// the same function (a function argument, a call's result: the inline pass
// removes most of those) is refused, naming where it is used.
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Op;
using ir::OpCode;

// Every block of `region`, nested regions included, outer blocks first.
std::vector<ir::Block*> AllBlocks(ir::Region& region) {
  std::vector<ir::Block*> out;
  for (size_t b = 0; b < region.num_blocks(); ++b) out.push_back(&region.block(b));
  for (size_t i = 0; i < out.size(); ++i) {
    for (const auto& op : out[i]->ops()) {
      for (size_t r = 0; r < op->num_regions(); ++r) {
        for (size_t b = 0; b < op->region(r).num_blocks(); ++b) {
          out.push_back(&op->region(r).block(b));
        }
      }
    }
  }
  return out;
}

Status InlineAsyncInFunction(ir::Function& fn) {
  const ir::Function& signature = fn;
  for (const std::vector<ir::Type>* types : {&signature.arg_types(), &signature.result_types()}) {
    for (const ir::Type& t : *types) {
      if (t.is_future()) {
        return Unimplemented("@" + fn.name() + " at " + fn.loc().ToString() + " takes or returns " +
                             t.ToString() +
                             ": futures across function boundaries are not compiled (only "
                             "the interpreter runs them)");
      }
    }
  }
  if (!fn.entry()) return Status::Ok();
  // The ops removed, kept alive until the end: their results are keys of
  // `replaced`.
  std::vector<std::unique_ptr<Op>> removed;
  // async_start's future -> the results of the copy of its body's op.
  std::unordered_map<const ir::Value*, std::vector<ir::Value*>> futures;
  // 1. Each async_start becomes a copy of its body's op.
  for (ir::Block* block : AllBlocks(fn.body())) {
    bool any = false;
    for (const auto& op : block->ops()) any = any || op->code() == OpCode::kAsyncStart;
    if (!any) continue;
    std::vector<std::unique_ptr<Op>> out;
    for (auto& op : block->TakeOps()) {
      if (op->code() != OpCode::kAsyncStart) {
        out.push_back(std::move(op));
        continue;
      }
      const ir::Block& body = op->region(0).block(0);
      if (body.ops().size() != 2) {
        return Internal(op->loc().ToString() + ": async_start body of " +
                        std::to_string(body.ops().size()) + " ops (the verifier allows 2)");
      }
      ir::ValueMap mapping;
      for (size_t i = 0; i < body.num_args(); ++i) mapping[body.arg(i)] = op->operand(i);
      std::unique_ptr<Op> copy = ir::CloneOp(*body.ops()[0], mapping);
      std::vector<ir::Value*> values;
      for (size_t i = 0; i < copy->num_results(); ++i) values.push_back(copy->result(i));
      futures[op->result(0)] = std::move(values);
      out.push_back(std::move(copy));
      removed.push_back(std::move(op));
    }
    block->SetOps(std::move(out));
  }
  // 2. Each async_done of such a future becomes the copy's results.
  ir::ValueMap replaced;
  for (ir::Block* block : AllBlocks(fn.body())) {
    bool any = false;
    for (const auto& op : block->ops()) any = any || op->code() == OpCode::kAsyncDone;
    if (!any) continue;
    std::vector<std::unique_ptr<Op>> out;
    for (auto& op : block->TakeOps()) {
      if (op->code() != OpCode::kAsyncDone) {
        out.push_back(std::move(op));
        continue;
      }
      auto it = futures.find(op->operand(0));
      if (it == futures.end()) {  // kept: refused below
        out.push_back(std::move(op));
        continue;
      }
      for (size_t i = 0; i < op->num_results(); ++i) replaced[op->result(i)] = it->second[i];
      removed.push_back(std::move(op));
    }
    block->SetOps(std::move(out));
  }
  ir::RemapOperands(fn.body(), replaced);
  // 3. A future still used (an async_done of a future from a call or an
  // argument, a future returned or passed to a call) has no compiled form.
  Status status = Status::Ok();
  ir::WalkOps(static_cast<const ir::Region&>(fn.body()), [&](const Op& op) {
    if (!status.ok()) return;
    if (op.code() == OpCode::kAsyncDone) {
      status = Unimplemented(op.loc().ToString() +
                             ": async_done waits on a future that no async_start of @" + fn.name() +
                             " makes (passed in through a call or argument); "
                             "only the interpreter runs that");
      return;
    }
    for (const ir::Value* v : op.operands()) {
      if (v->type().is_future()) {
        status = Unimplemented(op.loc().ToString() + ": '" + std::string(op.name()) +
                               "' passes on a future (" + v->type().ToString() +
                               "); only async_done of it is compiled");
        return;
      }
    }
  });
  return status;
}

}  // namespace

Status InlineAsyncOps(ir::Module& module) {
  for (const auto& fn : module.functions()) JITD_RETURN_IF_ERROR(InlineAsyncInFunction(*fn));
  return Status::Ok();
}

}  // namespace jitd::passes
