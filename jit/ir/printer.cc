#include "jit/ir/printer.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace jitd::ir {

namespace {

// Assigns printable names to every value of a function (or a lone op):
// source names where they are unique, fresh numbers otherwise.
class Namer {
 public:
  explicit Namer(bool canonical = false) : canonical_(canonical) {}

  // Reserves every source name first so fresh numbers never collide.
  void Reserve(const Block& block) {
    if (canonical_) return;  // no source names are printed
    for (size_t i = 0; i < block.num_args(); ++i) used_.insert(block.arg(i)->name());
    for (const auto& op : block.ops()) {
      for (const auto& g : op->result_groups()) used_.insert(g.name);
      for (size_t r = 0; r < op->num_regions(); ++r) {
        for (size_t b = 0; b < op->region(r).num_blocks(); ++b) Reserve(op->region(r).block(b));
      }
    }
  }

  std::string Fresh(const std::string& given_hint) {
    const std::string& hint = canonical_ ? kNoHint : given_hint;
    if (!hint.empty() && claimed_.insert(hint).second) {
      log_.push_back(hint);
      return hint;
    }
    std::string base = hint.empty() ? "" : hint + "_";
    while (true) {
      std::string candidate = base + std::to_string(counter_++);
      if (!used_.count(candidate) && claimed_.insert(candidate).second) {
        log_.push_back(candidate);
        return candidate;
      }
    }
  }

  // Names are scoped like the parser's: a region's names are free again
  // once it ends, so sibling regions may reuse them (as MLIR prints).
  size_t EnterScope() const { return log_.size(); }
  void ExitScope(size_t mark) {
    while (log_.size() > mark) {
      claimed_.erase(log_.back());
      log_.pop_back();
    }
  }

  void NameBlockArgs(const Block& block) {
    for (size_t i = 0; i < block.num_args(); ++i) {
      const Value* v = block.arg(i);
      if (!names_.count(v)) names_[v] = Fresh(v->name().empty() ? "arg" : v->name());
    }
  }
  // Forces a name (pretty while: both regions share the loop names).
  void SetName(const Value* v, std::string name) { names_[v] = std::move(name); }

  // Names `op`'s results; returns the result-group prefix ("%a, %b:2 = ").
  std::string NameResults(const Op& op) {
    if (op.num_results() == 0) return {};
    std::vector<ResultGroup> groups = op.result_groups();
    int total = 0;
    for (const auto& g : groups) total += g.count;
    if (canonical_ || total != static_cast<int>(op.num_results())) {
      groups = {ResultGroup{"", static_cast<int>(op.num_results())}};
    }
    std::string prefix;
    size_t next = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string name = Fresh(groups[g].name);
      if (g) prefix += ", ";
      prefix += '%';
      prefix += name;
      if (groups[g].count > 1) prefix += ":" + std::to_string(groups[g].count);
      for (int i = 0; i < groups[g].count; ++i) {
        std::string ref = name;
        if (groups[g].count > 1) ref += "#" + std::to_string(i);
        names_[op.result(next++)] = std::move(ref);
      }
    }
    return prefix + " = ";
  }

  void AppendRef(const Value* v, std::string& out) {
    out += '%';
    auto it = names_.find(v);
    if (it != names_.end()) {
      out += it->second;
    } else {
      // A value defined outside what is being printed (PrintOp on an inner
      // op): name it by its source name or a placeholder.
      std::string name = Fresh(v->name().empty() ? "unknown" : v->name());
      names_[v] = name;
      out += name;
    }
  }

 private:
  std::unordered_set<std::string> used_;
  std::unordered_set<std::string> claimed_;
  std::vector<std::string> log_;  // claimed names in order, for ExitScope
  std::unordered_map<const Value*, std::string> names_;
  int counter_ = 0;
  bool canonical_ = false;
  inline static const std::string kNoHint;
};

// The canonical names of private functions (PrintOptions::canonical).
using SymbolRenames = std::unordered_map<std::string, std::string>;
constexpr std::string_view kCanonicalFunctionPrefix = "_jitd_f";

class Printer {
 public:
  Printer(const PrintOptions& options, std::string& out, const SymbolRenames* renames = nullptr)
      : options_(options), out_(out), namer_(options.canonical), renames_(renames) {}

  void PrintModule(const Module& module);
  void PrintResources(const std::vector<ResourceEntry>& entries);
  void PrintFunction(const Function& fn);
  void PrintOp(const Op& op, int indent);
  Namer& namer() { return namer_; }

 private:
  void Indent(int n) { out_.append(static_cast<size_t>(n), ' '); }
  void Ref(const Value* v) { namer_.AppendRef(v, out_); }
  void Refs(std::span<Value* const> values) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) out_ += ", ";
      Ref(values[i]);
    }
  }
  void Types(const std::vector<Type>& types) {
    for (size_t i = 0; i < types.size(); ++i) {
      if (i) out_ += ", ";
      types[i].AppendTo(out_);
    }
  }
  void FunctionalType(const Op& op) {
    out_ += FunctionTypeToString(op.operand_types(), op.result_types());
  }
  // ` {a = 1}` for attributes other than `skip`.
  void AttrDict(const Op& op, std::initializer_list<std::string_view> skip);
  // `open a = 1, b close` for the attributes `keep` accepts; nothing if none.
  template <typename Pred>
  void AttrsWhere(const Op& op, std::string_view open, std::string_view close, Pred keep);
  void PrintRegion(const Region& region, int indent, bool print_header);
  void GenericOp(const Op& op, int indent);
  bool PrettyOp(const Op& op, int indent);
  bool SameTypePretty(const Op& op);  // ": T" or ": (T, T) -> R"
  bool PrintReduce(const Op& op, int indent);
  bool PrintWhile(const Op& op, int indent);
  bool PrintConvolution(const Op& op);
  bool PrintDot(const Op& op);
  bool PrintCheck(const Op& op);
  void IntList(const std::vector<int64_t>& v) { AppendIntList(v, out_); }
  void Symbol(const std::string& name) {
    if (renames_ != nullptr) {
      auto it = renames_->find(name);
      if (it != renames_->end()) return AppendSymbol(it->second, out_);
    }
    AppendSymbol(name, out_);
  }

  const PrintOptions& options_;
  std::string& out_;
  Namer namer_;
  const SymbolRenames* renames_;  // may be null
};

template <typename Pred>
void Printer::AttrsWhere(const Op& op, std::string_view open, std::string_view close, Pred keep) {
  bool first = true;
  for (const auto& entry : op.attrs().entries()) {
    if (!keep(entry)) continue;
    out_ += first ? open : ", ";
    first = false;
    AppendAttributeName(entry.name, out_);
    if (!entry.value.is<UnitAttr>()) {
      out_ += " = ";
      entry.value.AppendTo(out_);
    }
  }
  if (!first) out_ += close;
}

void Printer::AttrDict(const Op& op, std::initializer_list<std::string_view> skip) {
  AttrsWhere(op, " {", "}", [&](const NamedAttribute& e) {
    for (std::string_view s : skip) {
      if (e.name == s) return false;
    }
    return true;
  });
}

void Printer::PrintRegion(const Region& region, int indent, bool print_header) {
  const size_t scope = namer_.EnterScope();
  out_ += "{\n";
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    const Block& block = region.block(b);
    namer_.NameBlockArgs(block);
    if (print_header && (block.num_args() > 0 || b > 0)) {
      Indent(indent);
      out_ += "^bb" + std::to_string(b);
      if (block.num_args()) {
        out_ += '(';
        for (size_t i = 0; i < block.num_args(); ++i) {
          if (i) out_ += ", ";
          Ref(block.arg(i));
          out_ += ": ";
          block.arg(i)->type().AppendTo(out_);
        }
        out_ += ')';
      }
      out_ += ":\n";
    }
    for (const auto& op : block.ops()) PrintOp(*op, indent + 2);
  }
  Indent(indent);
  out_ += '}';
  namer_.ExitScope(scope);
}

void Printer::GenericOp(const Op& op, int indent) {
  out_ += '"';
  out_ += op.name();
  out_ += "\"(";
  Refs(op.operands());
  out_ += ')';
  // Inherent attributes (no dialect prefix) as properties, the rest after.
  auto inherent = [](const NamedAttribute& e) { return e.name.find('.') == std::string::npos; };
  AttrsWhere(op, " <{", "}>", inherent);
  if (op.num_regions()) {
    out_ += " (";
    for (size_t r = 0; r < op.num_regions(); ++r) {
      if (r) out_ += ", ";
      PrintRegion(op.region(r), indent, /*print_header=*/true);
    }
    out_ += ')';
  }
  AttrsWhere(op, " {", "}", [&](const NamedAttribute& e) { return !inherent(e); });
  out_ += " : ";
  FunctionalType(op);
}

bool Printer::SameTypePretty(const Op& op) {
  out_ += " : ";
  const Type& result = op.result(0)->type();
  bool same = true;
  for (const Value* v : op.operands()) same &= v->type() == result;
  if (same) {
    result.AppendTo(out_);
  } else {
    FunctionalType(op);
  }
  return true;
}

// The compact reduce form applies when the body is `return op(arg0, arg1)`
// for one input, with scalar arguments of the input's element type.
bool IsCompactReduceBody(const Op& op) {
  if (op.num_operands() != 2 || op.num_regions() != 1 || op.region(0).num_blocks() != 1) return false;
  const Type& input = op.operand(0)->type();
  if (!input.is_tensor()) return false;
  const Type scalar = Type::Scalar(input.dtype());
  const Block& block = op.region(0).block(0);
  if (block.num_args() != 2 || block.ops().size() != 2) return false;
  if (block.arg(0)->type() != scalar || block.arg(1)->type() != scalar) return false;
  const Op& inner = *block.ops()[0];
  const Op& ret = *block.ops()[1];
  if (!IsElementwiseBinary(inner.code()) || !inner.attrs().empty() || inner.num_regions() ||
      inner.num_operands() != 2 || inner.num_results() != 1) {
    return false;
  }
  if (inner.operand(0) != block.arg(0) || inner.operand(1) != block.arg(1)) return false;
  if (inner.result(0)->type() != scalar) return false;
  return ret.code() == OpCode::kReturn && ret.num_operands() == 1 &&
         ret.operand(0) == inner.result(0) && ret.attrs().empty();
}

bool Printer::PrintReduce(const Op& op, int indent) {
  const size_t n = op.num_operands() / 2;
  auto dims = op.GetI64Array("dimensions");
  if (op.num_operands() % 2 || n == 0 || !dims || op.num_regions() != 1 ||
      op.region(0).num_blocks() != 1 || op.region(0).block(0).num_args() != 2 * n) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    if (i) out_ += ", ";
    out_ += '(';
    Ref(op.operand(i));
    out_ += " init: ";
    Ref(op.operand(n + i));
    out_ += ')';
  }
  const bool compact = IsCompactReduceBody(op);
  if (compact) {
    out_ += " applies ";
    out_ += op.region(0).block(0).ops()[0]->name();
  }
  out_ += " across dimensions = ";
  IntList(*dims);
  AttrDict(op, {"dimensions"});
  out_ += " : ";
  FunctionalType(op);
  if (compact) return true;
  const Block& block = op.region(0).block(0);
  const size_t scope = namer_.EnterScope();
  namer_.NameBlockArgs(block);
  out_ += "\n";
  Indent(indent + 1);
  out_ += "reducer";
  for (size_t i = 0; i < n; ++i) {
    out_ += '(';
    for (size_t side = 0; side < 2; ++side) {
      if (side) out_ += ", ";
      const Value* arg = block.arg(i + side * n);
      Ref(arg);
      out_ += ": ";
      arg->type().AppendTo(out_);
    }
    out_ += ") ";
  }
  out_ += ' ';
  PrintRegion(op.region(0), indent, /*print_header=*/false);
  namer_.ExitScope(scope);
  return true;
}

bool Printer::PrintWhile(const Op& op, int indent) {
  if (op.num_regions() != 2) return false;
  for (size_t r = 0; r < 2; ++r) {
    if (op.region(r).num_blocks() != 1) return false;
    const Block& block = op.region(r).block(0);
    if (block.num_args() != op.num_operands()) return false;
    for (size_t i = 0; i < block.num_args(); ++i) {
      if (block.arg(i)->type() != op.operand(i)->type()) return false;
    }
  }
  if (op.num_results() != op.num_operands()) return false;
  const Block& cond = op.region(0).block(0);
  const Block& body = op.region(1).block(0);
  const size_t scope = namer_.EnterScope();
  namer_.NameBlockArgs(cond);
  out_ += '(';
  for (size_t i = 0; i < op.num_operands(); ++i) {
    if (i) out_ += ", ";
    Ref(cond.arg(i));
    out_ += " = ";
    Ref(op.operand(i));
    // The body's loop variables print with the same names.
    std::string name;
    namer_.AppendRef(cond.arg(i), name);
    namer_.SetName(body.arg(i), name.substr(1));
  }
  out_ += ')';
  if (op.num_operands()) {
    out_ += " : ";
    Types(op.operand_types());
  }
  if (!op.attrs().empty()) {
    out_ += " attributes";
    AttrDict(op, {});
  }
  out_ += '\n';
  Indent(indent + 1);
  out_ += "cond ";
  PrintRegion(op.region(0), indent, /*print_header=*/false);
  out_ += " do ";
  PrintRegion(op.region(1), indent, /*print_header=*/false);
  namer_.ExitScope(scope);
  return true;
}

bool Printer::PrintConvolution(const Op& op) {
  const Attribute* dims = op.attr("dimension_numbers");
  if (!dims || !dims->is<ConvDimensionNumbers>()) return false;
  // Window fields must have the kinds the pretty form can express.
  auto i64_or_absent = [&](std::string_view name) {
    const Attribute* a = op.attr(name);
    return !a || (a->is<DenseArrayAttr>() && a->as<DenseArrayAttr>().dtype == DType::kS64);
  };
  const Attribute* padding = op.attr("padding");
  if (padding) {
    const auto* d = padding->get_if<DenseElementsAttr>();
    if (!d || d->type.dtype() != DType::kS64 || d->type.rank() != 2 || d->type.dim(1) != 2) return false;
  }
  const Attribute* reversal = op.attr("window_reversal");
  if (reversal && (!reversal->is<DenseArrayAttr>() || reversal->as<DenseArrayAttr>().dtype != DType::kPred)) {
    return false;
  }
  if (!i64_or_absent("window_strides") || !i64_or_absent("lhs_dilation") ||
      !i64_or_absent("rhs_dilation")) {
    return false;
  }
  out_ += '(';
  Refs(op.operands());
  out_ += ") dim_numbers = ";
  std::string text = dims->ToString();  // #stablehlo.conv<...>
  out_ += text.substr(16, text.size() - 17);
  out_ += ", window = {";
  bool first = true;
  auto field = [&](const char* key) {
    if (!first) out_ += ", ";
    first = false;
    out_ += key;
    out_ += " = ";
  };
  if (auto v = op.GetI64Array("window_strides")) {
    field("stride");
    IntList(*v);
  }
  if (padding) {
    auto lit = DenseElementsToLiteral(padding->as<DenseElementsAttr>());
    if (!lit.ok()) return false;
    field("pad");
    out_ += '[';
    for (int64_t r = 0; r < lit->type().dim(0); ++r) {
      if (r) out_ += ", ";
      out_ += '[' + std::to_string(lit->GetInt(2 * r)) + ", " + std::to_string(lit->GetInt(2 * r + 1)) + ']';
    }
    out_ += ']';
  }
  if (auto v = op.GetI64Array("lhs_dilation")) {
    field("lhs_dilate");
    IntList(*v);
  }
  if (auto v = op.GetI64Array("rhs_dilation")) {
    field("rhs_dilate");
    IntList(*v);
  }
  if (reversal) {
    field("reverse");
    out_ += '[';
    const auto& r = reversal->as<DenseArrayAttr>().ints;
    for (size_t i = 0; i < r.size(); ++i) {
      if (i) out_ += ", ";
      out_ += r[i] ? "true" : "false";
    }
    out_ += ']';
  }
  out_ += '}';
  AttrDict(op, {"dimension_numbers", "window_strides", "padding", "lhs_dilation", "rhs_dilation",
                "window_reversal"});
  out_ += " : ";
  FunctionalType(op);
  return true;
}

bool Printer::PrintDot(const Op& op) {
  if (op.num_operands() != 2) return false;
  const StructAttr* dims = nullptr;
  if (op.code() == OpCode::kDotGeneral) {
    dims = op.GetStruct("dot_dimension_numbers");
    if (!dims || dims->name != "stablehlo.dot") return false;
    for (const auto& f : dims->fields) {
      if (!f.is_list) return false;
      if (f.name != "lhs_batching_dimensions" && f.name != "rhs_batching_dimensions" &&
          f.name != "lhs_contracting_dimensions" && f.name != "rhs_contracting_dimensions") {
        return false;
      }
    }
  }
  const Attribute* precision = op.attr("precision_config");
  if (precision) {
    const auto* array = precision->get_if<ArrayAttr>();
    if (!array) return false;
    for (const auto& e : array->elements) {
      const auto* en = e.get_if<EnumAttr>();
      if (!en || en->enum_name != "precision") return false;
    }
  }
  const Attribute* algorithm = op.attr("algorithm");
  static constexpr std::string_view kAlgorithmPrefix = "#stablehlo.dot_algorithm<";
  if (algorithm && (!algorithm->is<OpaqueAttr>() ||
                    algorithm->as<OpaqueAttr>().text.rfind(kAlgorithmPrefix, 0) != 0)) {
    return false;
  }
  out_ += ' ';
  Refs(op.operands());
  if (dims) {
    auto get = [&](std::string_view name) {
      for (const auto& f : dims->fields) {
        if (f.name == name) return f.values;
      }
      return std::vector<int64_t>{};
    };
    auto lb = get("lhs_batching_dimensions"), rb = get("rhs_batching_dimensions");
    if (!lb.empty() || !rb.empty()) {
      out_ += ", batching_dims = ";
      IntList(lb);
      out_ += " x ";
      IntList(rb);
    }
    out_ += ", contracting_dims = ";
    IntList(get("lhs_contracting_dimensions"));
    out_ += " x ";
    IntList(get("rhs_contracting_dimensions"));
  }
  if (precision) {
    out_ += ", precision = [";
    const auto& elements = precision->as<ArrayAttr>().elements;
    for (size_t i = 0; i < elements.size(); ++i) {
      if (i) out_ += ", ";
      out_ += elements[i].as<EnumAttr>().value;
    }
    out_ += ']';
  }
  if (algorithm) {
    out_ += ", algorithm = ";
    out_ += std::string_view(algorithm->as<OpaqueAttr>().text).substr(kAlgorithmPrefix.size() - 1);
  }
  AttrDict(op, {"dot_dimension_numbers", "precision_config", "algorithm"});
  out_ += " : ";
  FunctionalType(op);
  return true;
}

bool Printer::PrintCheck(const Op& op) {
  const bool is_const = op.code() == OpCode::kCheckExpectEqConst ||
                        op.code() == OpCode::kCheckExpectAlmostEqConst;
  const Attribute* value = op.attr("value");
  if (is_const) {
    if (op.num_operands() != 1 || !value || !value->is<DenseElementsAttr>()) return false;
    if (value->as<DenseElementsAttr>().type != op.operand(0)->type()) return false;
  } else if (op.num_operands() != 2 || op.num_results() != 0) {
    return false;
  }
  out_ += ' ';
  Refs(op.operands());
  if (is_const) {
    out_ += ", ";
    value->AppendTo(out_);
  }
  for (const auto& e : op.attrs().entries()) {
    if (e.name == "value") continue;
    if (e.value.is<UnitAttr>()) return false;  // not expressible as `key = value`
    out_ += ", ";
    out_ += e.name;
    out_ += " = ";
    e.value.AppendTo(out_);
  }
  if (!is_const) {
    out_ += " : ";
    op.operand(0)->type().AppendTo(out_);
    if (op.operand(1)->type() != op.operand(0)->type()) {
      out_ += ", ";
      op.operand(1)->type().AppendTo(out_);
    }
  }
  return true;
}

// Returns false (printing nothing) when the op is not in a shape its pretty
// form can express; the caller then prints the generic form.
bool Printer::PrettyOp(const Op& op, int indent) {
  const OpCode c = op.code();
  const size_t n = op.num_operands();
  auto all_tensors = [&] {
    for (const Value* v : op.operands()) if (!v->type().is_tensor()) return false;
    for (size_t i = 0; i < op.num_results(); ++i) if (!op.result(i)->type().is_tensor()) return false;
    return true;
  };
  auto has_i64_array = [&](std::string_view name) { return op.GetI64Array(name).has_value(); };
  if (op.num_regions() && c != OpCode::kReduce && c != OpCode::kWhile && c != OpCode::kChloScan) {
    return false;
  }
  if (IsElementwiseUnary(c) || IsElementwiseBinary(c) || c == OpCode::kClamp) {
    const size_t want = IsElementwiseUnary(c) ? 1 : IsElementwiseBinary(c) ? 2 : 3;
    if (n != want || op.num_results() != 1 || !all_tensors()) return false;
    out_ += ' ';
    Refs(op.operands());
    AttrDict(op, {});
    return SameTypePretty(op);
  }
  switch (c) {
    case OpCode::kReverse:
    case OpCode::kReducePrecision: {
      if (n != 1 || op.num_results() != 1 || !all_tensors()) return false;
      if (c == OpCode::kReverse) {
        auto dims = op.GetI64Array("dimensions");
        if (!dims) return false;
        out_ += ' ';
        Ref(op.operand(0));
        out_ += ", dims = ";
        IntList(*dims);
        AttrDict(op, {"dimensions"});
      } else {
        auto e = op.GetInt("exponent_bits"), m = op.GetInt("mantissa_bits");
        if (!e || !m || *e < 0 || *m < 0) return false;
        out_ += ' ';
        Ref(op.operand(0));
        out_ += ", format = e" + std::to_string(*e) + "m" + std::to_string(*m);
        AttrDict(op, {"exponent_bits", "mantissa_bits"});
      }
      return SameTypePretty(op);
    }
    case OpCode::kComplex: {
      if (n != 2 || op.num_results() != 1 || !all_tensors()) return false;
      out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      const Type& result = op.result(0)->type();
      const Type& lhs = op.operand(0)->type();
      if (IsComplex(result.dtype()) && lhs == op.operand(1)->type() &&
          lhs == result.WithDType(ComplexComponent(result.dtype()))) {
        result.AppendTo(out_);
      } else {
        FunctionalType(op);
      }
      return true;
    }
    case OpCode::kSelect: {
      if (n != 3 || op.num_results() != 1) return false;
      out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      const Type& result = op.result(0)->type();
      if (op.operand(1)->type() == result && op.operand(2)->type() == result) {
        op.operand(0)->type().AppendTo(out_);
        out_ += ", ";
        result.AppendTo(out_);
      } else {
        FunctionalType(op);
      }
      return true;
    }
    case OpCode::kCompare: {
      const EnumAttr* dir = op.GetEnum("comparison_direction");
      const EnumAttr* type = op.GetEnum("compare_type");
      if (n != 2 || !dir || dir->enum_name != "comparison_direction") return false;
      if (op.attr("compare_type") && (!type || type->enum_name != "comparison_type")) return false;
      out_ += "  ";
      out_ += dir->value;
      out_ += ", ";
      Refs(op.operands());
      if (type) {
        out_ += ",  ";
        out_ += type->value;
      }
      AttrDict(op, {"comparison_direction", "compare_type"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kConstant: {
      const Attribute* value = op.attr("value");
      if (n != 0 || op.num_results() != 1 || !value) return false;
      const Type* type = nullptr;
      if (auto* d = value->get_if<DenseElementsAttr>()) type = &d->type;
      if (auto* r = value->get_if<DenseResourceAttr>()) type = &r->type;
      if (!type || *type != op.result(0)->type()) return false;
      AttrDict(op, {"value"});
      out_ += ' ';
      value->AppendTo(out_);
      return true;
    }
    case OpCode::kIota: {
      auto dim = op.GetInt("iota_dimension");
      if (n != 0 || op.num_results() != 1 || !dim) return false;
      out_ += " dim = " + std::to_string(*dim);
      AttrDict(op, {"iota_dimension"});
      out_ += " : ";
      op.result(0)->type().AppendTo(out_);
      return true;
    }
    case OpCode::kBroadcastInDim:
    case OpCode::kBroadcast:
    case OpCode::kTranspose: {
      const char* attr = c == OpCode::kBroadcastInDim ? "broadcast_dimensions"
                         : c == OpCode::kBroadcast    ? "broadcast_sizes"
                                                      : "permutation";
      auto dims = op.GetI64Array(attr);
      if (n != 1 || !dims) return false;
      out_ += ' ';
      Ref(op.operand(0));
      out_ += c == OpCode::kBroadcast ? ", sizes = " : ", dims = ";
      IntList(*dims);
      AttrDict(op, {attr});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kAfterAll: {
      // `after_all %a, %b : !stablehlo.token`, as stablehlo-opt prints it.
      if (op.num_results() != 1 || !op.result(0)->type().is_token()) return false;
      for (const Value* v : op.operands()) if (!v->type().is_token()) return false;
      if (n) out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      op.result(0)->type().AppendTo(out_);
      return true;
    }
    case OpCode::kOptimizationBarrier: {
      if (n != op.num_results()) return false;
      for (size_t i = 0; i < n; ++i) {
        if (op.operand(i)->type() != op.result(i)->type()) return false;
      }
      if (n == 0) {
        out_ += "()";
        AttrDict(op, {});
        return true;
      }
      out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      Types(op.operand_types());
      return true;
    }
    case OpCode::kComposite: {
      const Attribute* name = op.attr("name");
      if (!name || !name->is<StringAttr>()) return false;
      out_ += ' ';
      name->AppendTo(out_);
      if (n) out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {"name"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kChloScan: {
      // chlo.scan(%in...) inits(%init...) dimension=N {body} {attrs} : (T...) -> (R...)
      const Attribute* a = op.attr("operandSegmentSizes");
      const auto* seg = a ? a->get_if<DenseArrayAttr>() : nullptr;
      auto dim = op.GetInt("dimension");
      if (!seg || seg->ints.size() != 2 || !dim || op.num_regions() != 1 || seg->ints[0] < 0 ||
          static_cast<size_t>(seg->ints[0]) > n) {
        return false;
      }
      const size_t num_inputs = static_cast<size_t>(seg->ints[0]);
      out_ += '(';
      Refs(op.operands().subspan(0, num_inputs));
      out_ += ") inits(";
      Refs(op.operands().subspan(num_inputs));
      out_ += ") dimension=" + std::to_string(*dim) + ' ';
      PrintRegion(op.region(0), indent, /*print_header=*/true);
      AttrDict(op, {"dimension", "operandSegmentSizes", "resultSegmentSizes"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kDynamicIota: {
      auto dim = op.GetInt("iota_dimension");
      if (n != 1 || !dim) return false;
      out_ += ' ';
      Ref(op.operand(0));
      out_ += ", dim = " + std::to_string(*dim);
      AttrDict(op, {"iota_dimension"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kDynamicBroadcastInDim: {
      auto dims = op.GetI64Array("broadcast_dimensions");
      if (n != 2 || !dims) return false;
      out_ += ' ';
      Refs(op.operands());
      out_ += ", dims = ";
      IntList(*dims);
      AttrDict(op, {"broadcast_dimensions"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kEinsum:
    case OpCode::kUnaryEinsum: {
      const Attribute* config = op.attr("einsum_config");
      if (n == 0 || !config || !config->is<StringAttr>()) return false;
      out_ += ' ';
      Refs(op.operands());
      out_ += ", config = ";
      config->AppendTo(out_);
      AttrDict(op, {"einsum_config"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kChloConstant: {
      const Attribute* value = op.attr("value");
      const auto* d = value ? value->get_if<DenseElementsAttr>() : nullptr;
      if (n != 0 || op.num_results() != 1 || !d || d->type != op.result(0)->type()) return false;
      AttrDict(op, {"value"});
      out_ += ' ';
      value->AppendTo(out_);
      return true;
    }
    case OpCode::kDynamicReshape:
    case OpCode::kDynamicPad:
    case OpCode::kRealDynamicSlice:
    case OpCode::kUniformQuantize:
    case OpCode::kUniformDequantize:
    case OpCode::kChloBroadcastAdd:
    case OpCode::kChloBroadcastAnd:
    case OpCode::kChloBroadcastAtan2:
    case OpCode::kChloBroadcastCompare:
    case OpCode::kChloBroadcastComplex:
    case OpCode::kChloBroadcastDivide:
    case OpCode::kChloBroadcastMaximum:
    case OpCode::kChloBroadcastMinimum:
    case OpCode::kChloBroadcastMultiply:
    case OpCode::kChloBroadcastNextAfter:
    case OpCode::kChloBroadcastOr:
    case OpCode::kChloBroadcastPolygamma:
    case OpCode::kChloBroadcastPower:
    case OpCode::kChloBroadcastRemainder:
    case OpCode::kChloBroadcastSelect:
    case OpCode::kChloBroadcastShiftLeft:
    case OpCode::kChloBroadcastShiftRightArithmetic:
    case OpCode::kChloBroadcastShiftRightLogical:
    case OpCode::kChloBroadcastSubtract:
    case OpCode::kChloBroadcastXor:
    case OpCode::kChloBroadcastZeta:
      if (n == 0 || op.num_results() != 1) return false;
      out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      FunctionalType(op);
      return true;
    case OpCode::kReshape:
    case OpCode::kBitcastConvert:
    case OpCode::kDynamicUpdateSlice: {
      if (n == 0) return false;
      if (n) out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kSlice: {
      auto start = op.GetI64Array("start_indices");
      auto limit = op.GetI64Array("limit_indices");
      auto strides = op.GetI64Array("strides");
      if (n != 1 || !start || !limit || !strides || start->size() != limit->size() ||
          start->size() != strides->size()) {
        return false;
      }
      out_ += ' ';
      Ref(op.operand(0));
      out_ += " [";
      for (size_t i = 0; i < start->size(); ++i) {
        if (i) out_ += ", ";
        out_ += std::to_string((*start)[i]) + ":" + std::to_string((*limit)[i]);
        if ((*strides)[i] != 1) out_ += ":" + std::to_string((*strides)[i]);
      }
      out_ += ']';
      AttrDict(op, {"start_indices", "limit_indices", "strides"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kDynamicSlice:
    case OpCode::kConcatenate:
    case OpCode::kGetDimensionSize: {
      if (c == OpCode::kDynamicSlice ? !has_i64_array("slice_sizes") : !op.GetInt("dimension")) {
        return false;
      }
      out_ += ' ';
      for (const Value* v : op.operands()) {
        Ref(v);
        out_ += ", ";
      }
      if (c == OpCode::kDynamicSlice) {
        out_ += "sizes = ";
        IntList(*op.GetI64Array("slice_sizes"));
        AttrDict(op, {"slice_sizes"});
      } else {
        out_ += "dim = " + std::to_string(*op.GetInt("dimension"));
        AttrDict(op, {"dimension"});
      }
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kPad: {
      auto low = op.GetI64Array("edge_padding_low");
      auto high = op.GetI64Array("edge_padding_high");
      auto interior = op.GetI64Array("interior_padding");
      if (n != 2 || !low || !high || !interior) return false;
      out_ += ' ';
      Refs(op.operands());
      out_ += ", low = ";
      IntList(*low);
      out_ += ", high = ";
      IntList(*high);
      out_ += ", interior = ";
      IntList(*interior);
      AttrDict(op, {"edge_padding_low", "edge_padding_high", "interior_padding"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kDotGeneral:
    case OpCode::kDot:
      return PrintDot(op);
    case OpCode::kConvolution:
      return PrintConvolution(op);
    case OpCode::kReduce:
      return PrintReduce(op, indent);
    case OpCode::kWhile:
      return PrintWhile(op, indent);
    case OpCode::kFft:
    case OpCode::kRngBitGenerator:
    case OpCode::kRng: {
      const char* attr = c == OpCode::kFft ? "fft_type"
                         : c == OpCode::kRng ? "rng_distribution"
                                             : "rng_algorithm";
      const char* enum_name = c == OpCode::kFft ? "fft_type"
                              : c == OpCode::kRng ? "rng_distribution"
                                                  : "rng_algorithm";
      const EnumAttr* e = op.GetEnum(attr);
      if (!e || e->enum_name != enum_name) return false;
      if (c == OpCode::kFft && (n != 1 || !has_i64_array("fft_length"))) return false;
      if (c == OpCode::kRngBitGenerator && n != 1) return false;
      if (c == OpCode::kRng && n == 0) return false;
      out_ += ' ';
      if (c == OpCode::kRng) {
        for (const Value* v : op.operands()) {
          Ref(v);
          out_ += ", ";
        }
        out_ += "distribution = ";
      } else {
        Ref(op.operand(0));
        out_ += c == OpCode::kFft ? ", type =  " : ", algorithm =  ";
      }
      out_ += e->value;
      if (c == OpCode::kFft) {
        out_ += ", length = ";
        IntList(*op.GetI64Array("fft_length"));
      }
      AttrDict(op, {attr, "fft_length"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kReturn:
    case OpCode::kFuncReturn: {
      if (op.num_results()) return false;
      if (n) out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      if (n) {
        out_ += " : ";
        Types(op.operand_types());
      }
      return true;
    }
    case OpCode::kFuncCall:
    case OpCode::kCustomCall: {
      const Attribute* target = op.attr(c == OpCode::kFuncCall ? "callee" : "call_target_name");
      if (!target) return false;
      out_ += ' ';
      if (c == OpCode::kFuncCall) {
        if (!target->is<SymbolRefAttr>()) return false;
        Symbol(target->as<SymbolRefAttr>().name);
      } else {
        if (!target->is<StringAttr>()) return false;
        AppendSymbol(target->as<StringAttr>().value, out_);
      }
      out_ += '(';
      Refs(op.operands());
      out_ += ')';
      AttrDict(op, {c == OpCode::kFuncCall ? "callee" : "call_target_name"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kTuple: {
      if (op.num_results() != 1 || !op.result(0)->type().is_tuple() ||
          op.result(0)->type().elements() != op.operand_types()) {
        return false;
      }
      if (n) out_ += ' ';
      Refs(op.operands());
      AttrDict(op, {});
      out_ += " : ";
      op.result(0)->type().AppendTo(out_);
      return true;
    }
    case OpCode::kGetTupleElement: {
      auto index = op.GetInt("index");
      if (n != 1 || !index) return false;
      out_ += ' ';
      Ref(op.operand(0));
      out_ += '[' + std::to_string(*index) + ']';
      AttrDict(op, {"index"});
      out_ += " : ";
      FunctionalType(op);
      return true;
    }
    case OpCode::kCreateToken:
    case OpCode::kReplicaId:
    case OpCode::kPartitionId: {
      if (n || op.num_results() != 1) return false;
      AttrDict(op, {});
      out_ += " : ";
      op.result(0)->type().AppendTo(out_);
      return true;
    }
    case OpCode::kChloTopK: {
      auto k = op.GetInt("k");
      if (n != 1 || !k || op.num_results() != 2) return false;
      out_ += '(';
      Ref(op.operand(0));
      out_ += ", k = " + std::to_string(*k) + ')';
      AttrDict(op, {"k"});
      out_ += " : ";
      op.operand(0)->type().AppendTo(out_);
      out_ += " -> (";
      Types(op.result_types());
      out_ += ')';
      return true;
    }
    default:
      break;
  }
  if ((c >= OpCode::kChloAcos && c <= OpCode::kChloZeta) || c == OpCode::kChloMulhi ||
      c == OpCode::kChloAsinAcosKernel) {
    const bool binary = c >= OpCode::kChloNextAfter && c != OpCode::kChloAsinAcosKernel;
    if (n != (binary ? 2u : 1u) || op.num_results() != 1) return false;
    out_ += ' ';
    Refs(op.operands());
    AttrDict(op, {});
    out_ += " : ";
    Types(op.operand_types());
    out_ += " -> ";
    op.result(0)->type().AppendTo(out_);
    return true;
  }
  if (c >= OpCode::kCheckExpectEq && c <= OpCode::kCheckExpectSerializedEq) {
    return PrintCheck(op);
  }
  return false;
}

void Printer::PrintOp(const Op& op, int indent) {
  Indent(indent);
  const size_t line_start = out_.size() - static_cast<size_t>(indent);
  const std::string prefix = namer_.NameResults(op);
  out_ += prefix;
  const size_t op_start = out_.size();
  if (!options_.generic) {
    if (op.code() == OpCode::kFuncReturn) {
      out_ += "return";
    } else if (op.code() == OpCode::kFuncCall) {
      out_ += "call";
    } else {
      out_ += op.name();
    }
    if (PrettyOp(op, indent)) {
      out_ += '\n';
      return;
    }
    out_.resize(op_start);
  }
  (void)line_start;
  GenericOp(op, indent);
  out_ += '\n';
}

void AppendArgAttrs(const AttributeList& attrs, std::string& out) {
  if (attrs.empty()) return;
  out += ' ';
  attrs.AppendDictTo(out);
}

void Printer::PrintFunction(const Function& fn) {
  out_ += "  func.func ";
  out_ += fn.visibility();
  out_ += ' ';
  Symbol(fn.name());
  out_ += '(';
  const Block* entry = fn.entry();
  if (entry) {
    namer_.Reserve(*entry);
    namer_.NameBlockArgs(*entry);
  }
  for (size_t i = 0; i < fn.arg_types().size(); ++i) {
    if (i) out_ += ", ";
    if (entry && i < entry->num_args()) {
      Ref(entry->arg(i));
      out_ += ": ";
    }
    fn.arg_types()[i].AppendTo(out_);
    if (i < fn.arg_attrs().size()) AppendArgAttrs(fn.arg_attrs()[i], out_);
  }
  out_ += ')';
  const auto& results = fn.result_types();
  bool any_result_attrs = false;
  for (const auto& a : fn.result_attrs()) any_result_attrs |= !a.empty();
  if (!results.empty()) {
    out_ += " -> ";
    const bool parens = results.size() > 1 || any_result_attrs || results[0].is_tuple();
    if (parens) out_ += '(';
    for (size_t i = 0; i < results.size(); ++i) {
      if (i) out_ += ", ";
      results[i].AppendTo(out_);
      if (i < fn.result_attrs().size()) AppendArgAttrs(fn.result_attrs()[i], out_);
    }
    if (parens) out_ += ')';
  }
  if (!fn.attrs().empty()) {
    out_ += " attributes ";
    fn.attrs().AppendDictTo(out_);
  }
  if (entry) {
    out_ += " {\n";
    for (const auto& op : entry->ops()) PrintOp(*op, 4);
    out_ += "  }";
  }
  out_ += '\n';
}

void Printer::PrintModule(const Module& module) {
  out_ += "module";
  SymbolRenames renames;
  if (options_.canonical) {
    bool prefix_taken = false;
    for (const auto& fn : module.functions()) {
      prefix_taken |= fn->name().starts_with(kCanonicalFunctionPrefix);
    }
    int n = 0;
    for (const auto& fn : module.functions()) {
      if (prefix_taken || fn->visibility() != "private") continue;
      renames[fn->name()] = std::string(kCanonicalFunctionPrefix) + std::to_string(n++);
    }
  }
  if (!options_.canonical && !module.name().empty()) {
    out_ += ' ';
    AppendSymbol(module.name(), out_);
  }
  if (!module.attrs().empty()) {
    out_ += " attributes ";
    module.attrs().AppendDictTo(out_);
  }
  out_ += " {\n";
  for (const auto& fn : module.functions()) {
    Printer fn_printer(options_, out_, &renames);  // names are per function
    fn_printer.PrintFunction(*fn);
  }
  out_ += "}\n";
  PrintResources(module.resources());
}

void Printer::PrintResources(const std::vector<ResourceEntry>& entries) {
  if (entries.empty()) return;
  // Group entries by section, then group, keeping first-seen order.
  out_ += "\n{-#\n";
  std::vector<std::string> sections;
  for (const auto& e : entries) {
    if (std::find(sections.begin(), sections.end(), e.section) == sections.end()) {
      sections.push_back(e.section);
    }
  }
  auto key = [](const std::string& k, std::string& out) {
    bool bare = !k.empty() && !(k[0] >= '0' && k[0] <= '9');
    for (char c : k) {
      bare &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '$';
    }
    if (bare) {
      out += k;
    } else {
      AppendQuotedString(k, out);
    }
  };
  for (size_t s = 0; s < sections.size(); ++s) {
    out_ += "  ";
    key(sections[s], out_);
    out_ += ": {\n";
    std::vector<std::string> groups;
    for (const auto& e : entries) {
      if (e.section == sections[s] &&
          std::find(groups.begin(), groups.end(), e.group) == groups.end()) {
        groups.push_back(e.group);
      }
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      out_ += "    ";
      key(groups[g], out_);
      out_ += ": {\n";
      bool first = true;
      for (const auto& e : entries) {
        if (e.section != sections[s] || e.group != groups[g]) continue;
        if (!first) out_ += ",\n";
        first = false;
        out_ += "      ";
        key(e.key, out_);
        out_ += ": ";
        out_ += e.value;
      }
      out_ += g + 1 < groups.size() ? "\n    },\n" : "\n    }\n";
    }
    out_ += s + 1 < sections.size() ? "  },\n" : "  }\n";
  }
  out_ += "#-}\n";
}

}  // namespace

std::string PrintModule(const Module& module, const PrintOptions& options) {
  std::string out;
  Printer printer(options, out);
  printer.PrintModule(module);
  return out;
}

std::string PrintOp(const Op& op, const PrintOptions& options) {
  std::string out;
  Printer printer(options, out);
  for (size_t r = 0; r < op.num_regions(); ++r) {
    for (size_t b = 0; b < op.region(r).num_blocks(); ++b) printer.namer().Reserve(op.region(r).block(b));
  }
  printer.PrintOp(op, 0);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace jitd::ir
