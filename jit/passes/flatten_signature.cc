#include "jit/passes/flatten_signature.h"

#include <memory>
#include <string>
#include <utility>

namespace jitd::passes {
namespace {

using ir::Block;
using ir::Function;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

// Builds a value of `type` at the top of the new entry from fresh tensor
// arguments (one per leaf, named after `name`): the tensor argument itself,
// a fresh token, or a stablehlo.tuple of its rebuilt elements.
Value* Rebuild(const Type& type, const std::string& name, ir::Location loc, Function& fn,
               std::vector<std::unique_ptr<Op>>& prologue) {
  Block& block = *fn.entry();
  if (type.is_tensor()) {
    Value* arg = block.add_arg(type);
    arg->set_name(name);
    fn.arg_types().push_back(type);
    fn.arg_attrs().emplace_back();
    return arg;
  }
  if (type.is_token()) {
    prologue.push_back(ir::CreateOp(OpCode::kAfterAll, loc, {}, std::span<const Type>(&type, 1)));
    return prologue.back()->result(0);
  }
  std::vector<Value*> elements;
  for (size_t i = 0; i < type.elements().size(); ++i) {
    elements.push_back(Rebuild(type.elements()[i], name + "_" + std::to_string(i), loc, fn, prologue));
  }
  prologue.push_back(ir::CreateOp(OpCode::kTuple, loc, elements, std::span<const Type>(&type, 1)));
  return prologue.back()->result(0);
}

// Appends the tensor leaves of `value` (depth first) to `leaves`, taking
// tuples apart with get_tuple_element ops appended to `ops`; tokens add none.
void Unpack(Value* value, ir::Location loc, std::vector<std::unique_ptr<Op>>& ops,
            std::vector<Value*>& leaves) {
  const Type& type = value->type();
  if (type.is_tensor()) {
    leaves.push_back(value);
    return;
  }
  if (!type.is_tuple()) return;  // a token
  for (size_t i = 0; i < type.elements().size(); ++i) {
    ir::AttributeList attrs;
    attrs.Set("index", ir::IntegerAttr{static_cast<int64_t>(i), ir::DType::kS32});
    ops.push_back(ir::CreateOp(OpCode::kGetTupleElement, loc, std::span<Value* const>(&value, 1),
                               std::span<const Type>(&type.elements()[i], 1), std::move(attrs)));
    Unpack(ops.back()->result(0), loc, ops, leaves);
  }
}

// The attribute naming the function `op` calls (func.call's callee, a
// composite's decomposition), or null for other ops.
const char* CalleeAttribute(const Op& op) {
  if (op.code() == OpCode::kFuncCall) return "callee";
  if (op.code() == OpCode::kComposite) return "decomposition";
  return nullptr;
}

// Retargets every call of `from` in `module` to `to`; returns how many.
int RetargetCalls(ir::Module& module, const std::string& from, const std::string& to) {
  int count = 0;
  for (const auto& fn : module.functions()) {
    ir::WalkOps(fn->body(), [&](Op& op) {
      const char* attr = CalleeAttribute(op);
      const ir::Attribute* a = attr ? op.attr(attr) : nullptr;
      const auto* ref = a ? a->get_if<ir::SymbolRefAttr>() : nullptr;
      if (ref && ref->name == from) {
        op.attrs().Set(attr, ir::SymbolRefAttr{to});
        ++count;
      }
    });
  }
  return count;
}

// A private copy of `fn` named `name` (signature, attributes, body).
std::unique_ptr<Function> CloneFunction(const Function& fn, const std::string& name) {
  auto copy = std::make_unique<Function>(name, fn.loc());
  copy->set_visibility("private");
  copy->arg_types() = fn.arg_types();
  copy->result_types() = fn.result_types();
  copy->arg_attrs() = fn.arg_attrs();
  copy->result_attrs() = fn.result_attrs();
  copy->attrs() = fn.attrs();
  copy->body().add_block();
  Block& block = *copy->entry();
  ir::ValueMap map;
  for (size_t i = 0; i < fn.entry()->num_args(); ++i) {
    const Value* arg = fn.entry()->arg(i);
    Value* new_arg = block.add_arg(arg->type());
    new_arg->set_name(arg->name());
    map[arg] = new_arg;
  }
  for (const auto& op : fn.entry()->ops()) block.add_op(ir::CloneOp(*op, map));
  return copy;
}

}  // namespace

bool AllTensorTypes(const std::vector<ir::Type>& types) {
  for (const Type& type : types) {
    if (!type.is_tensor()) return false;
  }
  return true;
}

Status FlattenEntrySignature(ir::Module& module) {
  Function* old_fn = module.EntryFunction();
  if (old_fn == nullptr) return InvalidArgument("flatten-signature: the module has no entry function");
  if (AllTensorTypes(old_fn->arg_types()) && AllTensorTypes(old_fn->result_types())) {
    return Status::Ok();
  }
  const std::string name = old_fn->name();
  Block* old_block = old_fn->entry();
  if (old_block == nullptr || old_fn->body().num_blocks() != 1) {
    return InvalidArgument("flatten-signature: @" + name + " needs a body of one block");
  }
  Op* old_return = old_block->terminator();
  if (old_return == nullptr || old_return->code() != OpCode::kFuncReturn ||
      old_return->num_operands() != old_fn->result_types().size() ||
      old_block->num_args() != old_fn->arg_types().size()) {
    return InvalidArgument("flatten-signature: @" + name + " does not match its signature");
  }
  for (const auto* types : {&old_fn->arg_types(), &old_fn->result_types()}) {
    for (const Type& t : *types) {
      if (t.is_future()) {
        return InvalidArgument("flatten-signature: @" + name + " has a " + t.ToString() +
                               " in its signature; only tensors, tokens and tuples flatten");
      }
    }
  }
  // Callers inside the module keep the old signature: they call a private
  // copy of the entry as it was (the inline pass usually inlines it).
  std::string copy_name = name + "_structured";
  for (int n = 1; module.FindFunction(copy_name) != nullptr; ++n) {
    copy_name = name + "_structured_" + std::to_string(n);
  }
  if (RetargetCalls(module, name, copy_name) > 0) {
    JITD_RETURN_IF_ERROR(module.AddFunction(CloneFunction(*old_fn, copy_name)).status());
  }

  auto fn = std::make_unique<Function>(name, old_fn->loc());
  fn->set_visibility(old_fn->visibility());
  fn->attrs() = old_fn->attrs();
  fn->body().add_block();
  Block& block = *fn->entry();

  // Arguments: tensors stay (with their attributes), tuples and tokens are
  // rebuilt at the top of the body.
  std::vector<std::unique_ptr<Op>> body;
  ir::ValueMap map;
  for (size_t i = 0; i < old_block->num_args(); ++i) {
    Value* old_arg = old_block->arg(i);
    const Type& type = old_fn->arg_types()[i];
    const std::string arg_name = old_arg->name().empty() ? "arg" + std::to_string(i) : old_arg->name();
    const size_t first_attr = fn->arg_attrs().size();
    map[old_arg] = Rebuild(type, arg_name, old_fn->loc(), *fn, body);
    if (type.is_tensor() && i < old_fn->arg_attrs().size()) {
      fn->arg_attrs()[first_attr] = old_fn->arg_attrs()[i];
    }
  }

  // The old body, its return taken apart into tensor leaves.
  std::vector<std::unique_ptr<Op>> old_ops = old_block->TakeOps();
  std::unique_ptr<Op> return_op = std::move(old_ops.back());
  old_ops.pop_back();
  for (std::unique_ptr<Op>& op : old_ops) body.push_back(std::move(op));
  std::vector<Value*> leaves;
  for (size_t i = 0; i < return_op->num_operands(); ++i) {
    Value* value = return_op->operand(i);
    const Type& type = old_fn->result_types()[i];
    const size_t first = leaves.size();
    Unpack(value, return_op->loc(), body, leaves);
    for (size_t j = first; j < leaves.size(); ++j) {
      fn->result_types().push_back(leaves[j]->type());
      fn->result_attrs().emplace_back();
    }
    if (type.is_tensor() && i < old_fn->result_attrs().size()) {
      fn->result_attrs()[first] = old_fn->result_attrs()[i];
    }
  }
  auto new_return = std::make_unique<Op>(OpCode::kFuncReturn, return_op->loc());
  for (Value* leaf : leaves) new_return->add_operand(leaf);
  body.push_back(std::move(new_return));
  block.SetOps(std::move(body));
  // Uses of the old arguments (nested regions included) now read the new
  // values; the old function holds nothing the new one uses.
  ir::RemapOperands(fn->body(), map);
  return_op.reset();
  module.RemoveFunction(name);
  JITD_ASSIGN_OR_RETURN(Function * added, module.AddFunction(std::move(fn)));
  (void)added;
  return Status::Ok();
}

}  // namespace jitd::passes
