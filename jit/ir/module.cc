#include "jit/ir/module.h"

#include <algorithm>
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

namespace {

// Levenshtein distance, one row at a time; stops early (returning a value
// above `limit`) once every entry of a row exceeds it.
size_t EditDistance(std::string_view a, std::string_view b, size_t limit) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
      best = std::min(best, row[j]);
    }
    if (best > limit) return limit + 1;
  }
  return row[b.size()];
}

}  // namespace

std::string NearestOpName(std::string_view name) {
  if (name.empty() || name.size() > 200) return {};
  // Compare the op part alone too, so that another dialect's prefix
  // (mhlo.tanh) or none (tanh) does not count against a match.
  const size_t dot = name.find('.');
  const std::string_view bare = dot == std::string_view::npos ? name : name.substr(dot + 1);
  std::string best;
  size_t best_distance = std::max<size_t>(2, bare.size() / 3) + 1;
  for (std::string_view known : kOpNames) {
    const size_t known_dot = known.find('.');
    const std::string_view known_bare = known.substr(known_dot + 1);
    size_t d = EditDistance(name, known, best_distance);
    d = std::min(d, EditDistance(bare, known_bare, best_distance) +
                        (dot == std::string_view::npos ? 0 : 1));
    if (d < best_distance) {
      best_distance = d;
      best = std::string(known);
    }
  }
  return best;
}

bool IsElementwiseUnary(OpCode c) {
  switch (c) {
    case OpCode::kAbs: case OpCode::kCbrt: case OpCode::kCeil:
    case OpCode::kCountLeadingZeros: case OpCode::kCosine: case OpCode::kExponential:
    case OpCode::kExponentialMinusOne: case OpCode::kFloor: case OpCode::kImag:
    case OpCode::kIsFinite: case OpCode::kLog: case OpCode::kLogPlusOne:
    case OpCode::kLogistic: case OpCode::kNegate: case OpCode::kNot:
    case OpCode::kPopulationCount: case OpCode::kReal: case OpCode::kRoundNearestAfz:
    case OpCode::kRoundNearestEven: case OpCode::kRsqrt: case OpCode::kSign:
    case OpCode::kSine: case OpCode::kSqrt: case OpCode::kTan: case OpCode::kTanh:
    case OpCode::kConvert:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseBinary(OpCode c) {
  switch (c) {
    case OpCode::kAdd: case OpCode::kAnd: case OpCode::kAtan2: case OpCode::kDivide:
    case OpCode::kMaximum: case OpCode::kMinimum: case OpCode::kMultiply: case OpCode::kOr:
    case OpCode::kPower: case OpCode::kRemainder: case OpCode::kShiftLeft:
    case OpCode::kShiftRightArithmetic: case OpCode::kShiftRightLogical:
    case OpCode::kSubtract: case OpCode::kXor:
      return true;
    default:
      return false;
  }
}

std::optional<OpCode> ElementwiseOfChloBroadcast(OpCode c) {
  switch (c) {
    case OpCode::kChloBroadcastAdd: return OpCode::kAdd;
    case OpCode::kChloBroadcastAnd: return OpCode::kAnd;
    case OpCode::kChloBroadcastAtan2: return OpCode::kAtan2;
    case OpCode::kChloBroadcastCompare: return OpCode::kCompare;
    case OpCode::kChloBroadcastComplex: return OpCode::kComplex;
    case OpCode::kChloBroadcastDivide: return OpCode::kDivide;
    case OpCode::kChloBroadcastMaximum: return OpCode::kMaximum;
    case OpCode::kChloBroadcastMinimum: return OpCode::kMinimum;
    case OpCode::kChloBroadcastMultiply: return OpCode::kMultiply;
    case OpCode::kChloBroadcastNextAfter: return OpCode::kChloNextAfter;
    case OpCode::kChloBroadcastOr: return OpCode::kOr;
    case OpCode::kChloBroadcastPolygamma: return OpCode::kChloPolygamma;
    case OpCode::kChloBroadcastPower: return OpCode::kPower;
    case OpCode::kChloBroadcastRemainder: return OpCode::kRemainder;
    case OpCode::kChloBroadcastSelect: return OpCode::kSelect;
    case OpCode::kChloBroadcastShiftLeft: return OpCode::kShiftLeft;
    case OpCode::kChloBroadcastShiftRightArithmetic: return OpCode::kShiftRightArithmetic;
    case OpCode::kChloBroadcastShiftRightLogical: return OpCode::kShiftRightLogical;
    case OpCode::kChloBroadcastSubtract: return OpCode::kSubtract;
    case OpCode::kChloBroadcastXor: return OpCode::kXor;
    case OpCode::kChloBroadcastZeta: return OpCode::kChloZeta;
    default: return std::nullopt;
  }
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

std::unique_ptr<Op> Block::RemoveOp(size_t index) {
  std::unique_ptr<Op> op = std::move(ops_[index]);
  ops_.erase(ops_.begin() + static_cast<std::ptrdiff_t>(index));
  op->set_parent_block(nullptr);
  return op;
}

Op* Block::InsertOp(size_t index, std::unique_ptr<Op> op) {
  op->set_parent_block(this);
  index = std::min(index, ops_.size());
  auto it = ops_.insert(ops_.begin() + static_cast<std::ptrdiff_t>(index), std::move(op));
  return it->get();
}

std::optional<size_t> Block::IndexOf(const Op* op) const {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (ops_[i].get() == op) return i;
  }
  return std::nullopt;
}

void Block::SetOps(std::vector<std::unique_ptr<Op>> ops) {
  ops_ = std::move(ops);
  for (auto& op : ops_) op->set_parent_block(this);
}

size_t Block::EraseOpsIf(const std::function<bool(const Op&)>& pred) {
  const size_t before = ops_.size();
  ops_.erase(std::remove_if(ops_.begin(), ops_.end(),
                            [&](const std::unique_ptr<Op>& op) { return pred(*op); }),
             ops_.end());
  return before - ops_.size();
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

bool Module::RemoveFunction(std::string_view name) {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return false;
  const Function* fn = it->second;
  by_name_.erase(it);
  functions_.erase(std::find_if(functions_.begin(), functions_.end(),
                                [&](const std::unique_ptr<Function>& f) { return f.get() == fn; }));
  return true;
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

namespace jitd::ir {

std::optional<std::vector<uint8_t>> Module::FindResourceBlob(std::string_view key) const {
  for (const ResourceEntry& e : resources_) {
    if (e.section != "dialect_resources" || e.group != "builtin" || e.key != key) continue;
    std::string_view v = e.value;
    // "0x" + 8 hex digits of alignment + data, inside quotes.
    if (v.size() < 12 || v.front() != '"' || v.back() != '"' || v[1] != '0' || v[2] != 'x') {
      return std::nullopt;
    }
    v = v.substr(3, v.size() - 4);
    if (v.size() % 2 || v.size() < 8) return std::nullopt;
    auto nibble = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    std::vector<uint8_t> bytes;
    bytes.reserve(v.size() / 2 - 4);
    for (size_t i = 8; i < v.size(); i += 2) {
      const int hi = nibble(v[i]), lo = nibble(v[i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));
    }
    return bytes;
  }
  return std::nullopt;
}

}  // namespace jitd::ir

namespace jitd::ir {

std::unique_ptr<Op> CreateOp(OpCode code, Location loc, std::span<Value* const> operands,
                             std::span<const Type> result_types, AttributeList attrs,
                             std::string result_name) {
  auto op = std::make_unique<Op>(code, loc);
  for (Value* v : operands) op->add_operand(v);
  for (const Type& t : result_types) op->add_result(t);
  op->attrs() = std::move(attrs);
  if (!result_types.empty()) {
    op->set_result_groups({ResultGroup{std::move(result_name), static_cast<int>(result_types.size())}});
  }
  return op;
}

namespace {

// Pre-order walk over the ops of `region` and of their regions with an
// explicit stack (no recursion, whatever the nesting).
template <typename RegionT, typename F>
void WalkOpsIteratively(RegionT& region, F&& fn) {
  struct Cursor {
    RegionT* region;
    size_t block = 0;
    size_t op = 0;
  };
  std::vector<Cursor> stack = {{&region}};
  while (!stack.empty()) {
    Cursor& c = stack.back();
    if (c.block == c.region->num_blocks()) {
      stack.pop_back();
      continue;
    }
    const auto& ops = c.region->block(c.block).ops();
    if (c.op == ops.size()) {
      ++c.block;
      c.op = 0;
      continue;
    }
    auto& op = *ops[c.op++];
    fn(op);
    // Regions pushed last first, so they are walked in order.
    for (size_t r = op.num_regions(); r-- > 0;) stack.push_back({&op.region(r)});
  }
}

}  // namespace

void WalkOps(Region& region, const std::function<void(Op&)>& fn) {
  WalkOpsIteratively(region, [&](Op& op) { fn(op); });
}

void WalkOps(const Region& region, const std::function<void(const Op&)>& fn) {
  WalkOpsIteratively(region, [&](const Op& op) { fn(op); });
}

int RegionNesting(const Op& op) {
  // (op, its depth below `op`): depth d means d regions enclose it.
  int deepest = 0;
  std::vector<std::pair<const Op*, int>> stack = {{&op, 0}};
  while (!stack.empty()) {
    const auto [o, depth] = stack.back();
    stack.pop_back();
    for (size_t r = 0; r < o->num_regions(); ++r) {
      deepest = std::max(deepest, depth + 1);
      const Region& region = o->region(r);
      for (size_t b = 0; b < region.num_blocks(); ++b) {
        for (const auto& inner : region.block(b).ops()) {
          if (inner->num_regions() > 0) stack.push_back({inner.get(), depth + 1});
        }
      }
    }
  }
  return deepest;
}

void ReplaceAllUsesWith(Region& region, const Value* from, Value* to) {
  WalkOps(region, [&](Op& op) {
    for (size_t i = 0; i < op.num_operands(); ++i) {
      if (op.operand(i) == from) op.set_operand(i, to);
    }
  });
}

void RemapOperands(Region& region, const ValueMap& map) {
  if (map.empty()) return;
  WalkOps(region, [&](Op& op) {
    for (size_t i = 0; i < op.num_operands(); ++i) {
      Value* v = op.operand(i);
      for (auto it = map.find(v); it != map.end(); it = map.find(v)) v = it->second;
      op.set_operand(i, v);
    }
  });
}

std::unordered_map<const Value*, int> CountUses(const Region& region) {
  std::unordered_map<const Value*, int> uses;
  WalkOps(region, [&](const Op& op) {
    for (const Value* v : op.operands()) ++uses[v];
  });
  return uses;
}

std::unique_ptr<Op> CloneOp(const Op& op, ValueMap& mapping) {
  auto copy = std::make_unique<Op>(op.code(), op.loc());
  for (Value* v : op.operands()) {
    auto it = mapping.find(v);
    copy->add_operand(it == mapping.end() ? v : it->second);
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    Value* r = copy->add_result(op.result(i)->type());
    r->set_name(op.result(i)->name());
    mapping[op.result(i)] = r;
  }
  copy->set_result_groups(op.result_groups());
  copy->attrs() = op.attrs();
  for (size_t r = 0; r < op.num_regions(); ++r) {
    const Region& from = op.region(r);
    Region& to = copy->add_region();
    for (size_t b = 0; b < from.num_blocks(); ++b) {
      const Block& src = from.block(b);
      Block& dst = to.add_block();
      for (size_t a = 0; a < src.num_args(); ++a) {
        Value* arg = dst.add_arg(src.arg(a)->type());
        arg->set_name(src.arg(a)->name());
        mapping[src.arg(a)] = arg;
      }
      for (const auto& inner : src.ops()) dst.add_op(CloneOp(*inner, mapping));
    }
  }
  return copy;
}

std::unique_ptr<Module> CloneModule(const Module& module) {
  auto copy = std::make_unique<Module>();
  copy->set_name(module.name());
  copy->attrs() = module.attrs();
  copy->resources() = module.resources();
  for (const auto& fn : module.functions()) {
    auto f = std::make_unique<Function>(fn->name(), fn->loc());
    f->set_visibility(fn->visibility());
    f->arg_types() = fn->arg_types();
    f->result_types() = fn->result_types();
    f->arg_attrs() = fn->arg_attrs();
    f->result_attrs() = fn->result_attrs();
    f->attrs() = fn->attrs();
    ValueMap mapping;
    const Region& from = fn->body();
    for (size_t b = 0; b < from.num_blocks(); ++b) {
      const Block& src = from.block(b);
      Block& dst = f->body().add_block();
      for (size_t a = 0; a < src.num_args(); ++a) {
        Value* arg = dst.add_arg(src.arg(a)->type());
        arg->set_name(src.arg(a)->name());
        mapping[src.arg(a)] = arg;
      }
      for (const auto& op : src.ops()) dst.add_op(CloneOp(*op, mapping));
    }
    (void)copy->AddFunction(std::move(f));  // names are distinct in `module`
  }
  return copy;
}

}  // namespace jitd::ir
