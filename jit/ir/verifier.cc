// The verifier: structure first (operands defined before use, terminators,
// region and operand counts, type limits), then each op's constraints as the
// StableHLO spec numbers them (C1, C2, ...), plus MLIR's rules for the few
// ops the spec no longer lists (dot, broadcast, create_token) and the CHLO,
// func and check ops of the corpus.
//
// Nothing here trusts the IR: attribute kinds, list sizes and values are
// checked before they index anything, types are checked against the limits
// of type.h before any rule reads them, and sums or products that involve
// unchecked attribute values are computed in 128 bits, where no int64 input
// can overflow them. The success path does not allocate per op (a callee
// lookup by name aside); messages are built only on failure.
#include "jit/ir/verifier.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace jitd::ir {
namespace {

using I64s = std::span<const int64_t>;
using Values = std::span<Value* const>;
// Wide enough for any sum or product of two int64 attribute values.
using Wide = __int128;

// ---------------------------------------------------------------------------
// Messages. Only the failure path builds strings.

Status Fail(const Op& op, std::string rule) {
  return InvalidArgument(op.loc().ToString() + ": '" + std::string(op.name()) + "' op " +
                         std::move(rule));
}

std::string Str(const Type& t) { return t.ToString(); }
std::string Str(DType t) {
  if (static_cast<int>(t) >= kNumDTypes) return "<invalid element type>";
  return std::string(DTypeName(t));
}
std::string Str(int64_t v) { return std::to_string(v); }
std::string Str(Wide v) {
  if (v >= INT64_MIN && v <= INT64_MAX) return std::to_string(static_cast<int64_t>(v));
  return v < 0 ? "<below -2^63>" : "<above 2^63>";
}
// "[1, 2, 3]", shortened past 64 values.
std::string Str(I64s v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    if (i == 64) {
      s += "... (" + std::to_string(v.size()) + " values)";
      break;
    }
    s += std::to_string(v[i]);
  }
  return s + "]";
}
std::string Quote(std::string_view s) { return "'" + std::string(s) + "'"; }

constexpr size_t kNumOpCodes = 0
#define X(e, name) +1
#include "jit/ir/ops.def"
#undef X
    ;

// The op's name, also for an op code outside ops.def (hand-built IR).
std::string_view SafeName(const Op& op) {
  return static_cast<size_t>(op.code()) < kNumOpCodes ? op.name() : "<invalid op>";
}
// An attribute for a message, shortened. Kinds that hold element data or
// nested attributes print as their kind only, and nothing whose element type
// is out of range is printed: a message must not crash on malformed IR.
std::string Str(const Attribute& a) {
  if (const auto* i = a.get_if<IntegerAttr>()) return std::to_string(i->value);
  if (const auto* f = a.get_if<FloatAttr>()) return std::to_string(f->value);
  const auto* d = a.get_if<DenseArrayAttr>();
  const bool printable = a.is<UnitAttr>() || a.is<bool>() || a.is<StringAttr>() ||
                         a.is<SymbolRefAttr>() || a.is<EnumAttr>() || a.is<StructAttr>() ||
                         a.is<ConvDimensionNumbers>() || a.is<OpaqueAttr>() ||
                         (d && static_cast<int>(d->dtype) < kNumDTypes);
  if (!printable) return "<" + std::string(a.KindName()) + ">";
  std::string s = a.ToString();
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return s;
}

// ---------------------------------------------------------------------------
// Types.

// Checks `t` against the limits of type.h (hand-built IR can skip them);
// returns what is wrong, or an empty string.
// `allow_dynamic`: dimensions may be `?` (kDynamic) — for values and
// signatures, never for the data of constants and attributes.
std::string TypeProblem(const Type& t, int depth = 0, bool allow_dynamic = false) {
  switch (t.kind()) {
    case Type::Kind::kToken: return {};
    case Type::Kind::kFuture:
      if (t.elements().empty()) return "!stablehlo.future without element types";
      for (const Type& e : t.elements()) {
        if (!e.is_tensor()) return "!stablehlo.future of a non-tensor type " + e.ToString();
        std::string p = TypeProblem(e, depth + 1, allow_dynamic);
        if (!p.empty()) return p;
      }
      return {};
    case Type::Kind::kTuple:
      if (depth >= 32) return "tuple nesting deeper than 32";
      for (const Type& e : t.elements()) {
        std::string p = TypeProblem(e, depth + 1, allow_dynamic);
        if (!p.empty()) return p;
      }
      return {};
    case Type::Kind::kTensor: break;
    default: return "unknown type kind";
  }
  if (static_cast<int>(t.dtype()) >= kNumDTypes) return "invalid element type";
  if (t.rank() > kMaxRank) {
    return "rank " + std::to_string(t.rank()) + " above the limit of " + std::to_string(kMaxRank);
  }
  int64_t nonzero = 1;
  for (int64_t d : t.dims()) {
    if (d == Type::kDynamic) {
      if (!allow_dynamic) return "dynamic dimension '?' where a static shape is required";
      continue;
    }
    if (d < 0 || d > kMaxElements) return "dimension size " + std::to_string(d) + " out of range";
    if (d == 0) continue;
    if (nonzero > kMaxElements / d) return "more than 2^40 elements";
    nonzero *= d;
  }
  return {};
}

bool IsTensor(const Value* v) { return v->type().is_tensor(); }
const Type& TypeOf(const Value* v) { return v->type(); }
bool SameShape(const Type& a, const Type& b) { return a.dims() == b.dims(); }
bool SameDims(const Type& t, I64s dims) {
  return std::equal(t.dims().begin(), t.dims().end(), dims.begin(), dims.end());
}
bool IsScalarOf(const Type& t, DType dtype) {
  return t.is_tensor() && t.rank() == 0 && t.dtype() == dtype;
}

// Element type categories, as the spec's type tables name them.
enum : uint8_t {
  kBool = 1,
  kSInt = 2,
  kUInt = 4,
  kFloat = 8,
  kComplex = 16,
  kInt = kSInt | kUInt,
  kAnyElement = kBool | kInt | kFloat | kComplex,
};

uint8_t CategoryOf(DType t) {
  if (IsPred(t)) return kBool;
  if (IsSignedInt(t)) return kSInt;
  if (IsUnsignedInt(t)) return kUInt;
  if (IsFloat(t)) return kFloat;
  if (IsComplex(t)) return kComplex;
  return 0;
}

// "boolean or integer", "signed integer, floating-point or complex", ...
std::string CategoryText(uint8_t cats) {
  std::vector<std::string_view> parts;
  if (cats & kBool) parts.push_back("boolean");
  if ((cats & kInt) == kInt) {
    parts.push_back("integer");
  } else if (cats & kSInt) {
    parts.push_back("signed integer");
  } else if (cats & kUInt) {
    parts.push_back("unsigned integer");
  }
  if (cats & kFloat) parts.push_back("floating-point");
  if (cats & kComplex) parts.push_back("complex");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += i + 1 == parts.size() ? " or " : ", ";
    s += parts[i];
  }
  return s;
}

// The spec's is_promotable (reduction bodies may accumulate in a wider type
// of the same kind). Booleans promote only to booleans.
bool IsPromotable(DType from, DType to) {
  if (IsPred(from) || IsPred(to)) return from == to;
  if ((IsInteger(from) && IsInteger(to)) || (IsFloat(from) && IsFloat(to)) ||
      (IsComplex(from) && IsComplex(to))) {
    return BitWidth(from) <= BitWidth(to);
  }
  return false;
}

// ---------------------------------------------------------------------------
// Attribute readers. Each fails, naming the attribute and what it found, when
// the attribute has the wrong kind; required ones also when it is missing.
// Optional ones leave `out` (the caller's default) alone when missing.

enum class Need : bool { kOptional, kRequired };

Status MissingAttr(const Op& op, std::string_view name) {
  return Fail(op, "requires attribute " + Quote(name));
}

Status WrongAttr(const Op& op, std::string_view name, std::string_view expected,
                 const Attribute& a) {
  return Fail(op, "requires attribute " + Quote(name) + " to be " + std::string(expected) +
                      ", got " + std::string(a.KindName()) + " " + Str(a));
}

Status ReadInt(const Op& op, std::string_view name, Need need, int64_t& out) {
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  const auto* i = a->get_if<IntegerAttr>();
  if (!i || IsPred(i->dtype)) return WrongAttr(op, name, "an integer", *a);
  out = i->value;
  return Status::Ok();
}

Status ReadBool(const Op& op, std::string_view name, Need need, bool& out) {
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  if (const bool* b = a->get_if<bool>()) {
    out = *b;
    return Status::Ok();
  }
  if (const auto* i = a->get_if<IntegerAttr>(); i && IsPred(i->dtype)) {
    out = i->value != 0;
    return Status::Ok();
  }
  return WrongAttr(op, name, "a boolean", *a);
}

Status ReadFloat(const Op& op, std::string_view name, Need need) {
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  if (!a->is<FloatAttr>()) return WrongAttr(op, name, "a float", *a);
  return Status::Ok();
}

Status ReadString(const Op& op, std::string_view name, Need need) {
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  if (!a->is<StringAttr>()) return WrongAttr(op, name, "a string", *a);
  return Status::Ok();
}

// An `array<i64: ...>` list; `present` says whether the op has it.
Status ReadI64s(const Op& op, std::string_view name, Need need, I64s& out,
                bool* present = nullptr) {
  if (present) *present = false;
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  const auto* d = a->get_if<DenseArrayAttr>();
  if (!d || d->dtype != DType::kS64) return WrongAttr(op, name, "an array<i64>", *a);
  out = I64s(d->ints);
  if (present) *present = true;
  return Status::Ok();
}

// An enum attribute whose value is one of `allowed`.
Status ReadEnum(const Op& op, std::string_view name, Need need,
                std::initializer_list<std::string_view> allowed, std::string_view& out) {
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  const auto* e = a->get_if<EnumAttr>();
  if (!e) return WrongAttr(op, name, "an enum", *a);
  for (std::string_view v : allowed) {
    if (e->value == v) {
      out = v;
      return Status::Ok();
    }
  }
  std::string list;
  for (std::string_view v : allowed) list += (list.empty() ? "" : ", ") + std::string(v);
  return Fail(op, "requires attribute " + Quote(name) + " to be one of " + list + ", got " +
                      Quote(e->value));
}

// precision_config: absent, or exactly two of DEFAULT/HIGH/HIGHEST.
Status CheckPrecisionConfig(const Op& op) {
  const Attribute* a = op.attr("precision_config");
  if (!a) return Status::Ok();
  const auto* arr = a->get_if<ArrayAttr>();
  if (!arr) return WrongAttr(op, "precision_config", "an array of precision enums", *a);
  if (!arr->elements.empty() && arr->elements.size() != 2) {
    return Fail(op, "requires precision_config to hold 2 values (one per operand), got " +
                        std::to_string(arr->elements.size()));
  }
  for (const Attribute& p : arr->elements) {
    const auto* e = p.get_if<EnumAttr>();
    if (!e || (e->value != "DEFAULT" && e->value != "HIGH" && e->value != "HIGHEST")) {
      return Fail(op,
                  "requires precision_config values to be DEFAULT, HIGH or HIGHEST, got " + Str(p));
    }
  }
  return Status::Ok();
}

// A dimension-numbers struct: each named field's values (a missing field is
// empty). Fails on an unknown or repeated field.
template <size_t N>
Status ReadStruct(const Op& op, std::string_view attr, std::string_view struct_name,
                  const std::array<std::string_view, N>& fields, std::array<I64s, N>& out) {
  const Attribute* a = op.attr(attr);
  if (!a) return MissingAttr(op, attr);
  const auto* s = a->get_if<StructAttr>();
  if (!s || s->name != struct_name) {
    return WrongAttr(op, attr, "#" + std::string(struct_name) + "<...>", *a);
  }
  std::array<bool, N> seen{};
  for (const StructField& f : s->fields) {
    size_t k = 0;
    while (k < N && fields[k] != f.name) ++k;
    if (k == N) return Fail(op, "has unknown field " + Quote(f.name) + " in " + Quote(attr));
    if (seen[k]) return Fail(op, "has field " + Quote(f.name) + " twice in " + Quote(attr));
    seen[k] = true;
    out[k] = I64s(f.values);
  }
  return Status::Ok();
}

// A scalar struct field (index_vector_dim): absent means 0.
Status ScalarField(const Op& op, std::string_view name, I64s values, int64_t& out) {
  if (values.size() > 1) {
    return Fail(op, "requires " + std::string(name) + " to be one integer, got " + Str(values));
  }
  out = values.empty() ? 0 : values[0];
  return Status::Ok();
}

// Reads `padding` (dense<...> : tensor<rowsx2xi64>) into lo/hi; absent = 0.
Status ReadPadding(const Op& op, int64_t rows, int64_t* lo, int64_t* hi) {
  for (int64_t i = 0; i < rows; ++i) lo[i] = hi[i] = 0;
  const Attribute* a = op.attr("padding");
  if (!a) return Status::Ok();
  const auto* d = a->get_if<DenseElementsAttr>();
  if (!d) return WrongAttr(op, "padding", "dense elements", *a);
  const Type& t = d->type;
  if (std::string p = TypeProblem(t); !p.empty()) {
    return Fail(op, "has padding of an invalid type: " + p);
  }
  if (!t.is_tensor() || t.dtype() != DType::kS64 || t.rank() != 2 || t.dim(0) != rows ||
      t.dim(1) != 2) {
    return Fail(op, "requires padding of type tensor<" + std::to_string(rows) +
                        "x2xi64> (one [low, high] pair per dimension), got " + Str(t));
  }
  const size_t bytes = d->splat ? 8 : static_cast<size_t>(rows) * 16;
  if (!d->data || d->data->size() != bytes) {
    return Fail(op, "has padding data of the wrong size for " + Str(t));
  }
  const uint8_t* p = d->data->data();
  for (int64_t i = 0; i < rows; ++i) {
    std::memcpy(&lo[i], p + (d->splat ? 0 : 16 * i), 8);
    std::memcpy(&hi[i], p + (d->splat ? 0 : 16 * i + 8), 8);
  }
  return Status::Ok();
}

// Checks a dense elements / resource attribute named `name` against `type`.
Status CheckDenseValue(const Op& op, std::string_view name, const Type& type, bool allow_resource) {
  const Attribute* a = op.attr(name);
  if (!a) return MissingAttr(op, name);
  if (const auto* r = a->get_if<DenseResourceAttr>(); r && allow_resource) {
    if (std::string p = TypeProblem(r->type); !p.empty()) {
      return Fail(op, "has " + Quote(name) + " of an invalid type: " + p);
    }
    if (r->type != type) {
      return Fail(op, "requires the type of " + Quote(name) + " to equal " + Str(type) + ", got " +
                          Str(r->type));
    }
    return Status::Ok();
  }
  const auto* d = a->get_if<DenseElementsAttr>();
  if (!d) return WrongAttr(op, name, "dense elements", *a);
  if (std::string p = TypeProblem(d->type); !p.empty()) {
    return Fail(op, "has " + Quote(name) + " of an invalid type: " + p);
  }
  if (d->type != type) {
    return Fail(op, "requires the type of " + Quote(name) + " to equal " + Str(type) + ", got " +
                        Str(d->type));
  }
  // `type` was checked against the limits, so byte_size cannot overflow.
  const int64_t bytes = d->splat ? StorageBytes(type.dtype()) : type.byte_size();
  if (!d->data || static_cast<int64_t>(d->data->size()) != bytes) {
    return Fail(op, "has " + Quote(name) + " data of " +
                        std::to_string(d->data ? d->data->size() : 0) + " bytes, expected " +
                        std::to_string(bytes) + " for " + Str(type));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// List checks on dimension numbers. Values are range-checked before anything
// uses them; ranks are at most kMaxRank (64), so a bit mask tracks sets.

Status CheckInRange(const Op& op, std::string_view what, I64s values, int64_t bound,
                    std::string_view bound_text) {
  for (int64_t v : values) {
    if (v < 0 || v >= bound) {
      return Fail(op, "requires 0 <= " + std::string(what) + " < " + std::string(bound_text) +
                          " = " + std::to_string(bound) + ", got " + Str(values));
    }
  }
  return Status::Ok();
}

// Bit mask of values already known to lie in [0, 64).
uint64_t MaskOf(I64s values) {
  uint64_t m = 0;
  for (int64_t v : values) m |= uint64_t{1} << v;
  return m;
}

// Uniqueness of a ++ b, whose values are known to lie in [0, 64).
bool AllUnique(I64s a, I64s b = {}) {
  uint64_t m = 0;
  for (I64s list : {a, b}) {
    for (int64_t v : list) {
      const uint64_t bit = uint64_t{1} << v;
      if (m & bit) return false;
      m |= bit;
    }
  }
  return true;
}

Status CheckUnique(const Op& op, std::string_view what, I64s a, I64s b = {},
                   std::string_view b_what = {}) {
  if (AllUnique(a, b)) return Status::Ok();
  if (b_what.empty())
    return Fail(op, "requires " + std::string(what) + " to be unique, got " + Str(a));
  return Fail(op, "requires " + std::string(what) + " and " + std::string(b_what) +
                      " to be unique together, got " + Str(a) + " and " + Str(b));
}

Status CheckSorted(const Op& op, std::string_view what, I64s values, bool strict) {
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i] < values[i - 1] || (strict && values[i] == values[i - 1])) {
      return Fail(op, "requires " + std::string(what) + " to be " +
                          (strict ? "unique and sorted" : "sorted") + ", got " + Str(values));
    }
  }
  return Status::Ok();
}

Status CheckAllPositive(const Op& op, std::string_view what, I64s values) {
  for (int64_t v : values) {
    if (v <= 0) return Fail(op, "requires 0 < " + std::string(what) + ", got " + Str(values));
  }
  return Status::Ok();
}

Status CheckSize(const Op& op, std::string_view what, I64s values, int64_t size,
                 std::string_view size_text) {
  if (static_cast<int64_t>(values.size()) != size) {
    return Fail(op, "requires size(" + std::string(what) + ") = " + std::string(size_text) + " = " +
                        std::to_string(size) + ", got " + Str(values));
  }
  return Status::Ok();
}

// The spec's num_windows along one dimension (reduce_window, convolution,
// select_and_scatter); `stride` and the dilations are positive.
Wide NumWindows(int64_t input, int64_t base_dilation, int64_t lo, int64_t hi, int64_t window,
                int64_t window_dilation, int64_t stride) {
  const Wide dilated_input = input == 0 ? 0 : (Wide(input) - 1) * base_dilation + 1;
  const Wide padded = Wide(lo) + dilated_input + hi;
  const Wide dilated_window = window == 0 ? 0 : (Wide(window) - 1) * window_dilation + 1;
  if (padded <= 0 || dilated_window > padded) return 0;
  return (padded - dilated_window) / stride + 1;
}

// ---------------------------------------------------------------------------
// Regions. The walk has already checked that each region has one block that
// ends in stablehlo.return, whose operands are non-null.

const Block& Body(const Op& op, size_t region) { return op.region(region).block(0); }
Values Returned(const Block& b) { return b.terminator()->operands(); }

std::string RegionName(std::string_view name) { return Quote(name) + " region"; }

// Checks that region `r` (named `name`) takes `args` (compared by type).
Status CheckRegionArgs(const Op& op, size_t r, std::string_view name, Values args) {
  const Block& b = Body(op, r);
  if (b.num_args() != args.size()) {
    return Fail(op, "requires the " + RegionName(name) + " to take " + std::to_string(args.size()) +
                        " arguments, got " + std::to_string(b.num_args()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (b.arg(i)->type() != TypeOf(args[i])) {
      return Fail(op, "requires argument #" + std::to_string(i) + " of the " + RegionName(name) +
                          " to be " + Str(TypeOf(args[i])) + ", got " + Str(b.arg(i)->type()));
    }
  }
  return Status::Ok();
}

// Checks that region `r` returns values of the types of `expected`, which
// are the op's results (or operands, for while's body).
template <typename TypeAt>
Status CheckRegionReturns(const Op& op, size_t r, std::string_view name, size_t count,
                          TypeAt type_at) {
  Values ret = Returned(Body(op, r));
  if (ret.size() != count) {
    return Fail(op, "requires the " + RegionName(name) + " to return " + std::to_string(count) +
                        " values, got " + std::to_string(ret.size()));
  }
  for (size_t i = 0; i < count; ++i) {
    const Type& want = type_at(i);
    if (TypeOf(ret[i]) != want) {
      return Fail(op, "requires the " + RegionName(name) + " to return " + Str(want) +
                          " as value #" + std::to_string(i) + ", got " + Str(TypeOf(ret[i])));
    }
  }
  return Status::Ok();
}

// A reduction body (reduce, reduce_window, scatter, select_and_scatter's
// scatter): (tensor<E0>, ..., tensor<EN-1>, tensor<E0>, ..., tensor<EN-1>)
// -> (tensor<E0>, ..., tensor<EN-1>) where each input element type is
// promotable to Ei, and result i has element type Ei.
Status CheckReducerBody(const Op& op, size_t r, std::string_view name, Values inputs) {
  const size_t n = inputs.size();
  const Block& b = Body(op, r);
  if (b.num_args() != 2 * n) {
    return Fail(op, "requires the " + RegionName(name) + " to take " + std::to_string(2 * n) +
                        " arguments, got " + std::to_string(b.num_args()));
  }
  Values ret = Returned(b);
  if (ret.size() != n) {
    return Fail(op, "requires the " + RegionName(name) + " to return " + std::to_string(n) +
                        " values, got " + std::to_string(ret.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    const Type& acc = b.arg(i)->type();
    const DType in = TypeOf(inputs[i]).dtype();
    if (!acc.is_tensor() || acc.rank() != 0 || !IsPromotable(in, acc.dtype())) {
      return Fail(op, "requires argument #" + std::to_string(i) + " of the " + RegionName(name) +
                          " to be a 0-d tensor of an element type " + Str(in) +
                          " promotes to, got " + Str(acc));
    }
    if (b.arg(i + n)->type() != acc) {
      return Fail(op, "requires arguments #" + std::to_string(i) + " and #" +
                          std::to_string(i + n) + " of the " + RegionName(name) +
                          " to have the same type, got " + Str(acc) + " and " +
                          Str(b.arg(i + n)->type()));
    }
    if (TypeOf(ret[i]) != acc) {
      return Fail(op, "requires the " + RegionName(name) + " to return " + Str(acc) +
                          " as value #" + std::to_string(i) + ", got " + Str(TypeOf(ret[i])));
    }
    if (op.result(i)->type().dtype() != acc.dtype()) {
      return Fail(op, "requires result #" + std::to_string(i) + " to have the element type " +
                          Str(acc.dtype()) + " of the " + RegionName(name) + ", got " +
                          Str(op.result(i)->type()));
    }
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Op shapes: operand, result and region counts (-1 = any number; the op's
// rules check it), and whether operands and results must be tensors.

struct Arity {
  int8_t operands;
  int8_t results;
  int8_t regions;
  bool tensors_only = true;
};

constexpr int8_t kAny = -1;

Arity ArityOf(OpCode c) {
  if (const std::optional<OpCode> applied = ElementwiseOfChloBroadcast(c)) {
    return {static_cast<int8_t>(*applied == OpCode::kSelect ? 3 : 2), 1, 0};
  }
  switch (c) {
    case OpCode::kFuncCall: return {kAny, kAny, 0, false};
    case OpCode::kFuncReturn:
    case OpCode::kReturn: return {kAny, 0, 0, false};
    case OpCode::kAdd:
    case OpCode::kAnd:
    case OpCode::kAtan2:
    case OpCode::kComplex:
    case OpCode::kDivide:
    case OpCode::kMaximum:
    case OpCode::kMinimum:
    case OpCode::kMultiply:
    case OpCode::kOr:
    case OpCode::kPower:
    case OpCode::kRemainder:
    case OpCode::kShiftLeft:
    case OpCode::kShiftRightArithmetic:
    case OpCode::kShiftRightLogical:
    case OpCode::kSubtract:
    case OpCode::kXor:
    case OpCode::kCompare:
    case OpCode::kChloNextAfter:
    case OpCode::kChloPolygamma:
    case OpCode::kChloZeta:
    case OpCode::kPad:
    case OpCode::kGather:
    case OpCode::kDotGeneral:
    case OpCode::kDot:
    case OpCode::kConvolution:
    case OpCode::kTriangularSolve: return {2, 1, 0};
    case OpCode::kSelect:
    case OpCode::kClamp:
    case OpCode::kRng: return {3, 1, 0};
    case OpCode::kConstant:
    case OpCode::kIota:
    case OpCode::kReplicaId:
    case OpCode::kPartitionId: return {0, 1, 0};
    case OpCode::kDynamicSlice:
    case OpCode::kDynamicUpdateSlice:
    case OpCode::kConcatenate: return {kAny, 1, 0};
    case OpCode::kScatter:
    case OpCode::kReduce:
    case OpCode::kReduceWindow:
    case OpCode::kSort: return {kAny, kAny, 1};
    case OpCode::kSelectAndScatter: return {3, 1, 2};
    case OpCode::kMap: return {kAny, 1, 1};
    case OpCode::kRngBitGenerator: return {1, 2, 0};
    case OpCode::kBatchNormInference: return {5, 1, 0};
    case OpCode::kBatchNormTraining: return {3, 3, 0};
    case OpCode::kBatchNormGrad: return {5, 3, 0};
    case OpCode::kWhile: return {kAny, kAny, 2, false};
    case OpCode::kIf: return {1, kAny, 2, false};
    case OpCode::kCase: return {1, kAny, kAny, false};
    case OpCode::kTuple: return {kAny, 1, 0, false};
    case OpCode::kGetTupleElement: return {1, 1, 0, false};
    case OpCode::kOptimizationBarrier:
    case OpCode::kCustomCall: return {kAny, kAny, 0, false};
    case OpCode::kAfterAll:
    case OpCode::kOutfeed: return {kAny, 1, 0, false};
    case OpCode::kCreateToken: return {0, 1, 0, false};
    case OpCode::kInfeed: return {1, kAny, 0, false};
    case OpCode::kChloTopK: return {1, 2, 0};
    case OpCode::kComposite: return {kAny, kAny, 0, false};
    case OpCode::kAllGather:
    case OpCode::kAllToAll:
    case OpCode::kCollectiveBroadcast:
    case OpCode::kCollectivePermute: return {kAny, kAny, 0};
    case OpCode::kAllReduce: return {kAny, kAny, 1};
    case OpCode::kReduceScatter:
    case OpCode::kCollectiveReduce: return {1, 1, kAny};
    case OpCode::kSend:
    case OpCode::kRecv: return {kAny, kAny, 0, false};
    case OpCode::kAsyncStart: return {kAny, 1, 1, false};
    case OpCode::kAsyncDone: return {1, kAny, 0, false};
    case OpCode::kDynamicBroadcastInDim:
    case OpCode::kDynamicReshape:
    case OpCode::kEinsum:
    case OpCode::kTorchIndexSelect:
    case OpCode::kChloMulhi: return {2, 1, 0};
    case OpCode::kDynamicConv:
    case OpCode::kDynamicGather:
    case OpCode::kChloRaggedDot: return {3, 1, 0};
    case OpCode::kDynamicPad: return {5, 1, 0};
    case OpCode::kRealDynamicSlice: return {4, 1, 0};
    case OpCode::kChloConstant: return {0, 1, 0};
    case OpCode::kChloScan: return {kAny, kAny, 1};
    case OpCode::kFusion: return {kAny, kAny, 1};
    case OpCode::kCheckExpectEq:
    case OpCode::kCheckExpectAlmostEq:
    case OpCode::kCheckExpectClose: return {2, 0, 0};
    case OpCode::kCheckExpectEqConst:
    case OpCode::kCheckExpectAlmostEqConst:
    case OpCode::kCheckExpectSerializedEq: return {1, 0, 0};
    case OpCode::kInterpreterRunParallel: return {kAny, kAny, 0, false};
    case OpCode::kInterpreterProbe: return {1, 1, 0};
    case OpCode::kInterpreterPrint: return {1, 0, 0};
    default:
      // Every other op is a one-operand, one-result elementwise or shape op.
      return {1, 1, 0};
  }
}

// ---------------------------------------------------------------------------
// Elementwise ops, grouped by how their result type follows from the operand
// type and which element types they take.

enum class Ew : uint8_t {
  kNone,
  kSame,         // result type = operand type
  kToPred,       // i1 result of the operand's shape
  kToComponent,  // real/imag: the complex component type
  kAbs,          // abs: like kToComponent for complex, kSame otherwise
  kBinary,       // type(lhs) = type(rhs) = type(result)
};

struct EwRule {
  Ew kind;
  uint8_t cats;
};

EwRule ElementwiseRule(OpCode c) {
  switch (c) {
    case OpCode::kAbs: return {Ew::kAbs, kSInt | kFloat | kComplex};
    case OpCode::kCbrt:
    case OpCode::kCosine:
    case OpCode::kExponential:
    case OpCode::kExponentialMinusOne:
    case OpCode::kLog:
    case OpCode::kLogPlusOne:
    case OpCode::kLogistic:
    case OpCode::kRsqrt:
    case OpCode::kSine:
    case OpCode::kSqrt:
    case OpCode::kTan:
    case OpCode::kTanh:
    case OpCode::kChloAcos:
    case OpCode::kChloAcosh:
    case OpCode::kChloAsin:
    case OpCode::kChloAsinh:
    case OpCode::kChloAtan:
    case OpCode::kChloAtanh:
    case OpCode::kChloBesselI1e:
    case OpCode::kChloConj:
    case OpCode::kChloCosh:
    case OpCode::kChloSinh:
    case OpCode::kChloSquare:
    case OpCode::kChloTan: return {Ew::kSame, kFloat | kComplex};
    case OpCode::kCeil:
    case OpCode::kFloor:
    case OpCode::kRoundNearestAfz:
    case OpCode::kRoundNearestEven:
    case OpCode::kChloDigamma:
    case OpCode::kChloErf:
    case OpCode::kChloErfc:
    case OpCode::kChloErfInv:
    case OpCode::kChloLgamma: return {Ew::kSame, kFloat};
    case OpCode::kCountLeadingZeros:
    case OpCode::kPopulationCount: return {Ew::kSame, kInt};
    case OpCode::kNegate: return {Ew::kSame, kInt | kFloat | kComplex};
    case OpCode::kNot: return {Ew::kSame, kBool | kInt};
    case OpCode::kSign: return {Ew::kSame, kSInt | kFloat | kComplex};
    case OpCode::kIsFinite:
    case OpCode::kChloIsInf:
    case OpCode::kChloIsNegInf:
    case OpCode::kChloIsPosInf: return {Ew::kToPred, kFloat};
    case OpCode::kReal:
    case OpCode::kImag: return {Ew::kToComponent, kFloat | kComplex};
    case OpCode::kAdd:
    case OpCode::kMaximum:
    case OpCode::kMinimum:
    case OpCode::kMultiply: return {Ew::kBinary, kAnyElement};
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor: return {Ew::kBinary, kBool | kInt};
    case OpCode::kAtan2: return {Ew::kBinary, kFloat | kComplex};
    case OpCode::kDivide:
    case OpCode::kPower:
    case OpCode::kRemainder:
    case OpCode::kSubtract: return {Ew::kBinary, kInt | kFloat | kComplex};
    case OpCode::kShiftLeft:
    case OpCode::kShiftRightArithmetic:
    case OpCode::kShiftRightLogical: return {Ew::kBinary, kInt};
    case OpCode::kChloNextAfter:
    case OpCode::kChloPolygamma:
    case OpCode::kChloZeta: return {Ew::kBinary, kFloat};
    case OpCode::kChloMulhi: return {Ew::kBinary, kInt};
    case OpCode::kChloAsinAcosKernel: return {Ew::kSame, kFloat | kComplex};
    default: return {Ew::kNone, 0};
  }
}

Status CheckCategory(const Op& op, std::string_view what, const Type& t, uint8_t cats) {
  if (CategoryOf(t.dtype()) & cats) return Status::Ok();
  return Fail(
      op, "requires " + std::string(what) + " of " + CategoryText(cats) + " type, got " + Str(t));
}

// Elementwise ops the spec lets take quantized tensors (each runs as
// dequantize -> op -> quantize): every value quantized, one shape, one
// storage type and one expressed type; the parameters may differ.
Status CheckQuantizedElementwise(const Op& op, EwRule rule) {
  const bool allowed = rule.kind == Ew::kBinary ? (rule.cats & kFloat) != 0
                                                 : rule.kind == Ew::kSame && (rule.cats & kFloat) != 0;
  const Type& result = op.result(0)->type();
  if (!allowed || op.code() == OpCode::kChloNextAfter || op.code() == OpCode::kChloPolygamma ||
      op.code() == OpCode::kChloZeta) {
    return Fail(op, "does not accept quantized element types, got " + Str(result));
  }
  std::vector<const Type*> all;
  for (size_t i = 0; i < op.num_operands(); ++i) all.push_back(&TypeOf(op.operand(i)));
  all.push_back(&result);
  for (const Type* t : all) {
    if (!t->is_quantized()) {
      return Fail(op, "requires all operands and the result to be quantized when one is, got " +
                          Str(*t));
    }
    if (t->dims() != result.dims()) {
      return Fail(op, "requires operand shapes to match the result's, got " + Str(*t) + " and " +
                          Str(result));
    }
    if (t->quant()->storage != result.quant()->storage ||
        t->quant()->expressed != result.quant()->expressed) {
      return Fail(op, "requires the same storage and expressed types for every quantized value, "
                      "got " + Str(*t) + " and " + Str(result));
    }
  }
  return Status::Ok();
}

Status CheckElementwise(const Op& op, EwRule rule) {
  const Type& x = TypeOf(op.operand(0));
  const Type& result = op.result(0)->type();
  bool any_quantized = result.is_quantized();
  for (size_t i = 0; i < op.num_operands(); ++i) any_quantized |= TypeOf(op.operand(i)).is_quantized();
  if (any_quantized) return CheckQuantizedElementwise(op, rule);
  if (rule.kind == Ew::kBinary) {
    JITD_RETURN_IF_ERROR(CheckCategory(op, "operands", x, rule.cats));
    const Type& y = TypeOf(op.operand(1));
    if (x != y) {
      return Fail(op, "requires operand types to match, got " + Str(x) + " and " + Str(y));
    }
    if (x != result) {
      return Fail(op, "requires operand types to match the result type, got " + Str(x) + " and " +
                          Str(result));
    }
    return Status::Ok();
  }
  JITD_RETURN_IF_ERROR(CheckCategory(op, "an operand", x, rule.cats));
  DType want = x.dtype();
  switch (rule.kind) {
    case Ew::kToPred: want = DType::kPred; break;
    case Ew::kToComponent:
    case Ew::kAbs: want = ComplexComponent(x.dtype()); break;
    default: break;
  }
  if (!SameShape(x, result) || result.dtype() != want) {
    return Fail(op, "requires a result of type " + Str(x.WithDType(want)) + " for operand " +
                        Str(x) + ", got " + Str(result));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Per-op rules. Each runs after the structural checks: counts match ArityOf,
// operands and results are tensors where ArityOf says so, types are within
// the limits, and regions are well formed.

Status CheckConvert(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  if (!SameShape(x, r)) {
    return Fail(op, "requires shape(operand) = shape(result), got " + Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckBitcastConvert(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  if (IsComplex(x.dtype()) != IsComplex(r.dtype())) {
    return Fail(op, "requires operand and result to be both complex or both not complex, got " +
                        Str(x) + " and " + Str(r));
  }
  const int64_t bits = BitWidth(x.dtype());
  const int64_t rbits = BitWidth(r.dtype());
  const int64_t rank = x.rank();
  bool ok;
  if (rbits == bits) {
    ok = SameShape(x, r);
  } else if (rbits < bits) {
    ok = r.rank() == rank + 1 && std::equal(x.dims().begin(), x.dims().end(), r.dims().begin()) &&
         r.dim(rank) * rbits == bits;
  } else {
    ok = rank >= 1 && r.rank() == rank - 1 &&
         std::equal(r.dims().begin(), r.dims().end(), x.dims().begin()) &&
         x.dim(rank - 1) * bits == rbits;
  }
  if (!ok) {
    return Fail(op,
                "requires a result shape matching the operand's with the last dimension "
                "split or merged by the ratio of element bit widths, got " +
                    Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckReducePrecision(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckElementwise(op, {Ew::kSame, kFloat}));
  int64_t exponent_bits = 0, mantissa_bits = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "exponent_bits", Need::kRequired, exponent_bits));
  JITD_RETURN_IF_ERROR(ReadInt(op, "mantissa_bits", Need::kRequired, mantissa_bits));
  if (exponent_bits < 1) {
    return Fail(op, "requires 1 <= exponent_bits, got " + Str(exponent_bits));
  }
  if (mantissa_bits < 0) {
    return Fail(op, "requires 0 <= mantissa_bits, got " + Str(mantissa_bits));
  }
  return Status::Ok();
}

Status CheckComplex(const Op& op) {
  const Type& lhs = TypeOf(op.operand(0));
  const Type& rhs = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  if (lhs.dtype() != DType::kF32 && lhs.dtype() != DType::kF64) {
    return Fail(op, "requires operands of type f32 or f64, got " + Str(lhs));
  }
  if (lhs != rhs)
    return Fail(op, "requires type(lhs) = type(rhs), got " + Str(lhs) + " and " + Str(rhs));
  const DType want = *ComplexOf(lhs.dtype());
  if (!SameShape(lhs, r) || r.dtype() != want) {
    return Fail(op, "requires a result of type " + Str(lhs.WithDType(want)) + ", got " + Str(r));
  }
  return Status::Ok();
}

Status CheckCompare(const Op& op) {
  const Type& lhs = TypeOf(op.operand(0));
  const Type& rhs = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  if (lhs.dtype() != rhs.dtype()) {
    return Fail(op,
                "requires operands of the same element type, got " + Str(lhs) + " and " + Str(rhs));
  }
  if (!SameShape(lhs, rhs) || !SameShape(lhs, r)) {
    return Fail(op, "requires shape(lhs) = shape(rhs) = shape(result), got " + Str(lhs) + ", " +
                        Str(rhs) + " and " + Str(r));
  }
  if (r.dtype() != DType::kPred) return Fail(op, "requires a result of type i1, got " + Str(r));
  std::string_view direction, compare_type;
  JITD_RETURN_IF_ERROR(ReadEnum(op, "comparison_direction", Need::kRequired,
                                {"EQ", "NE", "GE", "GT", "LE", "LT"}, direction));
  JITD_RETURN_IF_ERROR(ReadEnum(op, "compare_type", Need::kOptional,
                                {"FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"}, compare_type));
  if (compare_type.empty()) return Status::Ok();
  const DType e = lhs.dtype();
  bool ok;
  if (IsSignedInt(e)) {
    ok = compare_type == "SIGNED";
  } else if (IsUnsignedInt(e) || IsPred(e)) {
    ok = compare_type == "UNSIGNED";
  } else if (IsFloat(e)) {
    ok = compare_type == "FLOAT" || compare_type == "TOTALORDER";
  } else {
    ok = compare_type == "FLOAT";
  }
  if (!ok) {
    return Fail(op, "requires a compare_type that fits element type " + Str(e) +
                        " (SIGNED for signed integers, UNSIGNED for unsigned integers and "
                        "booleans, FLOAT or TOTALORDER for floats, FLOAT for complex), got " +
                        std::string(compare_type));
  }
  return Status::Ok();
}

Status CheckSelect(const Op& op) {
  const Type& pred = TypeOf(op.operand(0));
  const Type& on_true = TypeOf(op.operand(1));
  const Type& on_false = TypeOf(op.operand(2));
  const Type& r = op.result(0)->type();
  if (pred.dtype() != DType::kPred) return Fail(op, "requires pred of type i1, got " + Str(pred));
  if (pred.rank() != 0 && !SameShape(pred, on_true)) {
    return Fail(op, "requires pred to be 0-d or of the shape of on_true, got " + Str(pred) +
                        " and " + Str(on_true));
  }
  if (on_true != on_false || on_true != r) {
    return Fail(op, "requires type(on_true) = type(on_false) = type(result), got " + Str(on_true) +
                        ", " + Str(on_false) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckClamp(const Op& op) {
  const Type& min = TypeOf(op.operand(0));
  const Type& x = TypeOf(op.operand(1));
  const Type& max = TypeOf(op.operand(2));
  const Type& r = op.result(0)->type();
  if (min.rank() != 0 && !SameShape(min, x)) {
    return Fail(
        op, "requires min to be 0-d or of the operand's shape, got " + Str(min) + " and " + Str(x));
  }
  if (max.rank() != 0 && !SameShape(max, x)) {
    return Fail(
        op, "requires max to be 0-d or of the operand's shape, got " + Str(max) + " and " + Str(x));
  }
  if (min.dtype() != x.dtype() || max.dtype() != x.dtype()) {
    return Fail(op, "requires min, operand and max of the same element type, got " + Str(min) +
                        ", " + Str(x) + " and " + Str(max));
  }
  if (x != r) {
    return Fail(op, "requires type(operand) = type(result), got " + Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckConstant(const Op& op) {
  return CheckDenseValue(op, "value", op.result(0)->type(), /*allow_resource=*/true);
}

Status CheckIota(const Op& op) {
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckCategory(op, "a result", r, kInt | kFloat | kComplex));
  int64_t d = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "iota_dimension", Need::kRequired, d));
  if (d < 0 || d >= r.rank()) {
    return Fail(
        op, "requires 0 <= iota_dimension < rank(result) = " + Str(r.rank()) + ", got " + Str(d));
  }
  return Status::Ok();
}

Status CheckSameElementType(const Op& op, const Type& x, const Type& r) {
  if (x.dtype() != r.dtype()) {
    return Fail(op, "requires element_type(operand) = element_type(result), got " + Str(x) +
                        " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckBroadcastInDim(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  I64s dims;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "broadcast_dimensions", Need::kRequired, dims));
  JITD_RETURN_IF_ERROR(CheckSize(op, "broadcast_dimensions", dims, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "broadcast_dimensions", dims, r.rank(), "rank(result)"));
  JITD_RETURN_IF_ERROR(CheckUnique(op, "broadcast_dimensions", dims));
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (x.dim(d) != 1 && x.dim(d) != r.dim(dims[d])) {
      return Fail(op, "requires dim(operand, " + Str(d) + ") to be 1 or dim(result, " +
                          Str(dims[d]) + "), got " + Str(x) + " and " + Str(r) +
                          " with broadcast_dimensions " + Str(dims));
    }
  }
  return Status::Ok();
}

// Legacy stablehlo.broadcast (MLIR's rules): result = broadcast_sizes ++ shape(operand).
Status CheckBroadcast(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  I64s sizes;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "broadcast_sizes", Need::kRequired, sizes));
  bool ok = r.rank() == static_cast<int64_t>(sizes.size()) + x.rank();
  for (size_t i = 0; ok && i < sizes.size(); ++i) ok = r.dim(i) == sizes[i];
  for (int64_t i = 0; ok && i < x.rank(); ++i) ok = r.dim(sizes.size() + i) == x.dim(i);
  if (!ok) {
    return Fail(op, "requires shape(result) = broadcast_sizes ++ shape(operand), got " +
                        Str(sizes) + ", " + Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckReshape(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  if (x.num_elements() != r.num_elements()) {
    return Fail(op, "requires size(operand) = size(result), got " + Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckTranspose(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  I64s perm;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "permutation", Need::kRequired, perm));
  JITD_RETURN_IF_ERROR(CheckSize(op, "permutation", perm, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "permutation", perm, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckUnique(op, "permutation", perm));
  bool ok = r.rank() == x.rank();
  for (int64_t i = 0; ok && i < x.rank(); ++i) ok = r.dim(i) == x.dim(perm[i]);
  if (!ok) {
    return Fail(op, "requires shape(result) = dim(operand, permutation...), got " + Str(x) +
                        " and " + Str(r) + " with permutation " + Str(perm));
  }
  return Status::Ok();
}

Status CheckReverse(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  if (x != r) {
    return Fail(op, "requires type(operand) = type(result), got " + Str(x) + " and " + Str(r));
  }
  I64s dims;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "dimensions", Need::kRequired, dims));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "dimensions", dims, r.rank(), "rank(result)"));
  return CheckUnique(op, "dimensions", dims);
}

Status CheckSlice(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  I64s start, limit, strides;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "start_indices", Need::kRequired, start));
  JITD_RETURN_IF_ERROR(ReadI64s(op, "limit_indices", Need::kRequired, limit));
  JITD_RETURN_IF_ERROR(ReadI64s(op, "strides", Need::kRequired, strides));
  JITD_RETURN_IF_ERROR(CheckSize(op, "start_indices", start, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "limit_indices", limit, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "strides", strides, x.rank(), "rank(operand)"));
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (start[d] < 0 || start[d] > limit[d] || limit[d] > x.dim(d)) {
      return Fail(op, "requires 0 <= start_indices <= limit_indices <= shape(operand), got " +
                          Str(start) + ", " + Str(limit) + " and " + Str(x));
    }
  }
  JITD_RETURN_IF_ERROR(CheckAllPositive(op, "strides", strides));
  bool ok = r.rank() == x.rank();
  for (int64_t d = 0; ok && d < x.rank(); ++d) {
    const int64_t span = limit[d] - start[d];
    ok = r.dim(d) == (span == 0 ? 0 : (span - 1) / strides[d] + 1);
  }
  if (!ok) {
    return Fail(op,
                "requires shape(result) = ceil((limit_indices - start_indices) / strides), "
                "got " +
                    Str(r) + " for " + Str(start) + ", " + Str(limit) + " and " + Str(strides));
  }
  return Status::Ok();
}

// start_indices of dynamic_slice / dynamic_update_slice: `count` 0-d integer
// tensors of one type.
Status CheckStartIndices(const Op& op, Values indices, int64_t rank) {
  if (static_cast<int64_t>(indices.size()) != rank) {
    return Fail(op, "requires one start index per operand dimension (" + Str(rank) + "), got " +
                        std::to_string(indices.size()));
  }
  for (const Value* v : indices) {
    const Type& t = TypeOf(v);
    if (t.rank() != 0 || !IsInteger(t.dtype())) {
      return Fail(op, "requires start indices to be 0-d tensors of integer type, got " + Str(t));
    }
    if (t != TypeOf(indices[0])) {
      return Fail(op, "requires start indices of one type, got " + Str(TypeOf(indices[0])) +
                          " and " + Str(t));
    }
  }
  return Status::Ok();
}

Status CheckDynamicSlice(const Op& op) {
  if (op.num_operands() < 1) return Fail(op, "requires an operand");
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  JITD_RETURN_IF_ERROR(CheckStartIndices(op, op.operands().subspan(1), x.rank()));
  I64s sizes;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "slice_sizes", Need::kRequired, sizes));
  JITD_RETURN_IF_ERROR(CheckSize(op, "slice_sizes", sizes, x.rank(), "rank(operand)"));
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (sizes[d] < 0 || sizes[d] > x.dim(d)) {
      return Fail(
          op, "requires 0 <= slice_sizes <= shape(operand), got " + Str(sizes) + " and " + Str(x));
    }
  }
  if (!SameDims(r, sizes)) {
    return Fail(op, "requires shape(result) = slice_sizes, got " + Str(r) + " and " + Str(sizes));
  }
  return Status::Ok();
}

Status CheckDynamicUpdateSlice(const Op& op) {
  if (op.num_operands() < 2) return Fail(op, "requires an operand and an update");
  const Type& x = TypeOf(op.operand(0));
  const Type& update = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  if (x != r) {
    return Fail(op, "requires type(operand) = type(result), got " + Str(x) + " and " + Str(r));
  }
  if (update.dtype() != x.dtype()) {
    return Fail(op, "requires element_type(update) = element_type(operand), got " + Str(update) +
                        " and " + Str(x));
  }
  if (update.rank() != x.rank()) {
    return Fail(op, "requires rank(update) = rank(operand), got " + Str(update) + " and " + Str(x));
  }
  JITD_RETURN_IF_ERROR(CheckStartIndices(op, op.operands().subspan(2), x.rank()));
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (update.dim(d) > x.dim(d)) {
      return Fail(
          op, "requires shape(update) <= shape(operand), got " + Str(update) + " and " + Str(x));
    }
  }
  return Status::Ok();
}

Status CheckConcatenate(const Op& op) {
  if (op.num_operands() == 0) return Fail(op, "requires at least one input");
  const Type& first = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  int64_t dim = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "dimension", Need::kRequired, dim));
  if (dim < 0 || dim >= first.rank()) {
    return Fail(op, "requires 0 <= dimension < rank(inputs[0]) = " + Str(first.rank()) + ", got " +
                        Str(dim));
  }
  Wide total = 0;
  for (const Value* v : op.operands()) {
    const Type& t = TypeOf(v);
    if (t.dtype() != first.dtype()) {
      return Fail(op, "requires inputs of one element type, got " + Str(first) + " and " + Str(t));
    }
    bool same = t.rank() == first.rank();
    for (int64_t d = 0; same && d < t.rank(); ++d) same = d == dim || t.dim(d) == first.dim(d);
    if (!same) {
      return Fail(op, "requires inputs of the same shape except in dimension " + Str(dim) +
                          ", got " + Str(first) + " and " + Str(t));
    }
    total += t.dim(dim);
  }
  if (r.dtype() != first.dtype()) {
    return Fail(op, "requires element_type(result) = element_type(inputs[0]), got " + Str(r) +
                        " and " + Str(first));
  }
  bool ok = r.rank() == first.rank();
  for (int64_t d = 0; ok && d < r.rank(); ++d) ok = r.dim(d) == (d == dim ? total : first.dim(d));
  if (!ok) {
    return Fail(op, "requires the result shape of inputs[0] with dimension " + Str(dim) +
                        " the sum of the inputs' (" + Str(total) + "), got " + Str(r));
  }
  return Status::Ok();
}

Status CheckPad(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& value = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  if (value.rank() != 0) return Fail(op, "requires a 0-d padding_value, got " + Str(value));
  if (value.dtype() != x.dtype() || r.dtype() != x.dtype()) {
    return Fail(op, "requires operand, padding_value and result of one element type, got " +
                        Str(x) + ", " + Str(value) + " and " + Str(r));
  }
  I64s low, high, interior;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "edge_padding_low", Need::kRequired, low));
  JITD_RETURN_IF_ERROR(ReadI64s(op, "edge_padding_high", Need::kRequired, high));
  JITD_RETURN_IF_ERROR(ReadI64s(op, "interior_padding", Need::kRequired, interior));
  JITD_RETURN_IF_ERROR(CheckSize(op, "edge_padding_low", low, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "edge_padding_high", high, x.rank(), "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "interior_padding", interior, x.rank(), "rank(operand)"));
  for (int64_t v : interior) {
    if (v < 0) return Fail(op, "requires 0 <= interior_padding, got " + Str(interior));
  }
  bool ok = r.rank() == x.rank();
  for (int64_t d = 0; ok && d < x.rank(); ++d) {
    const Wide n = x.dim(d);
    const Wide want = Wide(low[d]) + n + (n > 0 ? n - 1 : 0) * interior[d] + high[d];
    ok = want == r.dim(d);
  }
  if (!ok) {
    return Fail(op,
                "requires shape(result) = edge_padding_low + shape(operand) + "
                "max(shape(operand) - 1, 0) * interior_padding + edge_padding_high, got " +
                    Str(r) + " for " + Str(x) + ", " + Str(low) + ", " + Str(high) + " and " +
                    Str(interior));
  }
  return Status::Ok();
}

Status CheckGetDimensionSize(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  int64_t d = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "dimension", Need::kRequired, d));
  if (d < 0 || d >= x.rank()) {
    return Fail(op,
                "requires 0 <= dimension < rank(operand) = " + Str(x.rank()) + ", got " + Str(d));
  }
  if (!IsScalarOf(r, DType::kS32))
    return Fail(op, "requires a result of type tensor<i32>, got " + Str(r));
  return Status::Ok();
}

constexpr std::array<std::string_view, 6> kGatherFields = {
    "offset_dims",           "collapsed_slice_dims",
    "operand_batching_dims", "start_indices_batching_dims",
    "start_index_map",       "index_vector_dim"};

// The batching-dimension rules gather and scatter share: for operand dims
// `obatch` and index dims `ibatch`.
Status CheckBatchingDims(const Op& op, const Type& operand, const Type& indices, I64s obatch,
                         I64s ibatch, int64_t index_vector_dim, std::string_view oname,
                         std::string_view iname, std::string_view operand_name,
                         std::string_view indices_name) {
  JITD_RETURN_IF_ERROR(CheckSorted(op, oname, obatch, /*strict=*/false));
  JITD_RETURN_IF_ERROR(
      CheckInRange(op, oname, obatch, operand.rank(), "rank(" + std::string(operand_name) + ")"));
  JITD_RETURN_IF_ERROR(
      CheckInRange(op, iname, ibatch, indices.rank(), "rank(" + std::string(indices_name) + ")"));
  JITD_RETURN_IF_ERROR(CheckUnique(op, iname, ibatch));
  for (int64_t v : ibatch) {
    if (v == index_vector_dim) {
      return Fail(op, "requires index_vector_dim (" + Str(index_vector_dim) + ") not to be in " +
                          std::string(iname) + " " + Str(ibatch));
    }
  }
  if (obatch.size() != ibatch.size()) {
    return Fail(op, "requires size(" + std::string(oname) + ") = size(" + std::string(iname) +
                        "), got " + Str(obatch) + " and " + Str(ibatch));
  }
  for (size_t i = 0; i < obatch.size(); ++i) {
    if (operand.dim(obatch[i]) != indices.dim(ibatch[i])) {
      return Fail(op, "requires dim(" + std::string(operand_name) + ", " + std::string(oname) +
                          "...) = dim(" + std::string(indices_name) + ", " + std::string(iname) +
                          "...), got " + Str(operand) + " and " + Str(indices) + " with " +
                          Str(obatch) + " and " + Str(ibatch));
    }
  }
  return Status::Ok();
}

Status CheckGather(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& idx = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  if (!IsInteger(idx.dtype())) {
    return Fail(op, "requires start_indices of integer type, got " + Str(idx));
  }
  std::array<I64s, 6> f;
  JITD_RETURN_IF_ERROR(ReadStruct(op, "dimension_numbers", "stablehlo.gather", kGatherFields, f));
  const I64s offset = f[0], collapsed = f[1], obatch = f[2], ibatch = f[3], index_map = f[4];
  int64_t ivd = 0;
  JITD_RETURN_IF_ERROR(ScalarField(op, "index_vector_dim", f[5], ivd));
  I64s sizes;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "slice_sizes", Need::kRequired, sizes));
  bool sorted_flag = false;
  JITD_RETURN_IF_ERROR(ReadBool(op, "indices_are_sorted", Need::kOptional, sorted_flag));

  const int64_t rank = x.rank();
  if (static_cast<int64_t>(offset.size() + collapsed.size() + obatch.size()) != rank) {
    return Fail(op,
                "requires rank(operand) = size(offset_dims) + size(collapsed_slice_dims) + "
                "size(operand_batching_dims), got " +
                    Str(x) + " with " + Str(offset) + ", " + Str(collapsed) + " and " +
                    Str(obatch));
  }
  if (ivd < 0 || ivd > idx.rank()) {
    return Fail(op, "requires 0 <= index_vector_dim <= rank(start_indices) = " + Str(idx.rank()) +
                        ", got " + Str(ivd));
  }
  const int64_t index_count = ivd < idx.rank() ? idx.dim(ivd) : 1;
  if (static_cast<int64_t>(index_map.size()) != index_count) {
    return Fail(op, "requires size(start_index_map) = " + Str(index_count) +
                        " (the size of start_indices' index vector), got " + Str(index_map));
  }
  JITD_RETURN_IF_ERROR(CheckSorted(op, "offset_dims", offset, /*strict=*/true));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "offset_dims", offset, r.rank(), "rank(result)"));
  JITD_RETURN_IF_ERROR(CheckSorted(op, "collapsed_slice_dims", collapsed, /*strict=*/false));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "collapsed_slice_dims", collapsed, rank, "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckBatchingDims(op, x, idx, obatch, ibatch, ivd, "operand_batching_dims",
                                         "start_indices_batching_dims", "operand",
                                         "start_indices"));
  JITD_RETURN_IF_ERROR(
      CheckUnique(op, "collapsed_slice_dims", collapsed, obatch, "operand_batching_dims"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "start_index_map", index_map, rank, "rank(operand)"));
  JITD_RETURN_IF_ERROR(
      CheckUnique(op, "start_index_map", index_map, obatch, "operand_batching_dims"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "slice_sizes", sizes, rank, "rank(operand)"));
  for (int64_t d = 0; d < rank; ++d) {
    if (sizes[d] < 0 || sizes[d] > x.dim(d)) {
      return Fail(
          op, "requires 0 <= slice_sizes <= shape(operand), got " + Str(sizes) + " and " + Str(x));
    }
  }
  const uint64_t dropped = MaskOf(collapsed) | MaskOf(obatch);
  for (int64_t d = 0; d < rank; ++d) {
    if ((dropped >> d & 1) && sizes[d] > 1) {
      return Fail(op,
                  "requires slice_sizes <= 1 in collapsed_slice_dims and "
                  "operand_batching_dims, got " +
                      Str(sizes));
    }
  }
  if (x.dtype() != r.dtype()) {
    return Fail(op, "requires element_type(operand) = element_type(result), got " + Str(x) +
                        " and " + Str(r));
  }
  // (C22) The result interleaves the batch dims (start_indices' without
  // index_vector_dim) with the offset dims (slice_sizes' not dropped).
  const int64_t batch_rank = idx.rank() - (ivd < idx.rank() ? 1 : 0);
  bool ok = r.rank() == batch_rank + static_cast<int64_t>(offset.size());
  const uint64_t offset_mask = ok ? MaskOf(offset) : 0;
  int64_t next_batch = 0, next_offset = 0;
  for (int64_t d = 0; ok && d < r.rank(); ++d) {
    if (offset_mask >> d & 1) {
      while (dropped >> next_offset & 1) ++next_offset;
      ok = r.dim(d) == sizes[next_offset++];
    } else {
      if (next_batch == ivd) ++next_batch;
      ok = r.dim(d) == idx.dim(next_batch++);
    }
  }
  if (!ok) {
    return Fail(op,
                "requires the result shape to combine the batch dimensions of "
                "start_indices with the offset dimensions of slice_sizes, got " +
                    Str(r) + " for " + Str(x) + ", " + Str(idx) + " and slice_sizes " + Str(sizes));
  }
  return Status::Ok();
}

constexpr std::array<std::string_view, 6> kScatterFields = {
    "update_window_dims",           "inserted_window_dims",
    "input_batching_dims",          "scatter_indices_batching_dims",
    "scatter_dims_to_operand_dims", "index_vector_dim"};

Status CheckScatter(const Op& op) {
  const size_t count = op.num_operands();
  if (count < 3 || count % 2 == 0) {
    return Fail(op, "requires N inputs, scatter_indices and N updates with N > 0, got " +
                        std::to_string(count) + " operands");
  }
  const size_t n = (count - 1) / 2;
  if (op.num_results() != n) {
    return Fail(op, "requires one result per input (" + std::to_string(n) + "), got " +
                        std::to_string(op.num_results()));
  }
  Values inputs = op.operands().subspan(0, n);
  const Type& idx = TypeOf(op.operand(n));
  Values updates = op.operands().subspan(n + 1, n);
  const Type& x = TypeOf(inputs[0]);
  const Type& up = TypeOf(updates[0]);
  for (size_t i = 0; i < n; ++i) {
    if (!SameShape(TypeOf(inputs[i]), x)) {
      return Fail(op,
                  "requires inputs of one shape, got " + Str(x) + " and " + Str(TypeOf(inputs[i])));
    }
    if (!SameShape(TypeOf(updates[i]), up)) {
      return Fail(
          op, "requires updates of one shape, got " + Str(up) + " and " + Str(TypeOf(updates[i])));
    }
    if (TypeOf(updates[i]).dtype() != TypeOf(inputs[i]).dtype()) {
      return Fail(op, "requires element_type(updates[" + std::to_string(i) +
                          "]) = element_type(inputs[" + std::to_string(i) + "]), got " +
                          Str(TypeOf(updates[i])) + " and " + Str(TypeOf(inputs[i])));
    }
    if (!SameShape(op.result(i)->type(), x)) {
      return Fail(op, "requires shape(results...) = shape(inputs...), got " +
                          Str(op.result(i)->type()) + " and " + Str(x));
    }
  }
  if (!IsInteger(idx.dtype())) {
    return Fail(op, "requires scatter_indices of integer type, got " + Str(idx));
  }
  std::array<I64s, 6> f;
  JITD_RETURN_IF_ERROR(
      ReadStruct(op, "scatter_dimension_numbers", "stablehlo.scatter", kScatterFields, f));
  const I64s window = f[0], inserted = f[1], ibatch = f[2], sibatch = f[3], to_operand = f[4];
  int64_t ivd = 0;
  JITD_RETURN_IF_ERROR(ScalarField(op, "index_vector_dim", f[5], ivd));
  bool flag = false;
  JITD_RETURN_IF_ERROR(ReadBool(op, "indices_are_sorted", Need::kOptional, flag));
  JITD_RETURN_IF_ERROR(ReadBool(op, "unique_indices", Need::kOptional, flag));

  const int64_t rank = x.rank();
  if (static_cast<int64_t>(window.size() + inserted.size() + ibatch.size()) != rank) {
    return Fail(op,
                "requires rank(inputs[0]) = size(update_window_dims) + "
                "size(inserted_window_dims) + size(input_batching_dims), got " +
                    Str(x) + " with " + Str(window) + ", " + Str(inserted) + " and " + Str(ibatch));
  }
  if (ivd < 0 || ivd > idx.rank()) {
    return Fail(op, "requires 0 <= index_vector_dim <= rank(scatter_indices) = " + Str(idx.rank()) +
                        ", got " + Str(ivd));
  }
  const int64_t index_count = ivd < idx.rank() ? idx.dim(ivd) : 1;
  if (static_cast<int64_t>(to_operand.size()) != index_count) {
    return Fail(op, "requires size(scatter_dims_to_operand_dims) = " + Str(index_count) +
                        " (the size of scatter_indices' index vector), got " + Str(to_operand));
  }
  JITD_RETURN_IF_ERROR(CheckSorted(op, "update_window_dims", window, /*strict=*/true));
  JITD_RETURN_IF_ERROR(
      CheckInRange(op, "update_window_dims", window, up.rank(), "rank(updates[0])"));
  JITD_RETURN_IF_ERROR(CheckSorted(op, "inserted_window_dims", inserted, /*strict=*/false));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "inserted_window_dims", inserted, rank, "rank(inputs[0])"));
  JITD_RETURN_IF_ERROR(CheckBatchingDims(op, x, idx, ibatch, sibatch, ivd, "input_batching_dims",
                                         "scatter_indices_batching_dims", "inputs[0]",
                                         "scatter_indices"));
  JITD_RETURN_IF_ERROR(
      CheckUnique(op, "inserted_window_dims", inserted, ibatch, "input_batching_dims"));
  JITD_RETURN_IF_ERROR(
      CheckInRange(op, "scatter_dims_to_operand_dims", to_operand, rank, "rank(inputs[0])"));
  JITD_RETURN_IF_ERROR(
      CheckUnique(op, "scatter_dims_to_operand_dims", to_operand, ibatch, "input_batching_dims"));
  // (C4) updates = scatter dims (scatter_indices' without index_vector_dim)
  // interleaved with window dims no larger than the input's.
  const uint64_t dropped = MaskOf(inserted) | MaskOf(ibatch);
  const int64_t scatter_rank = idx.rank() - (ivd < idx.rank() ? 1 : 0);
  bool ok = up.rank() == scatter_rank + static_cast<int64_t>(window.size());
  const uint64_t window_mask = ok ? MaskOf(window) : 0;
  int64_t next_scatter = 0, next_window = 0;
  for (int64_t d = 0; ok && d < up.rank(); ++d) {
    if (window_mask >> d & 1) {
      while (dropped >> next_window & 1) ++next_window;
      ok = up.dim(d) <= x.dim(next_window++);
    } else {
      if (next_scatter == ivd) ++next_scatter;
      ok = up.dim(d) == idx.dim(next_scatter++);
    }
  }
  if (!ok) {
    return Fail(op,
                "requires the updates shape to combine the scatter dimensions of "
                "scatter_indices with window dimensions no larger than the input's, got " +
                    Str(up) + " for " + Str(x) + " and " + Str(idx));
  }
  return CheckReducerBody(op, 0, "update_computation", inputs);
}

// reduce and reduce_window: N inputs of one shape, then N 0-d init values
// of the matching element types, and one result per input.
Status CheckInputsAndInits(const Op& op) {
  const size_t count = op.num_operands();
  if (count < 2 || count % 2 != 0) {
    return Fail(op, "requires N inputs and N init_values with N > 0, got " + std::to_string(count) +
                        " operands");
  }
  const size_t n = count / 2;
  if (op.num_results() != n) {
    return Fail(op, "requires one result per input (" + std::to_string(n) + "), got " +
                        std::to_string(op.num_results()));
  }
  Values inputs = op.operands().subspan(0, n);
  const Type& x = TypeOf(inputs[0]);
  for (size_t i = 0; i < n; ++i) {
    const Type& in = TypeOf(inputs[i]);
    const Type& init = TypeOf(op.operand(n + i));
    if (!SameShape(in, x))
      return Fail(op, "requires inputs of one shape, got " + Str(x) + " and " + Str(in));
    if (init.rank() != 0 || init.dtype() != in.dtype()) {
      return Fail(op, "requires init_values[" + std::to_string(i) +
                          "] to be a 0-d tensor of "
                          "the element type of inputs[" +
                          std::to_string(i) + "], got " + Str(init) + " and " + Str(in));
    }
  }
  return Status::Ok();
}

Status CheckReduce(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckInputsAndInits(op));
  const size_t n = op.num_operands() / 2;
  Values inputs = op.operands().subspan(0, n);
  const Type& x = TypeOf(inputs[0]);
  I64s dims;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "dimensions", Need::kRequired, dims));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "dimensions", dims, x.rank(), "rank(inputs[0])"));
  JITD_RETURN_IF_ERROR(CheckUnique(op, "dimensions", dims));
  const uint64_t reduced = MaskOf(dims);
  for (size_t i = 0; i < n; ++i) {
    const Type& r = op.result(i)->type();
    bool ok = r.rank() == x.rank() - static_cast<int64_t>(dims.size());
    for (int64_t d = 0, k = 0; ok && d < x.rank(); ++d) {
      if (!(reduced >> d & 1)) ok = r.dim(k++) == x.dim(d);
    }
    if (!ok) {
      return Fail(op, "requires shape(results...) = shape(inputs...) without dimensions " +
                          Str(dims) + ", got " + Str(r) + " for " + Str(x));
    }
  }
  return CheckReducerBody(op, 0, "body", inputs);
}

// The window attributes reduce_window and select_and_scatter share.
struct Window {
  int64_t rank = 0;
  I64s dimensions, strides, base_dilations, window_dilations;
  std::array<int64_t, kMaxRank> lo{}, hi{};
  // Expected output size along d.
  Wide Output(int64_t d, int64_t input) const {
    return NumWindows(input, base_dilations.empty() ? 1 : base_dilations[d], lo[d], hi[d],
                      dimensions[d], window_dilations.empty() ? 1 : window_dilations[d],
                      strides.empty() ? 1 : strides[d]);
  }
};

Status ReadWindow(const Op& op, int64_t rank, bool dilations, Window& w) {
  w.rank = rank;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "window_dimensions", Need::kOptional, w.dimensions));
  JITD_RETURN_IF_ERROR(CheckSize(op, "window_dimensions", w.dimensions, rank, "rank(operand)"));
  JITD_RETURN_IF_ERROR(CheckAllPositive(op, "window_dimensions", w.dimensions));
  bool present = false;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "window_strides", Need::kOptional, w.strides, &present));
  if (present) {
    JITD_RETURN_IF_ERROR(CheckSize(op, "window_strides", w.strides, rank, "rank(operand)"));
    JITD_RETURN_IF_ERROR(CheckAllPositive(op, "window_strides", w.strides));
  }
  if (dilations) {
    JITD_RETURN_IF_ERROR(
        ReadI64s(op, "base_dilations", Need::kOptional, w.base_dilations, &present));
    if (present) {
      JITD_RETURN_IF_ERROR(
          CheckSize(op, "base_dilations", w.base_dilations, rank, "rank(operand)"));
      JITD_RETURN_IF_ERROR(CheckAllPositive(op, "base_dilations", w.base_dilations));
    }
    JITD_RETURN_IF_ERROR(
        ReadI64s(op, "window_dilations", Need::kOptional, w.window_dilations, &present));
    if (present) {
      JITD_RETURN_IF_ERROR(
          CheckSize(op, "window_dilations", w.window_dilations, rank, "rank(operand)"));
      JITD_RETURN_IF_ERROR(CheckAllPositive(op, "window_dilations", w.window_dilations));
    }
  }
  return ReadPadding(op, rank, w.lo.data(), w.hi.data());
}

Status CheckWindowedShape(const Op& op, const Window& w, const Type& input, const Type& out,
                          std::string_view out_name) {
  bool ok = out.rank() == w.rank;
  for (int64_t d = 0; ok && d < w.rank; ++d) ok = w.Output(d, input.dim(d)) == out.dim(d);
  if (!ok) {
    return Fail(op, "requires shape(" + std::string(out_name) +
                        ") = the number of windows along each dimension, got " + Str(out) +
                        " for " + Str(input) + " with window_dimensions " + Str(w.dimensions) +
                        " and window_strides " + Str(w.strides));
  }
  return Status::Ok();
}

Status CheckReduceWindow(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckInputsAndInits(op));
  const size_t n = op.num_operands() / 2;
  Values inputs = op.operands().subspan(0, n);
  const Type& x = TypeOf(inputs[0]);
  if (!op.attr("window_dimensions")) return MissingAttr(op, "window_dimensions");
  Window w;
  JITD_RETURN_IF_ERROR(ReadWindow(op, x.rank(), /*dilations=*/true, w));
  for (size_t i = 0; i < n; ++i) {
    JITD_RETURN_IF_ERROR(CheckWindowedShape(op, w, x, op.result(i)->type(), "results..."));
  }
  return CheckReducerBody(op, 0, "body", inputs);
}

Status CheckSelectAndScatter(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& source = TypeOf(op.operand(1));
  const Type& init = TypeOf(op.operand(2));
  const Type& r = op.result(0)->type();
  if (source.dtype() != x.dtype()) {
    return Fail(op, "requires element_type(operand) = element_type(source), got " + Str(x) +
                        " and " + Str(source));
  }
  if (init.rank() != 0 || init.dtype() != x.dtype()) {
    return Fail(op, "requires init_value to be a 0-d tensor of the operand's element type, got " +
                        Str(init) + " and " + Str(x));
  }
  Window w;
  JITD_RETURN_IF_ERROR(ReadWindow(op, x.rank(), /*dilations=*/false, w));
  JITD_RETURN_IF_ERROR(CheckWindowedShape(op, w, x, source, "source"));
  if (!SameShape(x, r)) {
    return Fail(op, "requires shape(operand) = shape(result), got " + Str(x) + " and " + Str(r));
  }
  // (C9) select: (tensor<E>, tensor<E>) -> tensor<i1>, E the operand's.
  const Block& select = Body(op, 0);
  bool ok = select.num_args() == 2;
  for (size_t i = 0; ok && i < 2; ++i) ok = IsScalarOf(select.arg(i)->type(), x.dtype());
  if (!ok) {
    return Fail(
        op, "requires the 'select' region to take two tensor<" + Str(x.dtype()) + "> arguments");
  }
  Values ret = Returned(select);
  if (ret.size() != 1 || !IsScalarOf(TypeOf(ret[0]), DType::kPred)) {
    return Fail(op, "requires the 'select' region to return one tensor<i1>");
  }
  return CheckReducerBody(op, 1, "scatter", op.operands().subspan(0, 1));
}

Status CheckSort(const Op& op) {
  const size_t n = op.num_operands();
  if (n == 0) return Fail(op, "requires at least one input");
  if (op.num_results() != n) {
    return Fail(op, "requires one result per input (" + std::to_string(n) + "), got " +
                        std::to_string(op.num_results()));
  }
  const Type& x = TypeOf(op.operand(0));
  for (size_t i = 0; i < n; ++i) {
    const Type& in = TypeOf(op.operand(i));
    if (in != op.result(i)->type()) {
      return Fail(op, "requires type(inputs...) = type(results...), got " + Str(in) + " and " +
                          Str(op.result(i)->type()));
    }
    if (!SameShape(in, x))
      return Fail(op, "requires inputs of one shape, got " + Str(x) + " and " + Str(in));
  }
  int64_t dim = -1;
  JITD_RETURN_IF_ERROR(ReadInt(op, "dimension", Need::kOptional, dim));
  if (dim < -x.rank() || dim >= x.rank()) {
    return Fail(op, "requires -R <= dimension < R for R = rank(inputs[0]) = " + Str(x.rank()) +
                        ", got " + Str(dim));
  }
  bool stable = false;
  JITD_RETURN_IF_ERROR(ReadBool(op, "is_stable", Need::kOptional, stable));
  // (C5) comparator: (tensor<E0>, tensor<E0>, ..., tensor<EN-1>, tensor<EN-1>) -> tensor<i1>.
  const Block& b = Body(op, 0);
  if (b.num_args() != 2 * n) {
    return Fail(op, "requires the 'comparator' region to take " + std::to_string(2 * n) +
                        " arguments, got " + std::to_string(b.num_args()));
  }
  for (size_t i = 0; i < 2 * n; ++i) {
    const DType e = TypeOf(op.operand(i / 2)).dtype();
    if (!IsScalarOf(b.arg(i)->type(), e)) {
      return Fail(op, "requires argument #" + std::to_string(i) +
                          " of the 'comparator' region to be tensor<" + Str(e) + ">, got " +
                          Str(b.arg(i)->type()));
    }
  }
  Values ret = Returned(b);
  if (ret.size() != 1 || !IsScalarOf(TypeOf(ret[0]), DType::kPred)) {
    return Fail(op, "requires the 'comparator' region to return one tensor<i1>");
  }
  return Status::Ok();
}

Status CheckMap(const Op& op) {
  const size_t n = op.num_operands();
  if (n == 0) return Fail(op, "requires at least one input");
  const Type& r = op.result(0)->type();
  for (const Value* v : op.operands()) {
    if (!SameShape(TypeOf(v), r)) {
      return Fail(op, "requires shape(inputs...) = shape(result), got " + Str(TypeOf(v)) + " and " +
                          Str(r));
    }
  }
  I64s dims;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "dimensions", Need::kRequired, dims));
  bool ok = static_cast<int64_t>(dims.size()) == r.rank();
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = dims[i] == static_cast<int64_t>(i);
  if (!ok) {
    return Fail(op, "requires dimensions = range(rank(inputs[0])) = [0, " + Str(r.rank()) +
                        "), got " + Str(dims));
  }
  const Block& b = Body(op, 0);
  if (b.num_args() != n) {
    return Fail(op, "requires the 'computation' region to take " + std::to_string(n) +
                        " arguments, got " + std::to_string(b.num_args()));
  }
  for (size_t i = 0; i < n; ++i) {
    const DType e = TypeOf(op.operand(i)).dtype();
    if (!IsScalarOf(b.arg(i)->type(), e)) {
      return Fail(op, "requires argument #" + std::to_string(i) +
                          " of the 'computation' region to be tensor<" + Str(e) + ">, got " +
                          Str(b.arg(i)->type()));
    }
  }
  Values ret = Returned(b);
  if (ret.size() != 1 || !IsScalarOf(TypeOf(ret[0]), r.dtype())) {
    return Fail(op, "requires the 'computation' region to return one tensor<" + Str(r.dtype()) +
                        "> (the result's element type)");
  }
  return Status::Ok();
}

constexpr std::array<std::string_view, 4> kDotFields = {
    "lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
    "rhs_contracting_dimensions"};

Status CheckDotGeneral(const Op& op) {
  const Type& lhs = TypeOf(op.operand(0));
  const Type& rhs = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  std::array<I64s, 4> f;
  JITD_RETURN_IF_ERROR(ReadStruct(op, "dot_dimension_numbers", "stablehlo.dot", kDotFields, f));
  const I64s lb = f[0], rb = f[1], lc = f[2], rc = f[3];
  if (lb.size() != rb.size()) {
    return Fail(op,
                "requires size(lhs_batching_dimensions) = size(rhs_batching_dimensions), "
                "got " +
                    Str(lb) + " and " + Str(rb));
  }
  if (lc.size() != rc.size()) {
    return Fail(op,
                "requires size(lhs_contracting_dimensions) = "
                "size(rhs_contracting_dimensions), got " +
                    Str(lc) + " and " + Str(rc));
  }
  JITD_RETURN_IF_ERROR(CheckInRange(op, "lhs_batching_dimensions", lb, lhs.rank(), "rank(lhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "lhs_contracting_dimensions", lc, lhs.rank(), "rank(lhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "rhs_batching_dimensions", rb, rhs.rank(), "rank(rhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "rhs_contracting_dimensions", rc, rhs.rank(), "rank(rhs)"));
  JITD_RETURN_IF_ERROR(
      CheckUnique(op, "lhs_batching_dimensions", lb, lc, "lhs_contracting_dimensions"));
  JITD_RETURN_IF_ERROR(
      CheckUnique(op, "rhs_batching_dimensions", rb, rc, "rhs_contracting_dimensions"));
  for (size_t i = 0; i < lb.size(); ++i) {
    if (lhs.dim(lb[i]) != rhs.dim(rb[i])) {
      return Fail(op,
                  "requires dim(lhs, lhs_batching_dimensions...) = dim(rhs, "
                  "rhs_batching_dimensions...), got " +
                      Str(lhs) + " and " + Str(rhs) + " with " + Str(lb) + " and " + Str(rb));
    }
  }
  for (size_t i = 0; i < lc.size(); ++i) {
    if (lhs.dim(lc[i]) != rhs.dim(rc[i])) {
      return Fail(op,
                  "requires dim(lhs, lhs_contracting_dimensions...) = dim(rhs, "
                  "rhs_contracting_dimensions...), got " +
                      Str(lhs) + " and " + Str(rhs) + " with " + Str(lc) + " and " + Str(rc));
    }
  }
  JITD_RETURN_IF_ERROR(CheckPrecisionConfig(op));
  if (lhs.dtype() != rhs.dtype()) {
    return Fail(
        op, "requires element_type(lhs) = element_type(rhs), got " + Str(lhs) + " and " + Str(rhs));
  }
  // (C12) batch dims, then lhs's free dims, then rhs's free dims.
  const uint64_t lused = MaskOf(lb) | MaskOf(lc);
  const uint64_t rused = MaskOf(rb) | MaskOf(rc);
  const int64_t want_rank = static_cast<int64_t>(lb.size()) +
                            (lhs.rank() - static_cast<int64_t>(lb.size() + lc.size())) +
                            (rhs.rank() - static_cast<int64_t>(rb.size() + rc.size()));
  bool ok = r.rank() == want_rank;
  int64_t k = 0;
  for (size_t i = 0; ok && i < lb.size(); ++i) ok = r.dim(k++) == lhs.dim(lb[i]);
  for (int64_t d = 0; ok && d < lhs.rank(); ++d) {
    if (!(lused >> d & 1)) ok = r.dim(k++) == lhs.dim(d);
  }
  for (int64_t d = 0; ok && d < rhs.rank(); ++d) {
    if (!(rused >> d & 1)) ok = r.dim(k++) == rhs.dim(d);
  }
  if (!ok) {
    return Fail(op, "requires shape(result) = batch dims + lhs free dims + rhs free dims, got " +
                        Str(r) + " for " + Str(lhs) + " and " + Str(rhs));
  }
  return Status::Ok();
}

// Legacy stablehlo.dot (MLIR's rules): vector/matrix products contracting the
// last dimension of lhs with the first of rhs.
Status CheckDot(const Op& op) {
  const Type& lhs = TypeOf(op.operand(0));
  const Type& rhs = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  if (lhs.rank() < 1 || lhs.rank() > 2 || rhs.rank() < 1 || rhs.rank() > 2) {
    return Fail(op, "requires operands of rank 1 or 2, got " + Str(lhs) + " and " + Str(rhs));
  }
  if (lhs.dim(lhs.rank() - 1) != rhs.dim(0)) {
    return Fail(op, "requires the last dimension of lhs to equal the first of rhs, got " +
                        Str(lhs) + " and " + Str(rhs));
  }
  if (lhs.dtype() != rhs.dtype()) {
    return Fail(
        op, "requires element_type(lhs) = element_type(rhs), got " + Str(lhs) + " and " + Str(rhs));
  }
  JITD_RETURN_IF_ERROR(CheckPrecisionConfig(op));
  std::array<int64_t, 2> want{};
  int64_t n = 0;
  if (lhs.rank() == 2) want[n++] = lhs.dim(0);
  if (rhs.rank() == 2) want[n++] = rhs.dim(1);
  if (!SameDims(r, I64s(want.data(), n))) {
    return Fail(op, "requires shape(result) = " + Str(I64s(want.data(), n)) + ", got " + Str(r));
  }
  return Status::Ok();
}

// (C13), (C18), (C20) of convolution (and dynamic_conv): dimension_numbers
// names every dimension of rank-`n` lhs, rhs and result once.
StatusOr<const ConvDimensionNumbers*> CheckConvLayouts(const Op& op, int64_t n) {
  const int64_t spatial = n - 2;
  const Attribute* a = op.attr("dimension_numbers");
  if (!a) return MissingAttr(op, "dimension_numbers");
  const auto* dn = a->get_if<ConvDimensionNumbers>();
  if (!dn) return WrongAttr(op, "dimension_numbers", "convolution dimension numbers", *a);
  const I64s in_sp(dn->input_spatial_dimensions), k_sp(dn->kernel_spatial_dimensions),
      out_sp(dn->output_spatial_dimensions);
  JITD_RETURN_IF_ERROR(CheckSize(op, "input_spatial_dimensions", in_sp, spatial, "N - 2"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "kernel_spatial_dimensions", k_sp, spatial, "N - 2"));
  JITD_RETURN_IF_ERROR(CheckSize(op, "output_spatial_dimensions", out_sp, spatial, "N - 2"));
  // (C13), (C18), (C20): each layout names every dimension once.
  const std::array<int64_t, 2> in_bf = {dn->input_batch_dimension, dn->input_feature_dimension};
  const std::array<int64_t, 2> k_io = {dn->kernel_input_feature_dimension,
                                       dn->kernel_output_feature_dimension};
  const std::array<int64_t, 2> out_bf = {dn->output_batch_dimension, dn->output_feature_dimension};
  struct Layout {
    std::string_view name;
    I64s a, b;
  };
  for (const Layout& l :
       {Layout{"input dimensions", in_bf, in_sp}, Layout{"kernel dimensions", k_io, k_sp},
        Layout{"output dimensions", out_bf, out_sp}}) {
    JITD_RETURN_IF_ERROR(CheckInRange(op, l.name, l.a, n, "N"));
    JITD_RETURN_IF_ERROR(CheckInRange(op, l.name, l.b, n, "N"));
    if (!AllUnique(l.a, l.b)) {
      return Fail(op, "requires " + std::string(l.name) + " to be unique, got " + Str(l.a) +
                          " and spatial " + Str(l.b));
    }
  }
  return dn;
}

Status CheckConvolution(const Op& op) {
  const Type& lhs = TypeOf(op.operand(0));
  const Type& rhs = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  const int64_t n = lhs.rank();
  if (rhs.rank() != n || n < 2) {
    return Fail(op, "requires rank(lhs) = rank(rhs) >= 2, got " + Str(lhs) + " and " + Str(rhs));
  }
  if (r.rank() != n) {
    return Fail(op, "requires rank(result) = rank(lhs) = " + Str(n) + ", got " + Str(r));
  }
  const int64_t spatial = n - 2;
  JITD_ASSIGN_OR_RETURN(const ConvDimensionNumbers* dn, CheckConvLayouts(op, n));
  const I64s in_sp(dn->input_spatial_dimensions), k_sp(dn->kernel_spatial_dimensions),
      out_sp(dn->output_spatial_dimensions);
  // Window attributes; absent ones default to 1 (0 for padding).
  I64s strides, lhs_dilation, rhs_dilation;
  bool present = false;
  for (auto [name, list] : {std::pair<std::string_view, I64s*>{"window_strides", &strides},
                            {"lhs_dilation", &lhs_dilation},
                            {"rhs_dilation", &rhs_dilation}}) {
    JITD_RETURN_IF_ERROR(ReadI64s(op, name, Need::kOptional, *list, &present));
    if (present) {
      JITD_RETURN_IF_ERROR(CheckSize(op, name, *list, spatial, "N - 2"));
      JITD_RETURN_IF_ERROR(CheckAllPositive(op, name, *list));
    }
  }
  if (const Attribute* rev = op.attr("window_reversal")) {
    const auto* d = rev->get_if<DenseArrayAttr>();
    if (!d || d->dtype != DType::kPred)
      return WrongAttr(op, "window_reversal", "an array<i1>", *rev);
    if (static_cast<int64_t>(d->ints.size()) != spatial) {
      return Fail(op, "requires size(window_reversal) = N - 2 = " + Str(spatial) + ", got " +
                          std::to_string(d->ints.size()));
    }
  }
  std::array<int64_t, kMaxRank> lo{}, hi{};
  JITD_RETURN_IF_ERROR(ReadPadding(op, spatial, lo.data(), hi.data()));
  int64_t groups = 1, batch_groups = 1;
  JITD_RETURN_IF_ERROR(ReadInt(op, "feature_group_count", Need::kRequired, groups));
  JITD_RETURN_IF_ERROR(ReadInt(op, "batch_group_count", Need::kRequired, batch_groups));
  if (groups <= 0) return Fail(op, "requires 0 < feature_group_count, got " + Str(groups));
  if (batch_groups <= 0)
    return Fail(op, "requires 0 < batch_group_count, got " + Str(batch_groups));
  if (groups != 1 && batch_groups != 1) {
    return Fail(op, "requires feature_group_count = 1 or batch_group_count = 1, got " +
                        Str(groups) + " and " + Str(batch_groups));
  }
  JITD_RETURN_IF_ERROR(CheckPrecisionConfig(op));
  const int64_t in_batch = lhs.dim(dn->input_batch_dimension);
  const int64_t in_feature = lhs.dim(dn->input_feature_dimension);
  const int64_t k_in = rhs.dim(dn->kernel_input_feature_dimension);
  const int64_t k_out = rhs.dim(dn->kernel_output_feature_dimension);
  if (in_batch % batch_groups != 0) {
    return Fail(op, "requires dim(lhs, input_batch_dimension) % batch_group_count = 0, got " +
                        Str(in_batch) + " and " + Str(batch_groups));
  }
  if (in_feature % groups != 0) {
    return Fail(op, "requires dim(lhs, input_feature_dimension) % feature_group_count = 0, got " +
                        Str(in_feature) + " and " + Str(groups));
  }
  if (k_in != in_feature / groups) {
    return Fail(op,
                "requires dim(rhs, kernel_input_feature_dimension) = dim(lhs, "
                "input_feature_dimension) / feature_group_count, got " +
                    Str(lhs) + " and " + Str(rhs) + " with feature_group_count " + Str(groups));
  }
  if (k_out % batch_groups != 0) {
    return Fail(op,
                "requires dim(rhs, kernel_output_feature_dimension) % batch_group_count = 0, "
                "got " +
                    Str(k_out) + " and " + Str(batch_groups));
  }
  if (k_out % groups != 0) {
    return Fail(op,
                "requires dim(rhs, kernel_output_feature_dimension) % feature_group_count = "
                "0, got " +
                    Str(k_out) + " and " + Str(groups));
  }
  // (C25) The result shape.
  bool ok = r.dim(dn->output_batch_dimension) == in_batch / batch_groups &&
            r.dim(dn->output_feature_dimension) == k_out;
  for (int64_t s = 0; ok && s < spatial; ++s) {
    const Wide windows =
        NumWindows(lhs.dim(in_sp[s]), lhs_dilation.empty() ? 1 : lhs_dilation[s], lo[s], hi[s],
                   rhs.dim(k_sp[s]), rhs_dilation.empty() ? 1 : rhs_dilation[s],
                   strides.empty() ? 1 : strides[s]);
    ok = r.dim(out_sp[s]) == windows;
  }
  if (!ok) {
    return Fail(op,
                "requires the result shape the convolution produces (batch / "
                "batch_group_count, kernel output features, and the number of windows "
                "along each spatial dimension), got " +
                    Str(r) + " for " + Str(lhs) + " and " + Str(rhs));
  }
  // (C27) asks element_type(lhs) = element_type(rhs) = element_type(result);
  // like StableHLO's own verifier, a wider result of the same kind is taken
  // too (JAX's preferred_element_type: i8 x i8 -> i32, bf16 x bf16 -> f32).
  if (lhs.dtype() != rhs.dtype() || !IsPromotable(lhs.dtype(), r.dtype())) {
    return Fail(op, "requires element_type(lhs) = element_type(rhs) and a result element type "
                    "of the same kind, at least as wide, got " +
                        Str(lhs) + ", " + Str(rhs) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckFft(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  std::string_view type;
  JITD_RETURN_IF_ERROR(
      ReadEnum(op, "fft_type", Need::kRequired, {"FFT", "IFFT", "RFFT", "IRFFT"}, type));
  I64s length;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "fft_length", Need::kRequired, length));
  if (length.empty() || length.size() > 3) {
    return Fail(op, "requires 1 <= size(fft_length) <= 3, got " + Str(length));
  }
  if (static_cast<int64_t>(length.size()) > x.rank()) {
    return Fail(
        op, "requires size(fft_length) <= rank(operand), got " + Str(length) + " and " + Str(x));
  }
  const bool rfft = type == "RFFT", irfft = type == "IRFFT";
  const DType in = x.dtype(), out = r.dtype();
  bool types_ok;
  if (rfft) {
    types_ok = IsFloat(in) && ComplexOf(in) == out;
  } else if (irfft) {
    types_ok = IsComplex(in) && ComplexComponent(in) == out;
  } else {
    types_ok = IsComplex(in) && in == out;
  }
  if (!types_ok) {
    return Fail(op, "requires element types that fit fft_type " + std::string(type) +
                        " (FFT/IFFT: one complex type; RFFT: float to complex; IRFFT: complex "
                        "to float), got " +
                        Str(x) + " and " + Str(r));
  }
  // (C4) The real side's trailing dimensions are fft_length.
  const Type* real = rfft ? &x : irfft ? &r : nullptr;
  if (real) {
    const int64_t k = static_cast<int64_t>(length.size());
    bool ok = real->rank() >= k;
    for (int64_t i = 0; ok && i < k; ++i) ok = real->dim(real->rank() - k + i) == length[i];
    if (!ok) {
      return Fail(op, "requires the trailing dimensions of the real tensor to equal fft_length " +
                          Str(length) + ", got " + Str(*real));
    }
  }
  // (C5) Shapes agree, except the last dimension of RFFT/IRFFT's complex side.
  bool ok = r.rank() == x.rank();
  const int64_t last = x.rank() - 1;
  for (int64_t d = 0; ok && d < x.rank(); ++d) {
    if (d == last && rfft) {
      ok = r.dim(d) == (x.dim(d) == 0 ? 0 : x.dim(d) / 2 + 1);
    } else if (d == last && irfft) {
      ok = x.dim(d) == (r.dim(d) == 0 ? 0 : r.dim(d) / 2 + 1);
    } else {
      ok = r.dim(d) == x.dim(d);
    }
  }
  if (!ok) {
    return Fail(op,
                "requires shape(result) = shape(operand) except the last dimension of "
                "RFFT (n / 2 + 1) and IRFFT, got " +
                    Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckSquareMatrices(const Op& op, const Type& a, std::string_view name) {
  if (a.rank() < 2) return Fail(op, "requires 2 <= rank(" + std::string(name) + "), got " + Str(a));
  if (a.dim(a.rank() - 1) != a.dim(a.rank() - 2)) {
    return Fail(op, "requires dim(" + std::string(name) + ", -2) = dim(" + std::string(name) +
                        ", -1), got " + Str(a));
  }
  return Status::Ok();
}

Status CheckCholesky(const Op& op) {
  const Type& a = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckCategory(op, "an operand", a, kFloat | kComplex));
  if (a != r) return Fail(op, "requires type(a) = type(result), got " + Str(a) + " and " + Str(r));
  JITD_RETURN_IF_ERROR(CheckSquareMatrices(op, a, "a"));
  bool lower = false;
  return ReadBool(op, "lower", Need::kOptional, lower);
}

Status CheckTriangularSolve(const Op& op) {
  const Type& a = TypeOf(op.operand(0));
  const Type& b = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckCategory(op, "operands", a, kFloat | kComplex));
  if (a.dtype() != b.dtype()) {
    return Fail(op, "requires element_type(a) = element_type(b), got " + Str(a) + " and " + Str(b));
  }
  if (a.rank() != b.rank()) {
    return Fail(op, "requires rank(a) = rank(b), got " + Str(a) + " and " + Str(b));
  }
  JITD_RETURN_IF_ERROR(CheckSquareMatrices(op, a, "a"));
  bool left_side = false, flag = false;
  JITD_RETURN_IF_ERROR(ReadBool(op, "left_side", Need::kRequired, left_side));
  JITD_RETURN_IF_ERROR(ReadBool(op, "lower", Need::kRequired, flag));
  JITD_RETURN_IF_ERROR(ReadBool(op, "unit_diagonal", Need::kRequired, flag));
  std::string_view transpose;
  JITD_RETURN_IF_ERROR(ReadEnum(op, "transpose_a", Need::kRequired,
                                {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}, transpose));
  const int64_t rank = a.rank();
  bool ok = std::equal(a.dims().begin(), a.dims().end() - 2, b.dims().begin());
  if (!ok) {
    return Fail(
        op, "requires the batch dimensions of a and b to match, got " + Str(a) + " and " + Str(b));
  }
  if (b.dim(left_side ? rank - 2 : rank - 1) != a.dim(rank - 1)) {
    return Fail(op, std::string("requires dim(a, -1) = dim(b, ") + (left_side ? "-2" : "-1") +
                        ") for left_side = " + (left_side ? "true" : "false") + ", got " + Str(a) +
                        " and " + Str(b));
  }
  if (b != r) return Fail(op, "requires type(b) = type(result), got " + Str(b) + " and " + Str(r));
  return Status::Ok();
}

Status CheckRngBitGenerator(const Op& op) {
  const Type& state = TypeOf(op.operand(0));
  const Type& out_state = op.result(0)->type();
  const Type& out = op.result(1)->type();
  std::string_view algorithm;
  JITD_RETURN_IF_ERROR(ReadEnum(op, "rng_algorithm", Need::kRequired,
                                {"DEFAULT", "THREE_FRY", "PHILOX"}, algorithm));
  if (state.rank() != 1 || state.dtype() != DType::kU64) {
    return Fail(op, "requires initial_state to be a 1-d tensor of ui64, got " + Str(state));
  }
  if (state != out_state) {
    return Fail(op, "requires type(initial_state) = type(output_state), got " + Str(state) +
                        " and " + Str(out_state));
  }
  const int64_t size = state.dim(0);
  if ((algorithm == "THREE_FRY" && size != 2) ||
      (algorithm == "PHILOX" && size != 2 && size != 3)) {
    return Fail(op, "requires an initial_state of size " +
                        std::string(algorithm == "PHILOX" ? "2 or 3" : "2") + " for " +
                        std::string(algorithm) + ", got " + Str(state));
  }
  return CheckCategory(op, "an output", out, kInt | kFloat);
}

Status CheckRng(const Op& op) {
  const Type& a = TypeOf(op.operand(0));
  const Type& b = TypeOf(op.operand(1));
  const Type& shape = TypeOf(op.operand(2));
  const Type& r = op.result(0)->type();
  std::string_view distribution;
  JITD_RETURN_IF_ERROR(
      ReadEnum(op, "rng_distribution", Need::kRequired, {"UNIFORM", "NORMAL"}, distribution));
  JITD_RETURN_IF_ERROR(CheckCategory(op, "a result", r, kBool | kInt | kFloat));
  if (a.rank() != 0 || b.rank() != 0) {
    return Fail(op, "requires 0-d a and b, got " + Str(a) + " and " + Str(b));
  }
  if (a.dtype() != r.dtype() || b.dtype() != r.dtype()) {
    return Fail(op, "requires element_type(a) = element_type(b) = element_type(result), got " +
                        Str(a) + ", " + Str(b) + " and " + Str(r));
  }
  if (distribution == "NORMAL" && !IsFloat(a.dtype())) {
    return Fail(op, "requires floating-point a for NORMAL, got " + Str(a));
  }
  if (shape.rank() != 1 || !IsInteger(shape.dtype()) || shape.dim(0) != r.rank()) {
    return Fail(op, "requires shape to be a 1-d integer tensor of rank(result) = " + Str(r.rank()) +
                        " elements, got " + Str(shape));
  }
  return Status::Ok();
}

// Batch norm: the operand, `features` 1-d tensors of size dim(operand,
// feature_index), all of one float element type.
Status CheckBatchNorm(const Op& op, const Type& x, std::initializer_list<const Type*> features) {
  JITD_RETURN_IF_ERROR(CheckCategory(op, "an operand", x, kFloat));
  int64_t fi = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "feature_index", Need::kRequired, fi));
  JITD_RETURN_IF_ERROR(ReadFloat(op, "epsilon", Need::kRequired));
  if (fi < 0 || fi >= x.rank()) {
    return Fail(
        op, "requires 0 <= feature_index < rank(operand) = " + Str(x.rank()) + ", got " + Str(fi));
  }
  for (const Type* t : features) {
    if (t->dtype() != x.dtype()) {
      return Fail(op, "requires one element type for all operands and results, got " + Str(x) +
                          " and " + Str(*t));
    }
    if (t->rank() != 1 || t->dim(0) != x.dim(fi)) {
      return Fail(op,
                  "requires 1-d scale, offset, mean and variance of size dim(operand, "
                  "feature_index) = " +
                      Str(x.dim(fi)) + ", got " + Str(*t));
    }
  }
  return Status::Ok();
}

Status CheckBatchNormInference(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckBatchNorm(op, x,
                                      {&TypeOf(op.operand(1)), &TypeOf(op.operand(2)),
                                       &TypeOf(op.operand(3)), &TypeOf(op.operand(4))}));
  if (x != r)
    return Fail(op, "requires type(operand) = type(result), got " + Str(x) + " and " + Str(r));
  return Status::Ok();
}

Status CheckBatchNormTraining(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckBatchNorm(op, x,
                                      {&TypeOf(op.operand(1)), &TypeOf(op.operand(2)),
                                       &op.result(1)->type(), &op.result(2)->type()}));
  if (x != r)
    return Fail(op, "requires type(output) = type(operand), got " + Str(r) + " and " + Str(x));
  return Status::Ok();
}

Status CheckBatchNormGrad(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& grad_out = TypeOf(op.operand(4));
  const Type& grad_x = op.result(0)->type();
  JITD_RETURN_IF_ERROR(
      CheckBatchNorm(op, x,
                     {&TypeOf(op.operand(1)), &TypeOf(op.operand(2)), &TypeOf(op.operand(3)),
                      &op.result(1)->type(), &op.result(2)->type()}));
  if (grad_out != x || grad_x != x) {
    return Fail(op, "requires operand, grad_output and grad_operand of one type, got " + Str(x) +
                        ", " + Str(grad_out) + " and " + Str(grad_x));
  }
  return Status::Ok();
}

Status CheckTensorOrToken(const Op& op, const Type& t, std::string_view what) {
  if (t.is_tuple())
    return Fail(op, "requires " + std::string(what) + " to be tensors or tokens, got " + Str(t));
  return Status::Ok();
}

Status CheckWhile(const Op& op) {
  Values operands = op.operands();
  if (op.num_results() != operands.size()) {
    return Fail(op, "requires one result per operand (" + std::to_string(operands.size()) +
                        "), got " + std::to_string(op.num_results()));
  }
  for (size_t i = 0; i < operands.size(); ++i) {
    if (TypeOf(operands[i]) != op.result(i)->type()) {
      return Fail(op, "requires type(results...) = type(operand...), got " +
                          Str(op.result(i)->type()) + " and " + Str(TypeOf(operands[i])));
    }
  }
  JITD_RETURN_IF_ERROR(CheckRegionArgs(op, 0, "cond", operands));
  Values ret = Returned(Body(op, 0));
  if (ret.size() != 1 || !IsScalarOf(TypeOf(ret[0]), DType::kPred)) {
    return Fail(op, "requires the 'cond' region to return one tensor<i1>");
  }
  JITD_RETURN_IF_ERROR(CheckRegionArgs(op, 1, "body", operands));
  return CheckRegionReturns(op, 1, "body", operands.size(),
                            [&](size_t i) -> const Type& { return TypeOf(operands[i]); });
}

// if / case branches: no arguments, returning the op's result types.
Status CheckBranches(const Op& op) {
  for (size_t i = 0; i < op.num_results(); ++i) {
    JITD_RETURN_IF_ERROR(CheckTensorOrToken(op, op.result(i)->type(), "results"));
  }
  for (size_t b = 0; b < op.num_regions(); ++b) {
    const std::string name = "branch #" + std::to_string(b);
    if (Body(op, b).num_args() != 0) {
      return Fail(op, "requires " + name + " to take no arguments, got " +
                          std::to_string(Body(op, b).num_args()));
    }
    JITD_RETURN_IF_ERROR(
        CheckRegionReturns(op, b, name, op.num_results(),
                           [&](size_t i) -> const Type& { return op.result(i)->type(); }));
  }
  return Status::Ok();
}

Status CheckIf(const Op& op) {
  const Type& pred = TypeOf(op.operand(0));
  if (!IsScalarOf(pred, DType::kPred))
    return Fail(op, "requires pred of type tensor<i1>, got " + Str(pred));
  return CheckBranches(op);
}

// jitd.fusion: a kind, one block taking the operands' types, returning the
// result types, and using no value defined outside the region.
Status CheckFusion(const Op& op) {
  const Attribute* kind = op.attr("kind");
  const auto* s = kind ? kind->get_if<StringAttr>() : nullptr;
  if (!s || (s->value != "loop" && s->value != "reduction" && s->value != "multi_output")) {
    return Fail(op, "requires a string attribute 'kind' (\"loop\", \"reduction\" or \"multi_output\")");
  }
  if (op.num_results() == 0) return Fail(op, "requires at least one result");
  if (op.region(0).num_blocks() != 1) return Fail(op, "requires a region of one block");
  JITD_RETURN_IF_ERROR(CheckRegionArgs(op, 0, "body", op.operands()));
  JITD_RETURN_IF_ERROR(CheckRegionReturns(op, 0, "body", op.num_results(),
                                          [&](size_t i) -> const Type& { return op.result(i)->type(); }));
  std::unordered_set<const Value*> defined;
  const Block& block = Body(op, 0);
  for (size_t i = 0; i < block.num_args(); ++i) defined.insert(block.arg(i));
  Status status = Status::Ok();
  WalkOps(op.region(0), [&](const Op& inner) {
    for (size_t r = 0; r < inner.num_regions(); ++r) {
      for (size_t b = 0; b < inner.region(r).num_blocks(); ++b) {
        const Block& nested = inner.region(r).block(b);
        for (size_t i = 0; i < nested.num_args(); ++i) defined.insert(nested.arg(i));
      }
    }
    for (const Value* v : inner.operands()) {
      if (!defined.count(v) && status.ok()) {
        status = Fail(op, "region uses a value defined outside it (it must take it as an operand)");
      }
    }
    for (size_t i = 0; i < inner.num_results(); ++i) defined.insert(inner.result(i));
  });
  return status;
}

Status CheckCase(const Op& op) {
  const Type& index = TypeOf(op.operand(0));
  if (!IsScalarOf(index, DType::kS32)) {
    return Fail(op, "requires index of type tensor<i32>, got " + Str(index));
  }
  if (op.num_regions() == 0) return Fail(op, "requires at least one branch");
  return CheckBranches(op);
}

Status CheckTuple(const Op& op) {
  const Type& r = op.result(0)->type();
  bool ok = r.is_tuple() && r.elements().size() == op.num_operands();
  for (size_t i = 0; ok && i < op.num_operands(); ++i)
    ok = r.elements()[i] == TypeOf(op.operand(i));
  if (!ok) {
    std::vector<Type> types = op.operand_types();
    return Fail(op, "requires result type " + Str(Type::Tuple(types)) + ", got " + Str(r));
  }
  return Status::Ok();
}

Status CheckGetTupleElement(const Op& op) {
  const Type& t = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  if (!t.is_tuple()) return Fail(op, "requires a tuple operand, got " + Str(t));
  int64_t index = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "index", Need::kRequired, index));
  const int64_t size = static_cast<int64_t>(t.elements().size());
  if (index < 0 || index >= size) {
    return Fail(op, "requires 0 <= index < size(operand) = " + Str(size) + ", got " + Str(index));
  }
  if (t.elements()[index] != r) {
    return Fail(op, "requires the result type to be element #" + Str(index) + " of " + Str(t) +
                        ", got " + Str(r));
  }
  return Status::Ok();
}

Status CheckOptimizationBarrier(const Op& op) {
  if (op.num_results() != op.num_operands()) {
    return Fail(op, "requires one result per operand (" + std::to_string(op.num_operands()) +
                        "), got " + std::to_string(op.num_results()));
  }
  for (size_t i = 0; i < op.num_operands(); ++i) {
    const Type& t = TypeOf(op.operand(i));
    JITD_RETURN_IF_ERROR(CheckTensorOrToken(op, t, "operands"));
    if (t != op.result(i)->type()) {
      return Fail(op, "requires type(operand...) = type(result...), got " + Str(t) + " and " +
                          Str(op.result(i)->type()));
    }
  }
  return Status::Ok();
}

Status CheckAfterAll(const Op& op) {
  for (const Value* v : op.operands()) {
    if (!v->type().is_token()) return Fail(op, "requires token operands, got " + Str(v->type()));
  }
  if (!op.result(0)->type().is_token()) {
    return Fail(op, "requires a token result, got " + Str(op.result(0)->type()));
  }
  return Status::Ok();
}

Status CheckCreateToken(const Op& op) {
  if (!op.result(0)->type().is_token()) {
    return Fail(op, "requires a token result, got " + Str(op.result(0)->type()));
  }
  return Status::Ok();
}

Status CheckInfeed(const Op& op) {
  if (!TypeOf(op.operand(0)).is_token()) {
    return Fail(op, "requires a token operand, got " + Str(TypeOf(op.operand(0))));
  }
  const size_t n = op.num_results();
  if (n == 0) return Fail(op, "requires at least one result (the token)");
  for (size_t i = 0; i + 1 < n; ++i) {
    if (!op.result(i)->type().is_tensor()) {
      return Fail(op, "requires tensor results before the token, got " + Str(op.result(i)->type()));
    }
  }
  if (!op.result(n - 1)->type().is_token()) {
    return Fail(op, "requires the last result to be a token, got " + Str(op.result(n - 1)->type()));
  }
  return ReadString(op, "infeed_config", Need::kOptional);
}

Status CheckOutfeed(const Op& op) {
  const size_t n = op.num_operands();
  if (n == 0 || !TypeOf(op.operand(n - 1)).is_token()) {
    return Fail(op, "requires the last operand to be a token");
  }
  for (size_t i = 0; i + 1 < n; ++i) {
    if (!IsTensor(op.operand(i))) {
      return Fail(op, "requires tensor inputs, got " + Str(TypeOf(op.operand(i))));
    }
  }
  if (!op.result(0)->type().is_token()) {
    return Fail(op, "requires a token result, got " + Str(op.result(0)->type()));
  }
  return ReadString(op, "outfeed_config", Need::kOptional);
}

Status CheckReplicaOrPartitionId(const Op& op) {
  if (!IsScalarOf(op.result(0)->type(), DType::kU32)) {
    return Fail(op, "requires a result of type tensor<ui32>, got " + Str(op.result(0)->type()));
  }
  return Status::Ok();
}

// A custom call's `operand_layouts` / `result_layouts`: one dense 1-d
// integer (MLIR index) tensor per value, a permutation of its dimensions
// (minor to major), as jax.export writes them.
Status CheckCustomCallLayouts(const Op& op, std::string_view name, const std::vector<Type>& types) {
  const Attribute* a = op.attr(name);
  if (!a) return Status::Ok();
  const auto* array = a->get_if<ArrayAttr>();
  if (!array || array->elements.size() != types.size()) {
    return Fail(op, "requires " + std::string(name) + " to be an array of " + Str(int64_t(types.size())) +
                        " layouts, one per " + (name == "operand_layouts" ? "operand" : "result"));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const auto* d = array->elements[i].get_if<DenseElementsAttr>();
    if (!d || d->type.rank() != 1 || !IsInteger(d->type.dtype())) {
      return Fail(op, "requires " + std::string(name) + "[" + Str(int64_t(i)) +
                          "] to be a dense 1-d integer (index) tensor");
    }
    auto lit = DenseElementsToLiteral(*d);
    if (!lit.ok()) return Fail(op, std::string(name) + "[" + Str(int64_t(i)) + "]: " + lit.status().message());
    const int64_t rank = types[i].is_tensor() ? types[i].rank() : -1;
    std::vector<int64_t> dims;
    for (int64_t k = 0; k < lit->num_elements(); ++k) dims.push_back(lit->GetInt(k));
    std::vector<int64_t> sorted = dims;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int64_t>(dims.size()) == rank;
    for (int64_t k = 0; ok && k < rank; ++k) ok = sorted[static_cast<size_t>(k)] == k;
    if (!ok) {
      return Fail(op, "requires " + std::string(name) + "[" + Str(int64_t(i)) + "] = " + Str(I64s(dims)) +
                          " to be a permutation of the dimensions of " + Str(types[i]));
    }
  }
  return Status::Ok();
}

Status CheckCustomCall(const Op& op) {
  JITD_RETURN_IF_ERROR(ReadString(op, "call_target_name", Need::kRequired));
  bool side_effect = false;
  JITD_RETURN_IF_ERROR(ReadBool(op, "has_side_effect", Need::kOptional, side_effect));
  std::vector<Type> results;
  for (size_t i = 0; i < op.num_results(); ++i) results.push_back(op.result(i)->type());
  JITD_RETURN_IF_ERROR(CheckCustomCallLayouts(op, "operand_layouts", op.operand_types()));
  JITD_RETURN_IF_ERROR(CheckCustomCallLayouts(op, "result_layouts", results));
  if (op.attr("operand_layouts") != nullptr && op.attr("result_layouts") == nullptr) {
    return Fail(op, "has operand_layouts without result_layouts (both or neither)");
  }
  if (const Attribute* b = op.attr("mhlo.backend_config")) {
    if (!b->is<DictionaryAttr>() && !b->is<StringAttr>()) {
      return Fail(op, "requires mhlo.backend_config to be a dictionary or a string, got " +
                          std::string(b->KindName()));
    }
  }
  // output_operand_aliases: result `output_tuple_indices[0]` (the value
  // itself when the call has one result) shares operand `operand_index`'s
  // buffer, so the two have one type.
  if (const Attribute* a = op.attr("output_operand_aliases")) {
    const auto* array = a->get_if<ArrayAttr>();
    if (!array) return Fail(op, "requires output_operand_aliases to be an array");
    for (size_t i = 0; i < array->elements.size(); ++i) {
      const auto* s = array->elements[i].get_if<StructAttr>();
      if (!s || s->name != "stablehlo.output_operand_alias") {
        return Fail(op, "requires output_operand_aliases[" + Str(int64_t(i)) +
                            "] to be a #stablehlo.output_operand_alias");
      }
      std::vector<int64_t> out_idx, in_idx;
      int64_t operand = -1;
      for (const StructField& f : s->fields) {
        if (f.name == "output_tuple_indices") out_idx = f.values;
        else if (f.name == "operand_tuple_indices") in_idx = f.values;
        else if (f.name == "operand_index" && f.values.size() == 1) operand = f.values[0];
      }
      if (operand < 0 || operand >= static_cast<int64_t>(op.num_operands())) {
        return Fail(op, "output_operand_aliases[" + Str(int64_t(i)) + "] names operand " + Str(operand) +
                            " of " + Str(int64_t(op.num_operands())));
      }
      if (out_idx.size() > 1 || !in_idx.empty()) {
        return Fail(op, "output_operand_aliases[" + Str(int64_t(i)) +
                            "] reaches into nested tuples, which jitd does not support");
      }
      int64_t result = out_idx.empty() ? 0 : out_idx[0];
      if (result < 0 || result >= static_cast<int64_t>(op.num_results()) ||
          (out_idx.empty() && op.num_results() != 1)) {
        return Fail(op, "output_operand_aliases[" + Str(int64_t(i)) + "] names result " + Str(I64s(out_idx)) +
                            " of " + Str(int64_t(op.num_results())));
      }
      const Type& rt = op.result(static_cast<size_t>(result))->type();
      const Type& ot = TypeOf(op.operand(static_cast<size_t>(operand)));
      if (rt != ot) {
        return Fail(op, "output_operand_aliases[" + Str(int64_t(i)) + "] aliases result " + Str(result) +
                            " of type " + Str(rt) + " with operand " + Str(operand) + " of type " + Str(ot));
      }
    }
  }
  return Status::Ok();
}

Status CheckTopK(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& values = op.result(0)->type();
  const Type& indices = op.result(1)->type();
  int64_t k = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "k", Need::kRequired, k));
  bool stable = false;
  JITD_RETURN_IF_ERROR(ReadBool(op, "is_stable", Need::kOptional, stable));
  if (x.rank() < 1) return Fail(op, "requires an operand of rank >= 1, got " + Str(x));
  const int64_t last = x.rank() - 1;
  if (k < 0 || k > x.dim(last)) {
    return Fail(op, "requires 0 <= k <= the operand's last dimension " + Str(x.dim(last)) +
                        ", got " + Str(k));
  }
  bool ok = values.rank() == x.rank() && values.dtype() == x.dtype();
  for (int64_t d = 0; ok && d < x.rank(); ++d) ok = values.dim(d) == (d == last ? k : x.dim(d));
  if (!ok) {
    return Fail(op, "requires values of the operand's type with the last dimension k = " + Str(k) +
                        ", got " + Str(values) + " for " + Str(x));
  }
  if (indices.dtype() != DType::kS32 || !SameShape(indices, values)) {
    return Fail(op, "requires indices of type " + Str(values.WithDType(DType::kS32)) + ", got " +
                        Str(indices));
  }
  return Status::Ok();
}

Status CheckExpect(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  switch (op.code()) {
    case OpCode::kCheckExpectEq:
    case OpCode::kCheckExpectAlmostEq:
    case OpCode::kCheckExpectClose: {
      const Type& y = TypeOf(op.operand(1));
      if (x != y)
        return Fail(op, "requires operands of one type, got " + Str(x) + " and " + Str(y));
      break;
    }
    case OpCode::kCheckExpectEqConst:
    case OpCode::kCheckExpectAlmostEqConst:
      JITD_RETURN_IF_ERROR(CheckDenseValue(op, "value", x, /*allow_resource=*/false));
      break;
    default: break;
  }
  if (op.code() == OpCode::kCheckExpectAlmostEq || op.code() == OpCode::kCheckExpectAlmostEqConst) {
    JITD_RETURN_IF_ERROR(ReadFloat(op, "tolerance", Need::kOptional));
  }
  if (op.code() == OpCode::kCheckExpectClose) {
    int64_t min_ulp = 0, max_ulp = 0;
    JITD_RETURN_IF_ERROR(ReadInt(op, "min_ulp_difference", Need::kOptional, min_ulp));
    JITD_RETURN_IF_ERROR(ReadInt(op, "max_ulp_difference", Need::kOptional, max_ulp));
    if (min_ulp < 0 || max_ulp < 0 ||
        (op.attr("max_ulp_difference") && op.attr("min_ulp_difference") && min_ulp > max_ulp)) {
      return Fail(op, "requires 0 <= min_ulp_difference <= max_ulp_difference, got " +
                          Str(min_ulp) + " and " + Str(max_ulp));
    }
  }
  if (op.code() == OpCode::kCheckExpectSerializedEq) {
    JITD_RETURN_IF_ERROR(ReadString(op, "probe_id", Need::kOptional));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// An insert-only map from finished ops to the block holding them (open
// addressing), for the "defined before use" check: one probe per operand,
// without touching the defining op or allocating a node per op.

// ---------------------------------------------------------------------------
// The ops beyond one process's dense tensors: collectives and channels (jitd
// runs one replica and one partition), dynamism (static once the shape
// operands are known), quantization, the deprecated ops, and the rest of CHLO.

// An optional 2-D integer dense attribute (replica_groups,
// source_target_pairs).
Status CheckGroups(const Op& op, std::string_view name, Need need, int64_t cols = -1) {
  const Attribute* a = op.attr(name);
  if (!a) return need == Need::kRequired ? MissingAttr(op, name) : Status::Ok();
  const auto* d = a->get_if<DenseElementsAttr>();
  if (!d || d->type.rank() != 2 || !IsInteger(d->type.dtype())) {
    return WrongAttr(op, name, "a 2-D integer dense<...> attribute", *a);
  }
  if (cols >= 0 && d->type.dim(1) != cols) {
    return Fail(op, "requires " + Quote(name) + " to have " + Str(cols) + " columns, got " +
                        Str(d->type));
  }
  return Status::Ok();
}

Status CheckOperandsMatchResults(const Op& op) {
  if (op.num_operands() != op.num_results()) {
    return Fail(op, "requires as many results as operands, got " + Str(int64_t(op.num_results())) +
                        " for " + Str(int64_t(op.num_operands())));
  }
  return Status::Ok();
}

Status CheckSameTypes(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckOperandsMatchResults(op));
  for (size_t i = 0; i < op.num_operands(); ++i) {
    if (TypeOf(op.operand(i)) != op.result(i)->type()) {
      return Fail(op, "requires result #" + std::to_string(i) + " to have the type of operand #" +
                          std::to_string(i) + ", got " + Str(TypeOf(op.operand(i))) + " and " +
                          Str(op.result(i)->type()));
    }
  }
  return Status::Ok();
}

// all_gather (C5..C6), all_to_all (C1..C9), reduce_scatter (C1..C8): result
// i is operand i with dimension `grow` multiplied and `shrink` divided by a
// factor (the group size, or split_count when given).
Status CheckResized(const Op& op, int64_t grow, int64_t shrink, int64_t factor) {
  JITD_RETURN_IF_ERROR(CheckOperandsMatchResults(op));
  for (size_t i = 0; i < op.num_operands(); ++i) {
    const Type& x = TypeOf(op.operand(i));
    const Type& r = op.result(i)->type();
    JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
    for (int64_t d : {grow, shrink}) {
      if (d >= 0 && d >= x.rank()) {
        return Fail(op, "requires the dimension " + Str(d) + " to be below rank(operand) = " +
                            Str(x.rank()) + ", got " + Str(x));
      }
    }
    bool ok = x.rank() == r.rank();
    int64_t k = factor;
    if (ok && k <= 0) {  // the group size: read it off the result
      const int64_t d = grow >= 0 ? grow : shrink;
      const int64_t a = grow >= 0 ? r.dim(d) : x.dim(d), b = grow >= 0 ? x.dim(d) : r.dim(d);
      k = b > 0 && a % b == 0 ? a / b : -1;
      ok = k > 0;
    }
    for (int64_t d = 0; ok && d < x.rank(); ++d) {
      int64_t want = x.dim(d);
      if (d == grow) want *= k;
      if (d == shrink) {
        if (want % k != 0) ok = false;
        want /= k;
      }
      ok = ok && r.dim(d) == want;
    }
    if (!ok) {
      return Fail(op, "requires result #" + std::to_string(i) + " to be operand #" +
                          std::to_string(i) + " resized along its dimensions by the group size, got " +
                          Str(x) + " and " + Str(r));
    }
  }
  return Status::Ok();
}

Status CheckAllGather(const Op& op) {
  int64_t dim = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "all_gather_dim", Need::kRequired, dim));
  JITD_RETURN_IF_ERROR(CheckGroups(op, "replica_groups", Need::kOptional));
  if (dim < 0) return Fail(op, "requires all_gather_dim >= 0, got " + Str(dim));
  return CheckResized(op, dim, -1, 0);
}

Status CheckAllToAll(const Op& op) {
  int64_t split = 0, concat = 0, count = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "split_dimension", Need::kRequired, split));
  JITD_RETURN_IF_ERROR(ReadInt(op, "concat_dimension", Need::kRequired, concat));
  JITD_RETURN_IF_ERROR(ReadInt(op, "split_count", Need::kRequired, count));
  JITD_RETURN_IF_ERROR(CheckGroups(op, "replica_groups", Need::kOptional));
  if (split < 0 || concat < 0 || count <= 0) {
    return Fail(op, "requires split_dimension >= 0, concat_dimension >= 0 and split_count > 0, got " +
                        Str(split) + ", " + Str(concat) + " and " + Str(count));
  }
  if (split == concat) return CheckSameTypes(op);
  return CheckResized(op, concat, split, count);
}

Status CheckReduceScatter(const Op& op) {
  int64_t dim = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "scatter_dimension", Need::kRequired, dim));
  JITD_RETURN_IF_ERROR(CheckGroups(op, "replica_groups", Need::kOptional));
  if (dim < 0) return Fail(op, "requires scatter_dimension >= 0, got " + Str(dim));
  JITD_RETURN_IF_ERROR(CheckResized(op, -1, dim, 0));
  return CheckReducerBody(op, 0, "computation", op.operands().subspan(0, 1));
}

Status CheckAllReduce(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckGroups(op, "replica_groups", Need::kOptional));
  JITD_RETURN_IF_ERROR(CheckOperandsMatchResults(op));
  for (size_t i = 0; i < op.num_operands(); ++i) {
    if (!SameShape(TypeOf(op.operand(i)), op.result(i)->type())) {
      return Fail(op, "requires result #" + std::to_string(i) + " to have the shape of operand #" +
                          std::to_string(i) + ", got " + Str(TypeOf(op.operand(i))) + " and " +
                          Str(op.result(i)->type()));
    }
    JITD_RETURN_IF_ERROR(CheckReducerBody(op, 0, "computation", op.operands().subspan(i, 1)));
  }
  return Status::Ok();
}

Status CheckCollectivePermute(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckGroups(op, "source_target_pairs", Need::kRequired, 2));
  return CheckSameTypes(op);
}

// collective_broadcast (C3..C5): results take the operands' types; with
// has_dynamic_root the last operand is the roots, a tensor<Nxi32> for the
// N results.
Status CheckCollectiveBroadcast(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckGroups(op, "replica_groups", Need::kOptional));
  const ir::Attribute* dynamic = op.attr("has_dynamic_root");
  const bool dynamic_root = dynamic && (dynamic->is<ir::UnitAttr>() || (dynamic->is<bool>() && dynamic->as<bool>()));
  if (!dynamic_root) {
    if (op.num_operands() < 1) return Fail(op, "requires at least one operand (C3)");
    return CheckSameTypes(op);
  }
  const size_t n = op.num_results();
  if (op.num_operands() < 2 || op.num_operands() != n + 1) {
    return Fail(op, "with has_dynamic_root requires one result per operand but the last (the roots), got " +
                        Str(int64_t(op.num_results())) + " for " + Str(int64_t(op.num_operands())) + " (C4, C5)");
  }
  const Type roots = TypeOf(op.operand(n));
  if (roots != Type::Tensor(DType::kS32, {static_cast<int64_t>(n)})) {
    return Fail(op, "with has_dynamic_root requires its last operand to be tensor<" + std::to_string(n) +
                        "xi32>, got " + Str(roots) + " (C4)");
  }
  for (size_t i = 0; i < n; ++i) {
    if (TypeOf(op.operand(i)) != op.result(i)->type()) {
      return Fail(op, "requires result #" + std::to_string(i) + " to have the type of operand #" +
                          std::to_string(i) + ", got " + Str(TypeOf(op.operand(i))) + " and " +
                          Str(op.result(i)->type()) + " (C4)");
    }
  }
  return Status::Ok();
}

// interpreter.run_parallel: `programs` is a non-empty grid (rows = replicas,
// columns = partitions) of function symbols; `infeed`, when present, a list
// of them. Whether the functions exist and take the operands is checked by
// its runner (tools/conformance), which splits the operands between them.
Status CheckRunParallel(const Op& op) {
  const ir::Attribute* programs = op.attr("programs");
  const auto* rows = programs ? programs->get_if<ir::ArrayAttr>() : nullptr;
  if (!rows || rows->elements.empty()) {
    return Fail(op, "requires a non-empty 'programs' array of arrays of function symbols");
  }
  size_t columns = 0;
  for (const ir::Attribute& row : rows->elements) {
    const auto* r = row.get_if<ir::ArrayAttr>();
    if (!r || r->elements.empty() || (columns && r->elements.size() != columns)) {
      return Fail(op, "requires 'programs' rows of the same non-zero number of function symbols");
    }
    columns = r->elements.size();
    for (const ir::Attribute& f : r->elements) {
      if (!f.is<ir::SymbolRefAttr>()) return Fail(op, "requires function symbols in 'programs'");
    }
  }
  if (const ir::Attribute* infeed = op.attr("infeed")) {
    const auto* list = infeed->get_if<ir::ArrayAttr>();
    if (!list) return Fail(op, "requires 'infeed' to be an array of function symbols");
    for (const ir::Attribute& f : list->elements) {
      if (!f.is<ir::SymbolRefAttr>()) return Fail(op, "requires function symbols in 'infeed'");
    }
  }
  return Status::Ok();
}

// send(inputs..., token) -> token ; recv(token) -> (results..., token).
Status CheckSendRecv(const Op& op) {
  const bool send = op.code() == OpCode::kSend;
  const Value* token = send ? (op.num_operands() ? op.operand(op.num_operands() - 1) : nullptr)
                            : (op.num_results() ? op.result(op.num_results() - 1) : nullptr);
  if (!token || !TypeOf(token).is_token()) {
    return Fail(op, send ? "requires its last operand to be a !stablehlo.token"
                         : "requires its last result to be a !stablehlo.token");
  }
  if (send && (op.num_results() != 1 || !op.result(0)->type().is_token())) {
    return Fail(op, "requires one !stablehlo.token result");
  }
  if (!send && (op.num_operands() != 1 || !TypeOf(op.operand(0)).is_token())) {
    return Fail(op, "requires one !stablehlo.token operand");
  }
  return Status::Ok();
}

// A 1-D integer tensor operand holding `count` values (-1: any count).
Status CheckShapeOperand(const Op& op, size_t i, std::string_view name, int64_t count) {
  const Type& t = TypeOf(op.operand(i));
  if (t.rank() != 1 || !IsInteger(t.dtype()) || (count >= 0 && t.dim(0) != count)) {
    return Fail(op, "requires " + std::string(name) + " to be a 1-D integer tensor" +
                        (count >= 0 ? " of " + Str(count) + " values" : std::string()) + ", got " +
                        Str(t));
  }
  return Status::Ok();
}

Status CheckDynamicIota(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 0, "output_shape", op.result(0)->type().rank()));
  return CheckIota(op);
}

Status CheckDynamicReshape(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 1, "output_shape", op.result(0)->type().rank()));
  return CheckReshape(op);
}

Status CheckDynamicBroadcastInDim(const Op& op) {
  JITD_RETURN_IF_ERROR(
      CheckShapeOperand(op, 1, "output_dimensions", op.result(0)->type().rank()));
  return CheckBroadcastInDim(op);
}

Status CheckDynamicPad(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  if (!IsScalarOf(TypeOf(op.operand(1)), x.dtype())) {
    return Fail(op, "requires padding_value to be a 0-d tensor of " + Str(x.dtype()) + ", got " +
                        Str(TypeOf(op.operand(1))));
  }
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 2, "edge_padding_low", x.rank()));
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 3, "edge_padding_high", x.rank()));
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 4, "interior_padding", x.rank()));
  if (r.rank() != x.rank()) {
    return Fail(op, "requires rank(result) = rank(operand), got " + Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckRealDynamicSlice(const Op& op) {
  const Type& x = TypeOf(op.operand(0));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 1, "start_indices", x.rank()));
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 2, "limit_indices", x.rank()));
  JITD_RETURN_IF_ERROR(CheckShapeOperand(op, 3, "strides", x.rank()));
  if (r.rank() != x.rank()) {
    return Fail(op, "requires rank(result) = rank(operand), got " + Str(x) + " and " + Str(r));
  }
  return Status::Ok();
}

Status CheckDynamicGather(const Op& op) {
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, TypeOf(op.operand(0)), op.result(0)->type()));
  return CheckShapeOperand(op, 2, "slice_sizes", TypeOf(op.operand(0)).rank());
}

Status CheckDynamicConv(const Op& op) {
  JITD_ASSIGN_OR_RETURN(const ConvDimensionNumbers* dn,
                        CheckConvLayouts(op, TypeOf(op.operand(0)).rank()));
  (void)dn;
  const Type& p = TypeOf(op.operand(2));
  if (p.rank() != 2 || p.dim(1) != 2 || !IsInteger(p.dtype())) {
    return Fail(op, "requires padding to be an Nx2 integer tensor, got " + Str(p));
  }
  return Status::Ok();
}

// uniform_quantize (spec (C1), (C2)): float or quantized operand, quantized
// result of the same shape whose expressed type is the operand's float type
// (or its expressed type). uniform_dequantize: quantized operand, float
// result of the same shape and the operand's expressed type.
Status CheckQuantizeOp(const Op& op) {
  const Type& in = TypeOf(op.operand(0));
  const Type& out = op.result(0)->type();
  if (!in.is_tensor() || !out.is_tensor()) return Fail(op, "requires tensor operand and result");
  if (in.dims() != out.dims()) {
    return Fail(op, "(C1) requires the result shape to equal the operand's, got " + Str(in) +
                        " and " + Str(out));
  }
  if (op.code() == OpCode::kUniformQuantize) {
    if (!out.is_quantized()) {
      return Fail(op, "requires a quantized result (!quant.uniform), got " + Str(out));
    }
    if (!in.is_quantized() && !IsFloat(in.dtype())) {
      return Fail(op, "requires a float or quantized operand, got " + Str(in));
    }
    const DType expressed = in.is_quantized() ? in.quant()->expressed : in.dtype();
    if (out.quant()->expressed != expressed) {
      return Fail(op, "(C2) requires the result's expressed type to be " +
                          std::string(DTypeName(expressed)) + ", got " + Str(out));
    }
    return Status::Ok();
  }
  if (!in.is_quantized()) return Fail(op, "requires a quantized operand (!quant.uniform), got " + Str(in));
  if (out.is_quantized() || out.dtype() != in.quant()->expressed) {
    return Fail(op, "(C2) requires the result element type to be the operand's expressed type " +
                        std::string(DTypeName(in.quant()->expressed)) + ", got " + Str(out));
  }
  return Status::Ok();
}

// async_start (spec.md): one block holding one op of (C2)'s list and a
// return; the op takes exactly async_start's operands (C3) — used directly
// (the spec's form: the region captures them) or through block arguments of
// their types — and the result is future<T> for the op's result types T (C4).
Status CheckAsyncStart(const Op& op) {
  const Type& result = op.result(0)->type();
  if (!result.is_future()) {
    return Fail(op, "requires a !stablehlo.future result, got " + Str(result));
  }
  for (size_t i = 0; i < op.num_operands(); ++i) {
    const Type& t = TypeOf(op.operand(i));
    if (!t.is_tensor() || (t.is_quantized() && t.quant()->per_axis())) {
      return Fail(op, "requires operand #" + Str(static_cast<int64_t>(i)) +
                          " to be a tensor or per-tensor quantized tensor, got " + Str(t));
    }
  }
  if (op.region(0).num_blocks() != 1) return Fail(op, "requires a body of one block");
  const Block& body = Body(op, 0);
  if (body.ops().size() != 2) {
    return Fail(op, "requires the body to hold a single operation and a return (C1), got " +
                        Str(static_cast<int64_t>(body.ops().size())) + " ops");
  }
  const Op& inner = *body.ops()[0];
  switch (inner.code()) {
    case OpCode::kAllReduce:
    case OpCode::kAllGather:
    case OpCode::kAllToAll:
    case OpCode::kCollectivePermute:
    case OpCode::kReduceScatter:
    case OpCode::kCollectiveBroadcast:
    case OpCode::kSlice:
    case OpCode::kDynamicSlice:
    case OpCode::kDynamicUpdateSlice: break;
    default:
      return Fail(op, "requires the op in its body to be a collective (all_reduce, all_gather, "
                      "all_to_all, collective_permute, reduce_scatter, collective_broadcast) or "
                      "a slice (slice, dynamic_slice, dynamic_update_slice) (C2), got '" +
                          std::string(inner.name()) + "'");
  }
  // (C3): the body's op takes async_start's operands, in order.
  const bool through_args = body.num_args() > 0;
  if (through_args) JITD_RETURN_IF_ERROR(CheckRegionArgs(op, 0, "body", op.operands()));
  if (inner.num_operands() != op.num_operands()) {
    return Fail(op, "requires the op in its body to take the " +
                        Str(static_cast<int64_t>(op.num_operands())) +
                        " operands of async_start (C3), it takes " +
                        Str(static_cast<int64_t>(inner.num_operands())));
  }
  for (size_t i = 0; i < op.num_operands(); ++i) {
    const Value* want = through_args ? body.arg(i) : op.operand(i);
    if (inner.operand(i) != want) {
      return Fail(op, "requires operand #" + Str(static_cast<int64_t>(i)) +
                          " of the op in its body to be async_start's operand #" +
                          Str(static_cast<int64_t>(i)) + (through_args ? " (block argument)" : "") +
                          " (C3)");
    }
  }
  // The return gives the op's results, which are the future's types (C4).
  const Op& ret = *body.terminator();
  if (ret.code() != OpCode::kReturn || ret.num_operands() != inner.num_results()) {
    return Fail(op, "requires the body to end in a stablehlo.return of its op's results");
  }
  for (size_t i = 0; i < ret.num_operands(); ++i) {
    if (ret.operand(i) != inner.result(i)) {
      return Fail(op, "requires the body's return to give its op's results in order");
    }
  }
  const auto& elements = result.elements();
  bool same = elements.size() == inner.num_results();
  for (size_t i = 0; same && i < elements.size(); ++i) {
    same = elements[i] == inner.result(i)->type();
  }
  if (!same) {
    std::vector<Type> got;
    for (size_t i = 0; i < inner.num_results(); ++i) got.push_back(inner.result(i)->type());
    return Fail(op, "requires its result to be " + Str(Type::Future(std::move(got))) +
                        " for the types its body's op returns (C4), got " + Str(result));
  }
  return Status::Ok();
}

// async_done: future<T...> in, T... out (C1).
Status CheckAsyncDone(const Op& op) {
  const Type& future = TypeOf(op.operand(0));
  if (!future.is_future()) {
    return Fail(op, "requires a !stablehlo.future operand, got " + Str(future));
  }
  const auto& elements = future.elements();
  bool same = elements.size() == op.num_results();
  for (size_t i = 0; same && i < elements.size(); ++i) same = elements[i] == op.result(i)->type();
  if (!same) {
    std::vector<Type> results;
    for (size_t i = 0; i < op.num_results(); ++i) results.push_back(op.result(i)->type());
    auto list = [](const std::vector<Type>& types) {
      std::string out = "(";
      for (size_t i = 0; i < types.size(); ++i) out += (i ? ", " : "") + Str(types[i]);
      return out + ")";
    };
    return Fail(op, "requires the results to be the future's types (C1): " + Str(future) +
                        " gives " + list(elements) + ", got " + list(results));
  }
  return Status::Ok();
}

// Futures are made by async_start and taken by async_done; calls, returns
// and function signatures pass them on. Any other op with a future operand
// or result is refused here, naming the value.
Status CheckFutureUses(const Op& op) {
  switch (op.code()) {
    case OpCode::kAsyncStart:
    case OpCode::kAsyncDone:
    case OpCode::kFuncCall:
    case OpCode::kFuncReturn:
    case OpCode::kReturn: return Status::Ok();
    default: break;
  }
  for (size_t i = 0; i < op.num_operands(); ++i) {
    if (TypeOf(op.operand(i)).is_future()) {
      return Fail(op, "takes a future as operand #" + Str(static_cast<int64_t>(i)) + " (" +
                          Str(TypeOf(op.operand(i))) +
                          "); only async_done (and calls and returns) take futures");
    }
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    if (op.result(i)->type().is_future()) {
      return Fail(op, "has a future result #" + Str(static_cast<int64_t>(i)) + " (" +
                          Str(op.result(i)->type()) + "); only async_start makes futures");
    }
  }
  return Status::Ok();
}

Status CheckEinsum(const Op& op) {
  JITD_RETURN_IF_ERROR(ReadString(op, "einsum_config", Need::kRequired));
  for (const Value* v : op.operands()) {
    JITD_RETURN_IF_ERROR(CheckSameElementType(op, TypeOf(v), op.result(0)->type()));
  }
  return Status::Ok();
}

Status CheckTorchIndexSelect(const Op& op) {
  int64_t dim = 0, batch = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "dim", Need::kRequired, dim));
  JITD_RETURN_IF_ERROR(ReadInt(op, "batch_dims", Need::kRequired, batch));
  const Type& x = TypeOf(op.operand(0));
  const Type& idx = TypeOf(op.operand(1));
  const Type& r = op.result(0)->type();
  JITD_RETURN_IF_ERROR(CheckSameElementType(op, x, r));
  JITD_RETURN_IF_ERROR(CheckCategory(op, "index", idx, kInt));
  if (dim < 0 || dim >= x.rank() || batch < 0 || batch > dim || batch > idx.rank()) {
    return Fail(op, "requires 0 <= batch_dims <= dim < rank(operand) and batch_dims <= "
                    "rank(index), got dim " + Str(dim) + " and batch_dims " + Str(batch) +
                    " for " + Str(x) + " and " + Str(idx));
  }
  // shape(result) = operand[:dim] ++ index[batch_dims:] ++ operand[dim+1:]
  std::vector<int64_t> want(x.dims().begin(), x.dims().begin() + dim);
  want.insert(want.end(), idx.dims().begin() + batch, idx.dims().end());
  want.insert(want.end(), x.dims().begin() + dim + 1, x.dims().end());
  if (!SameDims(r, want)) {
    return Fail(op, "requires shape(result) = operand dims before dim ++ index dims after "
                    "batch_dims ++ operand dims after dim = " + Str(I64s(want)) + ", got " + Str(r));
  }
  return Status::Ok();
}

// chlo.broadcast_*: numpy broadcasting (trailing dimensions aligned), or
// broadcast_dimensions mapping the lower-ranked operand into the other.
Status CheckChloBroadcast(const Op& op) {
  const Type& r = op.result(0)->type();
  I64s bdims;
  bool have = false;
  JITD_RETURN_IF_ERROR(ReadI64s(op, "broadcast_dimensions", Need::kOptional, bdims, &have));
  int64_t rank = 0;
  for (const Value* v : op.operands()) rank = std::max(rank, TypeOf(v).rank());
  if (r.rank() != rank) {
    return Fail(op, "requires rank(result) = the largest operand rank " + Str(rank) + ", got " +
                        Str(r));
  }
  std::vector<int64_t> shape(static_cast<size_t>(rank), 1);
  for (const Value* v : op.operands()) {
    const Type& t = TypeOf(v);
    for (int64_t d = 0; d < t.rank(); ++d) {
      int64_t to = rank - t.rank() + d;
      if (have && t.rank() < rank) {
        if (static_cast<int64_t>(bdims.size()) != t.rank() || bdims[d] < 0 || bdims[d] >= rank) {
          return Fail(op, "requires broadcast_dimensions to map each dimension of " + Str(t) +
                              " into rank " + Str(rank) + ", got " + Str(bdims));
        }
        to = bdims[d];
      }
      int64_t& s = shape[static_cast<size_t>(to)];
      if (t.dim(d) != 1 && s != 1 && s != t.dim(d)) {
        return Fail(op, "has operands whose shapes do not broadcast together, got " +
                            Str(TypeOf(op.operand(0))) + " and " + Str(t));
      }
      if (t.dim(d) != 1) s = t.dim(d);
    }
  }
  if (!SameDims(r, shape)) {
    return Fail(op, "requires the broadcast shape " + Str(I64s(shape)) + " as the result's, got " +
                        Str(r));
  }
  const size_t first = op.code() == OpCode::kChloBroadcastSelect ? 1 : 0;
  const DType e = TypeOf(op.operand(first)).dtype();
  for (size_t i = first; i < op.num_operands(); ++i) {
    if (TypeOf(op.operand(i)).dtype() != e) {
      return Fail(op, "requires operands of one element type, got " +
                          Str(TypeOf(op.operand(first))) + " and " + Str(TypeOf(op.operand(i))));
    }
  }
  if (first == 1 && TypeOf(op.operand(0)).dtype() != DType::kPred) {
    return Fail(op, "requires a boolean pred, got " + Str(TypeOf(op.operand(0))));
  }
  DType want = e;
  if (op.code() == OpCode::kChloBroadcastCompare) want = DType::kPred;
  if (op.code() == OpCode::kChloBroadcastComplex) {
    if (e != DType::kF32 && e != DType::kF64) {
      return Fail(op, "requires f32 or f64 operands, got " + Str(TypeOf(op.operand(0))));
    }
    want = e == DType::kF32 ? DType::kC64 : DType::kC128;
  }
  if (r.dtype() != want) {
    return Fail(op, "requires the result element type " + Str(want) + ", got " + Str(r));
  }
  if (op.code() == OpCode::kChloBroadcastCompare) {
    std::string_view dir;
    JITD_RETURN_IF_ERROR(ReadEnum(op, "comparison_direction", Need::kRequired,
                                  {"EQ", "NE", "GE", "GT", "LE", "LT"}, dir));
  }
  return Status::Ok();
}

Status CheckChloConstantLike(const Op& op) {
  const Attribute* a = op.attr("value");
  if (!a) return MissingAttr(op, "value");
  if (!a->is<IntegerAttr>() && !a->is<FloatAttr>() && !a->is<bool>()) {
    return WrongAttr(op, "value", "an integer, float or boolean", *a);
  }
  if (!SameShape(TypeOf(op.operand(0)), op.result(0)->type())) {
    return Fail(op, "requires the operand's shape as the result's, got " +
                        Str(TypeOf(op.operand(0))) + " and " + Str(op.result(0)->type()));
  }
  return Status::Ok();
}

Status CheckRaggedDot(const Op& op) {
  const Type& lhs = TypeOf(op.operand(0));
  const Type& rhs = TypeOf(op.operand(1));
  JITD_RETURN_IF_ERROR(CheckCategory(op, "group_sizes", TypeOf(op.operand(2)), kInt));
  if (lhs.dtype() != rhs.dtype()) {
    return Fail(op, "requires element_type(lhs) = element_type(rhs), got " + Str(lhs) + " and " +
                        Str(rhs));
  }
  std::array<I64s, 6> f;
  JITD_RETURN_IF_ERROR(ReadStruct(op, "ragged_dot_dimension_numbers", "chlo.ragged_dot",
                                  std::array<std::string_view, 6>{"lhs_batching_dimensions",
                                                                  "rhs_batching_dimensions",
                                                                  "lhs_contracting_dimensions",
                                                                  "rhs_contracting_dimensions",
                                                                  "lhs_ragged_dimensions",
                                                                  "rhs_group_dimensions"},
                                  f));
  const auto& [lb, rb, lc, rc, lr, rg] = f;
  JITD_RETURN_IF_ERROR(CheckInRange(op, "lhs dimensions", lb, lhs.rank(), "rank(lhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "lhs dimensions", lc, lhs.rank(), "rank(lhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "lhs_ragged_dimensions", lr, lhs.rank(), "rank(lhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "rhs dimensions", rb, rhs.rank(), "rank(rhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "rhs dimensions", rc, rhs.rank(), "rank(rhs)"));
  JITD_RETURN_IF_ERROR(CheckInRange(op, "rhs_group_dimensions", rg, rhs.rank(), "rank(rhs)"));
  if (lr.size() != 1 || rg.size() > 1 || lb.size() != rb.size() || lc.size() != rc.size()) {
    return Fail(op, "requires one lhs ragged dimension, at most one rhs group dimension, and as "
                    "many lhs as rhs batching and contracting dimensions");
  }
  const bool ragged_batch = std::find(lb.begin(), lb.end(), lr[0]) != lb.end();
  const bool ragged_contracting = std::find(lc.begin(), lc.end(), lr[0]) != lc.end();
  if ((ragged_batch || ragged_contracting) == (rg.size() == 1)) {
    return Fail(op, "requires an rhs group dimension exactly when the lhs ragged dimension is "
                    "neither a batching nor a contracting dimension (chlo.md's mode 1)");
  }
  // Result: [groups] (mode 2) ++ batch ++ lhs free ++ rhs free (less the group).
  const Type& sizes = TypeOf(op.operand(2));
  std::vector<int64_t> want;
  if (ragged_contracting) want.push_back(sizes.rank() ? sizes.dims().back() : 1);
  for (int64_t d : lb) want.push_back(lhs.dim(d));
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (std::find(lb.begin(), lb.end(), d) == lb.end() && std::find(lc.begin(), lc.end(), d) == lc.end()) {
      want.push_back(lhs.dim(d));
    }
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (std::find(rb.begin(), rb.end(), d) == rb.end() && std::find(rc.begin(), rc.end(), d) == rc.end() &&
        std::find(rg.begin(), rg.end(), d) == rg.end()) {
      want.push_back(rhs.dim(d));
    }
  }
  if (!SameDims(op.result(0)->type(), want)) {
    return Fail(op, "requires the result shape " + Str(I64s(want)) + ", got " + Str(op.result(0)->type()));
  }
  return Status::Ok();
}

// chlo.scan: operandSegmentSizes = [inputs, inits]; the body takes each
// input without `dimension` and the carries (the inits' types), and returns
// each output without `dimension` and the next carries; the results are the
// outputs (the body's slices stacked along `dimension`) and the carries.
Status CheckScan(const Op& op) {
  int64_t dim = 0;
  JITD_RETURN_IF_ERROR(ReadInt(op, "dimension", Need::kRequired, dim));
  const Attribute* a = op.attr("operandSegmentSizes");
  const auto* seg = a ? a->get_if<DenseArrayAttr>() : nullptr;
  if (!seg || seg->ints.size() != 2 || seg->ints[0] < 0 || seg->ints[1] < 0 ||
      static_cast<size_t>(seg->ints[0] + seg->ints[1]) != op.num_operands()) {
    return Fail(op, "requires operandSegmentSizes = array<i32: inputs, inits> adding up to its " +
                        std::to_string(op.num_operands()) + " operands");
  }
  const size_t num_inputs = static_cast<size_t>(seg->ints[0]);
  const size_t num_carries = static_cast<size_t>(seg->ints[1]);
  if (op.num_results() < num_carries) {
    return Fail(op, "requires a result for each of its " + std::to_string(num_carries) + " inits");
  }
  const size_t num_outputs = op.num_results() - num_carries;
  int64_t length = -1;
  for (size_t i = 0; i < num_inputs; ++i) {
    const Type& t = TypeOf(op.operand(i));
    if (dim < 0 || dim >= t.rank() || (length >= 0 && t.dim(dim) != length)) {
      return Fail(op, "requires every input to have dimension " + Str(dim) + " of one size, got " + Str(t));
    }
    length = t.dim(dim);
  }
  const Block& body = Body(op, 0);
  if (body.num_args() != num_inputs + num_carries) {
    return Fail(op, "requires its body to take " + std::to_string(num_inputs + num_carries) +
                        " arguments (input slices, then carries), got " + std::to_string(body.num_args()));
  }
  const auto without_dim = [&](const Type& t) {
    std::vector<int64_t> dims = t.dims();
    dims.erase(dims.begin() + dim);
    return Type::Tensor(t.dtype(), dims);
  };
  for (size_t i = 0; i < num_inputs; ++i) {
    if (body.arg(i)->type() != without_dim(TypeOf(op.operand(i)))) {
      return Fail(op, "requires body argument #" + std::to_string(i) + " to be " +
                          Str(without_dim(TypeOf(op.operand(i)))) + ", got " + Str(body.arg(i)->type()));
    }
  }
  Values ret = Returned(body);
  if (ret.size() != op.num_results()) {
    return Fail(op, "requires its body to return " + std::to_string(op.num_results()) +
                        " values (output slices, then carries), got " + std::to_string(ret.size()));
  }
  for (size_t i = 0; i < num_carries; ++i) {
    const Type& init = TypeOf(op.operand(num_inputs + i));
    if (body.arg(num_inputs + i)->type() != init || TypeOf(ret[num_outputs + i]) != init ||
        op.result(num_outputs + i)->type() != init) {
      return Fail(op, "requires carry #" + std::to_string(i) + " to keep its init's type " + Str(init) +
                          " as body argument, returned value and result");
    }
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    const Type& r = op.result(i)->type();
    if (dim >= r.rank() || (length >= 0 && r.dim(dim) != length) || without_dim(r) != TypeOf(ret[i])) {
      return Fail(op, "requires output #" + std::to_string(i) + " " + Str(r) +
                          " to stack the body's " + Str(TypeOf(ret[i])) + " along dimension " + Str(dim));
    }
  }
  return Status::Ok();
}

class FinishedOps {
 public:
  // Sized for about `expected` ops without growing.
  explicit FinishedOps(size_t expected) {
    size_t capacity = 1024;
    while (capacity < 4 * expected) capacity *= 2;
    slots_.assign(capacity, Slot{});
  }

  void Insert(const Op* op, const Block* block) {
    if (2 * (size_ + 1) > slots_.size()) Grow();
    size_t i = Index(op, slots_.size());
    while (slots_[i].op && slots_[i].op != op) i = (i + 1) & (slots_.size() - 1);
    if (!slots_[i].op) ++size_;
    slots_[i] = {op, block};
  }

  // The block of a finished op, or null.
  const Block* Find(const Op* op) const {
    for (size_t i = Index(op, slots_.size()); slots_[i].op; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].op == op) return slots_[i].block;
    }
    return nullptr;
  }

 private:
  struct Slot {
    const Op* op = nullptr;
    const Block* block = nullptr;
  };

  static size_t Index(const Op* p, size_t capacity) {
    const uint64_t h = (reinterpret_cast<uintptr_t>(p) >> 3) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 32) & (capacity - 1);
  }

  void Grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    size_ = 0;
    for (const Slot& s : old) {
      if (s.op) Insert(s.op, s.block);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

// ---------------------------------------------------------------------------
// The walk.

size_t CountTopLevelOps(const Module& module) {
  size_t n = 0;
  for (const auto& fn : module.functions()) {
    if (fn && fn->entry()) n += fn->entry()->ops().size();
  }
  return n;
}

class Verifier {
 public:
  explicit Verifier(const Module& module) : module_(module), done_(CountTopLevelOps(module)) {}

  Status Run() {
    // Signatures first: calls compare against (and print) their callee's.
    for (const auto& fn : module_.functions()) {
      if (!fn) return InvalidArgument("0:0: 'builtin.module' op holds a null function");
      JITD_RETURN_IF_ERROR(VerifySignature(*fn));
    }
    for (const auto& fn : module_.functions()) JITD_RETURN_IF_ERROR(VerifyFunction(*fn));
    return Status::Ok();
  }

 private:
  static Status FuncFail(const Function& fn, std::string rule) {
    return InvalidArgument(fn.loc().ToString() + ": 'func.func' op " + std::move(rule));
  }

  Status VerifySignature(const Function& fn) {
    for (const auto* list : {&fn.arg_types(), &fn.result_types()}) {
      for (const Type& t : *list) {
        if (std::string p = TypeProblem(t, 0, true); !p.empty()) {
          return FuncFail(fn, "@" + fn.name() + " has an invalid type in its signature: " + p);
        }
      }
    }
    if (!fn.arg_attrs().empty() && fn.arg_attrs().size() != fn.arg_types().size()) {
      return FuncFail(fn, "@" + fn.name() + " has " + std::to_string(fn.arg_attrs().size()) +
                              " argument attribute lists for " +
                              std::to_string(fn.arg_types().size()) + " arguments");
    }
    if (!fn.result_attrs().empty() && fn.result_attrs().size() != fn.result_types().size()) {
      return FuncFail(fn, "@" + fn.name() + " has " + std::to_string(fn.result_attrs().size()) +
                              " result attribute lists for " +
                              std::to_string(fn.result_types().size()) + " results");
    }
    // jax.export's `mhlo.layout_mode`: jitd's buffers are row-major, so a
    // parameter or result may ask for "default", "auto" or the row-major
    // layout spelled out ("{1,0}"); any other layout is refused by name.
    for (int side = 0; side < 2; ++side) {
      const auto& lists = side == 0 ? fn.arg_attrs() : fn.result_attrs();
      const auto& types = side == 0 ? fn.arg_types() : fn.result_types();
      for (size_t i = 0; i < lists.size(); ++i) {
        const Attribute* a = lists[i].Find("mhlo.layout_mode");
        if (!a) continue;
        const auto* s = a->get_if<StringAttr>();
        const std::string what = std::string(side == 0 ? "argument #" : "result #") + std::to_string(i);
        if (!s) return FuncFail(fn, "@" + fn.name() + " " + what + " has a non-string mhlo.layout_mode");
        if (s->value == "default" || s->value == "auto") continue;
        std::string row_major = "{";
        const int64_t rank = types[i].is_tensor() ? types[i].rank() : 0;
        for (int64_t d = rank - 1; d >= 0; --d) row_major += std::to_string(d) + (d ? "," : "");
        row_major += "}";
        std::string written;
        for (char c : s->value) if (c != ' ') written += c;
        if (written != row_major) {
          return FuncFail(fn, "@" + fn.name() + " " + what + " has mhlo.layout_mode \"" + s->value +
                                  "\", a non-default layout jitd does not support (its buffers are "
                                  "row-major, " + row_major + ")");
        }
      }
    }
    return Status::Ok();
  }

  Status VerifyFunction(const Function& fn) {
    function_ = &fn;
    nesting_ = 0;
    const Region& body = fn.body();
    if (body.empty()) {
      if (fn.is_public()) {
        return FuncFail(fn,
                        "@" + fn.name() + " is a declaration (no body), which cannot be public");
      }
      return Status::Ok();
    }
    if (body.num_blocks() != 1) {
      return FuncFail(fn, "@" + fn.name() + " requires a body of one block, got " +
                              std::to_string(body.num_blocks()));
    }
    const Block& entry = body.block(0);
    if (entry.num_args() != fn.arg_types().size()) {
      return FuncFail(fn, "@" + fn.name() + " has " + std::to_string(entry.num_args()) +
                              " entry block arguments for " +
                              std::to_string(fn.arg_types().size()) + " parameters");
    }
    for (size_t i = 0; i < entry.num_args(); ++i) {
      if (std::string p = TypeProblem(entry.arg(i)->type(), 0, true); !p.empty()) {
        return FuncFail(fn, "@" + fn.name() + " has entry block argument #" + std::to_string(i) +
                                " of an invalid type: " + p);
      }
      if (entry.arg(i)->type() != fn.arg_types()[i]) {
        return FuncFail(fn, "@" + fn.name() + " has entry block argument #" + std::to_string(i) +
                                " of type " + Str(entry.arg(i)->type()) +
                                ", but its signature says " + Str(fn.arg_types()[i]));
      }
    }
    const Op* last = entry.terminator();
    if (!last || last->code() != OpCode::kFuncReturn) {
      return FuncFail(fn, "@" + fn.name() + " requires its body to end with 'func.return', got " +
                              (last ? Quote(SafeName(*last)) : std::string("an empty block")));
    }
    return VerifyBlockOps(entry);
  }

  // Checks a region block of `op` (structure and arguments), then its ops.
  Status VerifyRegion(const Op& op, size_t index) {
    const Region& region = op.region(index);
    if (region.num_blocks() != 1) {
      return Fail(op, "requires region #" + std::to_string(index) + " to have one block, got " +
                          std::to_string(region.num_blocks()));
    }
    const Block& block = region.block(0);
    for (size_t i = 0; i < block.num_args(); ++i) {
      if (std::string p = TypeProblem(block.arg(i)->type(), 0, true); !p.empty()) {
        return Fail(op, "has region #" + std::to_string(index) + " argument #" + std::to_string(i) +
                            " of an invalid type: " + p);
      }
    }
    const Op* last = block.terminator();
    if (!last || last->code() != OpCode::kReturn) {
      return Fail(op, "requires region #" + std::to_string(index) +
                          " to end with 'stablehlo.return', got " +
                          (last ? Quote(SafeName(*last)) : std::string("an empty block")));
    }
    return VerifyBlockOps(block);
  }

  Status VerifyBlockOps(const Block& block) {
    const auto& ops = block.ops();
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = *ops[i];
      const bool terminator = op.code() == OpCode::kReturn || op.code() == OpCode::kFuncReturn;
      if (terminator && i + 1 != ops.size()) {
        return Fail(op, "must be the last op of its block");
      }
      JITD_RETURN_IF_ERROR(VerifyOp(op, block));
    }
    return Status::Ok();
  }

  // True when `v` is visible at an op of `user_block`: a block argument of
  // it or an enclosing block, or the result of a finished op there.
  bool IsDefinedBefore(const Value& v, const Block& user_block) const {
    const Op* def = v.defining_op();
    const Block* def_block = def ? done_.Find(def) : v.owner_block();
    if (!def_block) return false;
    for (const Block* b = &user_block;;) {
      if (b == def_block) return true;
      const Region* r = b->parent_region();
      const Op* parent = r ? r->parent_op() : nullptr;
      if (!parent || !parent->parent_block()) return false;
      b = parent->parent_block();
    }
  }

  Status VerifyOp(const Op& op, const Block& block) {
    if (static_cast<size_t>(op.code()) >= kNumOpCodes) {
      return InvalidArgument(op.loc().ToString() + ": op with an invalid op code");
    }
    for (size_t i = 0; i < op.num_operands(); ++i) {
      const Value* v = op.operand(i);
      if (!v) return Fail(op, "has a null operand #" + std::to_string(i));
      if (!IsDefinedBefore(*v, block)) {
        return Fail(op, "uses operand #" + std::to_string(i) +
                            ", which is not defined before it in an enclosing block");
      }
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      if (std::string p = TypeProblem(op.result(i)->type(), 0, true); !p.empty()) {
        return Fail(op, "has result #" + std::to_string(i) + " of an invalid type: " + p);
      }
    }
    const Arity arity = ArityOf(op.code());
    if (arity.operands != kAny && op.num_operands() != static_cast<size_t>(arity.operands)) {
      return Fail(op, "requires " + std::to_string(arity.operands) + " operands, got " +
                          std::to_string(op.num_operands()));
    }
    if (arity.results != kAny && op.num_results() != static_cast<size_t>(arity.results)) {
      return Fail(op, "requires " + std::to_string(arity.results) + " results, got " +
                          std::to_string(op.num_results()));
    }
    if (arity.regions != kAny && op.num_regions() != static_cast<size_t>(arity.regions)) {
      return Fail(op, "requires " + std::to_string(arity.regions) + " regions, got " +
                          std::to_string(op.num_regions()));
    }
    JITD_RETURN_IF_ERROR(CheckFutureUses(op));
    if (arity.tensors_only) {
      for (size_t i = 0; i < op.num_operands(); ++i) {
        if (!IsTensor(op.operand(i))) {
          return Fail(op, "requires operand #" + std::to_string(i) + " to be a tensor, got " +
                              Str(TypeOf(op.operand(i))));
        }
      }
      for (size_t i = 0; i < op.num_results(); ++i) {
        if (!IsTensor(op.result(i))) {
          return Fail(op, "requires result #" + std::to_string(i) + " to be a tensor, got " +
                              Str(op.result(i)->type()));
        }
      }
    }
    if (op.num_regions() > 0) {
      // Checked before descending: this walk recurses once per level.
      if (nesting_ >= kMaxRegionNesting) {
        return Fail(op, "has regions nested deeper than the limit of " +
                            std::to_string(kMaxRegionNesting) + " levels");
      }
      ++nesting_;
      for (size_t i = 0; i < op.num_regions(); ++i) JITD_RETURN_IF_ERROR(VerifyRegion(op, i));
      --nesting_;
    }
    JITD_RETURN_IF_ERROR(VerifyRules(op));
    done_.Insert(&op, &block);
    return Status::Ok();
  }

  Status VerifyRules(const Op& op) {
    if (HasDynamicTypes(op)) return VerifyDynamicRules(op);
    if (const EwRule rule = ElementwiseRule(op.code()); rule.kind != Ew::kNone) {
      return CheckElementwise(op, rule);
    }
    if (ElementwiseOfChloBroadcast(op.code())) return CheckChloBroadcast(op);
    switch (op.code()) {
      case OpCode::kFuncCall: return VerifyCall(op);
      case OpCode::kFuncReturn: return VerifyFuncReturn(op);
      case OpCode::kReturn: return Status::Ok();  // its parent checks what it returns
      case OpCode::kConvert: return CheckConvert(op);
      case OpCode::kBitcastConvert: return CheckBitcastConvert(op);
      case OpCode::kReducePrecision: return CheckReducePrecision(op);
      case OpCode::kComplex: return CheckComplex(op);
      case OpCode::kCompare: return CheckCompare(op);
      case OpCode::kSelect: return CheckSelect(op);
      case OpCode::kClamp: return CheckClamp(op);
      case OpCode::kConstant: return CheckConstant(op);
      case OpCode::kIota: return CheckIota(op);
      case OpCode::kBroadcastInDim: return CheckBroadcastInDim(op);
      case OpCode::kBroadcast: return CheckBroadcast(op);
      case OpCode::kReshape: return CheckReshape(op);
      case OpCode::kTranspose: return CheckTranspose(op);
      case OpCode::kReverse: return CheckReverse(op);
      case OpCode::kSlice: return CheckSlice(op);
      case OpCode::kDynamicSlice: return CheckDynamicSlice(op);
      case OpCode::kDynamicUpdateSlice: return CheckDynamicUpdateSlice(op);
      case OpCode::kConcatenate: return CheckConcatenate(op);
      case OpCode::kPad: return CheckPad(op);
      case OpCode::kGetDimensionSize: return CheckGetDimensionSize(op);
      case OpCode::kGather: return CheckGather(op);
      case OpCode::kScatter: return CheckScatter(op);
      case OpCode::kReduce: return CheckReduce(op);
      case OpCode::kReduceWindow: return CheckReduceWindow(op);
      case OpCode::kSelectAndScatter: return CheckSelectAndScatter(op);
      case OpCode::kSort: return CheckSort(op);
      case OpCode::kMap: return CheckMap(op);
      case OpCode::kDotGeneral: return CheckDotGeneral(op);
      case OpCode::kDot: return CheckDot(op);
      case OpCode::kConvolution: return CheckConvolution(op);
      case OpCode::kFft: return CheckFft(op);
      case OpCode::kTriangularSolve: return CheckTriangularSolve(op);
      case OpCode::kCholesky: return CheckCholesky(op);
      case OpCode::kRngBitGenerator: return CheckRngBitGenerator(op);
      case OpCode::kRng: return CheckRng(op);
      case OpCode::kBatchNormInference: return CheckBatchNormInference(op);
      case OpCode::kBatchNormTraining: return CheckBatchNormTraining(op);
      case OpCode::kBatchNormGrad: return CheckBatchNormGrad(op);
      case OpCode::kWhile: return CheckWhile(op);
      case OpCode::kIf: return CheckIf(op);
      case OpCode::kCase: return CheckCase(op);
      case OpCode::kTuple: return CheckTuple(op);
      case OpCode::kGetTupleElement: return CheckGetTupleElement(op);
      case OpCode::kOptimizationBarrier: return CheckOptimizationBarrier(op);
      case OpCode::kAfterAll: return CheckAfterAll(op);
      case OpCode::kCreateToken: return CheckCreateToken(op);
      case OpCode::kInfeed: return CheckInfeed(op);
      case OpCode::kOutfeed: return CheckOutfeed(op);
      case OpCode::kReplicaId:
      case OpCode::kPartitionId: return CheckReplicaOrPartitionId(op);
      case OpCode::kCustomCall: return CheckCustomCall(op);
      case OpCode::kChloTopK: return CheckTopK(op);
      case OpCode::kComposite: return VerifyComposite(op);
      case OpCode::kAllGather: return CheckAllGather(op);
      case OpCode::kAllReduce: return CheckAllReduce(op);
      case OpCode::kAllToAll: return CheckAllToAll(op);
      case OpCode::kReduceScatter: return CheckReduceScatter(op);
      case OpCode::kCollectiveBroadcast: return CheckCollectiveBroadcast(op);
      case OpCode::kCollectivePermute: return CheckCollectivePermute(op);
      case OpCode::kCollectiveReduce:
      case OpCode::kCrossReplicaSum: return CheckSameTypes(op);
      case OpCode::kSend:
      case OpCode::kRecv: return CheckSendRecv(op);
      case OpCode::kAsyncStart: return CheckAsyncStart(op);
      case OpCode::kAsyncDone: return CheckAsyncDone(op);
      case OpCode::kDynamicBroadcastInDim: return CheckDynamicBroadcastInDim(op);
      case OpCode::kDynamicConv: return CheckDynamicConv(op);
      case OpCode::kDynamicGather: return CheckDynamicGather(op);
      case OpCode::kDynamicIota: return CheckDynamicIota(op);
      case OpCode::kDynamicPad: return CheckDynamicPad(op);
      case OpCode::kDynamicReshape: return CheckDynamicReshape(op);
      case OpCode::kRealDynamicSlice: return CheckRealDynamicSlice(op);
      case OpCode::kUniformQuantize:
      case OpCode::kUniformDequantize: return CheckQuantizeOp(op);
      case OpCode::kEinsum:
      case OpCode::kUnaryEinsum: return CheckEinsum(op);
      case OpCode::kTorchIndexSelect: return CheckTorchIndexSelect(op);
      case OpCode::kChloConstant: return CheckConstant(op);
      case OpCode::kChloConstantLike: return CheckChloConstantLike(op);
      case OpCode::kChloRaggedDot: return CheckRaggedDot(op);
      case OpCode::kChloScan: return CheckScan(op);
      case OpCode::kFusion: return CheckFusion(op);
      case OpCode::kCheckExpectEq:
      case OpCode::kCheckExpectEqConst:
      case OpCode::kCheckExpectAlmostEq:
      case OpCode::kCheckExpectAlmostEqConst:
      case OpCode::kCheckExpectClose:
      case OpCode::kCheckExpectSerializedEq: return CheckExpect(op);
      case OpCode::kInterpreterRunParallel: return CheckRunParallel(op);
      case OpCode::kInterpreterProbe: return CheckSameTypes(op);
      case OpCode::kInterpreterPrint: return Status::Ok();
      default: return Fail(op, "has no verifier rules (unknown op)");
    }
  }

  // An op with a dynamic (`?`) operand or result type: the spec's shape
  // rules need shapes, so they run after shape refinement
  // (jit/passes/refine_shapes.h), which verifies the refined module. Here
  // the types must be compatible where they meet: calls, returns and
  // composites take compatible types (same element type and rank, equal
  // static dimensions); elementwise ops compatible operands and results.
  static bool HasDynamicTypes(const Op& op) {
    for (const Value* v : op.operands()) {
      if (v->type().is_dynamic()) return true;
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      if (op.result(i)->type().is_dynamic()) return true;
    }
    return false;
  }

  static bool Compatible(const Type& a, const Type& b) {
    if (a.kind() != b.kind()) return false;
    if (a.is_tuple()) {
      if (a.elements().size() != b.elements().size()) return false;
      for (size_t i = 0; i < a.elements().size(); ++i) {
        if (!Compatible(a.elements()[i], b.elements()[i])) return false;
      }
      return true;
    }
    if (!a.is_tensor()) return true;
    if (a.dtype() != b.dtype() || a.is_quantized() != b.is_quantized()) return false;
    return ShapesCompatible(a, b);
  }

  static bool ShapesCompatible(const Type& a, const Type& b) {
    if (a.rank() != b.rank()) return false;
    for (int64_t i = 0; i < a.rank(); ++i) {
      if (a.dim(i) != b.dim(i) && a.dim(i) != Type::kDynamic && b.dim(i) != Type::kDynamic) {
        return false;
      }
    }
    return true;
  }

  static bool AllCompatible(std::span<const Type> want, std::span<const Type> got) {
    if (want.size() != got.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!Compatible(want[i], got[i])) return false;
    }
    return true;
  }

  Status VerifyDynamicRules(const Op& op) {
    switch (op.code()) {
      case OpCode::kFuncReturn: {
        const std::vector<Type> got = op.operand_types();
        if (!AllCompatible(function_->result_types(), got)) {
          return Fail(op, "requires operand types compatible with the result types of @" +
                              function_->name() + " " +
                              FunctionTypeToString({}, function_->result_types()).substr(6) +
                              ", got " + FunctionTypeToString({}, got).substr(6));
        }
        return Status::Ok();
      }
      case OpCode::kReturn: return Status::Ok();
      case OpCode::kFuncCall:
      case OpCode::kComposite: {
        const char* attr = op.code() == OpCode::kFuncCall ? "callee" : "decomposition";
        const Attribute* a = op.attr(attr);
        if (!a) return MissingAttr(op, attr);
        const auto* ref = a->get_if<SymbolRefAttr>();
        if (!ref) return WrongAttr(op, attr, "a symbol reference", *a);
        const Function* callee = module_.FindFunction(ref->name);
        if (!callee) {
          return Fail(op, "calls @" + ref->name + ", which is not a function of this module");
        }
        const std::vector<Type> in = op.operand_types(), out = op.result_types();
        if (!AllCompatible(callee->arg_types(), in) || !AllCompatible(callee->result_types(), out)) {
          return Fail(op, "requires types compatible with @" + ref->name + " (" +
                              FunctionTypeToString(callee->arg_types(), callee->result_types()) +
                              "), got " + FunctionTypeToString(in, out));
        }
        return Status::Ok();
      }
      case OpCode::kConstant:
        return Fail(op, "has a dynamic result type " + Str(op.result(0)->type()) +
                            " (a constant's shape is its data's)");
      default:
        break;
    }
    if (const EwRule rule = ElementwiseRule(op.code()); rule.kind != Ew::kNone) {
      // Same rank everywhere, compatible dimensions.
      for (size_t i = 0; i < op.num_results(); ++i) {
        for (const Value* v : op.operands()) {
          const Type& a = v->type();
          const Type& r = op.result(i)->type();
          if (a.is_tensor() && r.is_tensor() && a.rank() != 0 && !ShapesCompatible(a, r)) {
            return Fail(op, "requires operand shapes compatible with the result's, got " + Str(a) +
                                " and " + Str(r));
          }
        }
      }
    }
    return Status::Ok();
  }

  Status VerifyCall(const Op& op) {
    const Attribute* a = op.attr("callee");
    if (!a) return MissingAttr(op, "callee");
    const auto* ref = a->get_if<SymbolRefAttr>();
    if (!ref) return WrongAttr(op, "callee", "a symbol reference", *a);
    const Function* callee = module_.FindFunction(ref->name);
    if (!callee)
      return Fail(op, "calls @" + ref->name + ", which is not a function of this module");
    const auto& params = callee->arg_types();
    const auto& results = callee->result_types();
    bool ok = op.num_operands() == params.size() && op.num_results() == results.size();
    // A callee with dynamic (`?`) types (a shape-polymorphic export called
    // with concrete values) takes compatible types; shape refinement
    // specializes it for this call.
    bool dynamic_callee = false;
    for (const Type& t : params) dynamic_callee |= t.is_dynamic();
    for (const Type& t : results) dynamic_callee |= t.is_dynamic();
    if (ok && dynamic_callee) {
      ok = AllCompatible(params, op.operand_types()) && AllCompatible(results, op.result_types());
    }
    for (size_t i = 0; ok && !dynamic_callee && i < params.size(); ++i) ok = TypeOf(op.operand(i)) == params[i];
    for (size_t i = 0; ok && !dynamic_callee && i < results.size(); ++i) ok = op.result(i)->type() == results[i];
    if (!ok) {
      const std::vector<Type> in = op.operand_types(), out = op.result_types();
      return Fail(op, "requires the types of @" + ref->name + " (" +
                          FunctionTypeToString(params, results) + "), got " +
                          FunctionTypeToString(in, out));
    }
    return Status::Ok();
  }

  // composite: the decomposition function takes the operands and returns
  // the results (what running the op means).
  Status VerifyComposite(const Op& op) {
    JITD_RETURN_IF_ERROR(ReadString(op, "name", Need::kRequired));
    const Attribute* a = op.attr("decomposition");
    if (!a) return MissingAttr(op, "decomposition");
    const auto* ref = a->get_if<SymbolRefAttr>();
    if (!ref) return WrongAttr(op, "decomposition", "a symbol reference", *a);
    const Function* fn = module_.FindFunction(ref->name);
    if (!fn) {
      return Fail(op, "has decomposition @" + ref->name + ", which is not a function of this module");
    }
    bool ok = op.num_operands() == fn->arg_types().size() &&
              op.num_results() == fn->result_types().size();
    for (size_t i = 0; ok && i < op.num_operands(); ++i) ok = TypeOf(op.operand(i)) == fn->arg_types()[i];
    for (size_t i = 0; ok && i < op.num_results(); ++i) ok = op.result(i)->type() == fn->result_types()[i];
    if (!ok) {
      return Fail(op, "requires the types of its decomposition @" + ref->name + " (" +
                          FunctionTypeToString(fn->arg_types(), fn->result_types()) + "), got " +
                          FunctionTypeToString(op.operand_types(), op.result_types()));
    }
    return Status::Ok();
  }

  Status VerifyFuncReturn(const Op& op) {
    const auto& results = function_->result_types();
    bool ok = op.num_operands() == results.size();
    for (size_t i = 0; ok && i < results.size(); ++i) ok = TypeOf(op.operand(i)) == results[i];
    if (!ok) {
      std::string want, got;
      for (size_t i = 0; i < results.size(); ++i) want += (i ? ", " : "") + Str(results[i]);
      for (size_t i = 0; i < op.num_operands(); ++i) {
        got += (i ? ", " : "") + Str(TypeOf(op.operand(i)));
      }
      return Fail(op, "requires operand types equal to the result types of @" + function_->name() +
                          " (" + want + "), got (" + got + ")");
    }
    return Status::Ok();
  }

  const Module& module_;
  const Function* function_ = nullptr;
  int nesting_ = 0;  // regions enclosing the op being verified
  FinishedOps done_;
};

}  // namespace

Status VerifyModule(const Module& module) { return Verifier(module).Run(); }

}  // namespace jitd::ir
