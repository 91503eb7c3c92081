#include "jit/ir/module.h"

#include <array>

namespace jitd::ir {

namespace {

constexpr std::string_view kOpNames[] = {
#define X(e, name) name,
#include "jit/ir/ops.def"
#undef X
};

const std::unordered_map<std::string_view, OpCode>& OpNameTable() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string_view, OpCode>();
    for (size_t i = 0; i < std::size(kOpNames); ++i) {
      t->emplace(kOpNames[i], static_cast<OpCode>(i));
    }
    return t;
  }();
  return *table;
}

}  // namespace

std::string_view OpName(OpCode code) {
  return kOpNames[static_cast<size_t>(code)];
}

std::optional<OpCode> ParseOpName(std::string_view name) {
  const auto& table = OpNameTable();
  auto it = table.find(name);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

std::string Location::ToString() const {
  return std::to_string(line) + ":" + std::to_string(column);
}

Value* Op::add_result(Type type) {
  results_.push_back(std::make_unique<Value>(std::move(type), this, nullptr,
                                             static_cast<int>(results_.size())));
  return results_.back().get();
}

std::vector<Type> Op::result_types() const {
  std::vector<Type> types;
  types.reserve(results_.size());
  for (const auto& r : results_) types.push_back(r->type());
  return types;
}

std::vector<Type> Op::operand_types() const {
  std::vector<Type> types;
  types.reserve(operands_.size());
  for (const Value* v : operands_) types.push_back(v->type());
  return types;
}

Region& Op::add_region() {
  regions_.push_back(std::make_unique<Region>(this));
  return *regions_.back();
}

std::optional<int64_t> Op::GetInt(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a) return std::nullopt;
  if (auto* i = a->get_if<IntegerAttr>()) return i->value;
  return std::nullopt;
}

std::optional<bool> Op::GetBool(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a) return std::nullopt;
  if (auto* b = a->get_if<bool>()) return *b;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> Op::GetI64Array(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a) return std::nullopt;
  if (auto* d = a->get_if<DenseArrayAttr>()) {
    if (!IsFloat(d->dtype)) return d->ints;
  }
  return std::nullopt;
}

const EnumAttr* Op::GetEnum(std::string_view name) const {
  const Attribute* a = attr(name);
  return a ? a->get_if<EnumAttr>() : nullptr;
}

const StructAttr* Op::GetStruct(std::string_view name) const {
  const Attribute* a = attr(name);
  return a ? a->get_if<StructAttr>() : nullptr;
}

Value* Block::add_arg(Type type) {
  args_.push_back(std::make_unique<Value>(std::move(type), nullptr, this,
                                          static_cast<int>(args_.size())));
  return args_.back().get();
}

Op* Block::add_op(std::unique_ptr<Op> op) {
  op->set_parent_block(this);
  ops_.push_back(std::move(op));
  return ops_.back().get();
}

Block& Region::add_block() {
  blocks_.push_back(std::make_unique<Block>(this));
  return *blocks_.back();
}

StatusOr<Function*> Module::AddFunction(std::unique_ptr<Function> fn) {
  if (by_name_.count(fn->name())) {
    return InvalidArgument("redefinition of function @" + fn->name());
  }
  Function* raw = fn.get();
  by_name_.emplace(fn->name(), raw);
  functions_.push_back(std::move(fn));
  return raw;
}

Function* Module::FindFunction(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

Function* Module::EntryFunction() const {
  if (Function* main = FindFunction("main")) return main;
  Function* only = nullptr;
  for (const auto& fn : functions_) {
    if (!fn->is_public()) continue;
    if (only) return nullptr;
    only = fn.get();
  }
  return only;
}

}  // namespace jitd::ir
