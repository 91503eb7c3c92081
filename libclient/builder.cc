#include "libclient/builder.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cctype>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>
#include <utility>

namespace jitd::client {
namespace {

using ET = ElementType;

struct TypeInfo {
  ET type;
  const char* xla;
  const char* mlir;
  int bytes;
  int bits;
};
constexpr TypeInfo kTypes[] = {
    {ET::ElementType_PRED, "pred", "i1", 1, 1},
    {ET::ElementType_S8, "s8", "i8", 1, 8},
    {ET::ElementType_S16, "s16", "i16", 2, 16},
    {ET::ElementType_S32, "s32", "i32", 4, 32},
    {ET::ElementType_S64, "s64", "i64", 8, 64},
    {ET::ElementType_U8, "u8", "ui8", 1, 8},
    {ET::ElementType_U16, "u16", "ui16", 2, 16},
    {ET::ElementType_U32, "u32", "ui32", 4, 32},
    {ET::ElementType_U64, "u64", "ui64", 8, 64},
    {ET::ElementType_F16, "f16", "f16", 2, 16},
    {ET::ElementType_BF16, "bf16", "bf16", 2, 16},
    {ET::ElementType_F32, "f32", "f32", 4, 32},
    {ET::ElementType_F64, "f64", "f64", 8, 64},
    {ET::ElementType_C64, "c64", "complex<f32>", 8, 64},
    {ET::ElementType_C128, "c128", "complex<f64>", 16, 128},
    {ET::ElementType_S2, "s2", "i2", 1, 2},
    {ET::ElementType_S4, "s4", "i4", 1, 4},
    {ET::ElementType_U2, "u2", "ui2", 1, 2},
    {ET::ElementType_U4, "u4", "ui4", 1, 4},
    {ET::ElementType_F8E4M3FN, "f8e4m3fn", "f8E4M3FN", 1, 8},
    {ET::ElementType_F8E5M2, "f8e5m2", "f8E5M2", 1, 8},
    {ET::ElementType_F8E4M3FNUZ, "f8e4m3fnuz", "f8E4M3FNUZ", 1, 8},
    {ET::ElementType_F8E5M2FNUZ, "f8e5m2fnuz", "f8E5M2FNUZ", 1, 8},
    {ET::ElementType_F8E4M3B11FNUZ, "f8e4m3b11fnuz", "f8E4M3B11FNUZ", 1, 8},
    {ET::ElementType_F8E3M4, "f8e3m4", "f8E3M4", 1, 8},
    {ET::ElementType_F8E4M3, "f8e4m3", "f8E4M3", 1, 8},
    {ET::ElementType_F8E8M0FNU, "f8e8m0fnu", "f8E8M0FNU", 1, 8},
    {ET::ElementType_F4E2M1FN, "f4e2m1fn", "f4E2M1FN", 1, 4},
    {ET::ElementType_F6E2M3FN, "f6e2m3fn", "f6E2M3FN", 1, 6},
    {ET::ElementType_F6E3M2FN, "f6e3m2fn", "f6E3M2FN", 1, 6},
};

const TypeInfo* Info(ET t) {
  for (const TypeInfo& i : kTypes) {
    if (i.type == t) return &i;
  }
  return nullptr;
}

bool IsPred(ET t) { return t == ET::ElementType_PRED; }
bool IsSigned(ET t) {
  return t == ET::ElementType_S2 || t == ET::ElementType_S4 || t == ET::ElementType_S8 ||
         t == ET::ElementType_S16 || t == ET::ElementType_S32 || t == ET::ElementType_S64;
}
bool IsUnsigned(ET t) {
  return t == ET::ElementType_U2 || t == ET::ElementType_U4 || t == ET::ElementType_U8 ||
         t == ET::ElementType_U16 || t == ET::ElementType_U32 || t == ET::ElementType_U64;
}
bool IsInt(ET t) { return IsSigned(t) || IsUnsigned(t); }
bool IsComplex(ET t) { return t == ET::ElementType_C64 || t == ET::ElementType_C128; }
bool IsFloat(ET t) { return Info(t) != nullptr && !IsPred(t) && !IsInt(t) && !IsComplex(t); }
bool IsFloatOrComplex(ET t) { return IsFloat(t) || IsComplex(t); }
bool IsNumeric(ET t) { return IsInt(t) || IsFloatOrComplex(t); }

std::string DimsText(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

Status Err(std::string_view op, const std::string& what) {
  return InvalidArgument(std::string(op) + ": " + what);
}

std::vector<int64_t> Range(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

// Checks that `dims` are distinct and within [0, rank).
Status CheckDimList(std::string_view op, std::string_view what, std::span<const int64_t> dims,
                    int64_t rank) {
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      return Err(op, std::string(what) + " " + DimsText(dims) + ": dimension " +
                         std::to_string(d) + " is out of range for rank " + std::to_string(rank));
    }
    if (!seen.insert(d).second) {
      return Err(op, std::string(what) + " " + DimsText(dims) + ": dimension " +
                         std::to_string(d) + " appears twice");
    }
  }
  return Status::Ok();
}

// Window arithmetic with overflow checks: the size of a dimension of `in`
// elements dilated by `base_dilation`, padded by lo/hi, under a window of
// `window` elements dilated by `window_dilation` moved by `stride`.
// nullopt when an intermediate overflows or the padded size is negative.
std::optional<int64_t> WindowedSize(int64_t in, int64_t base_dilation, int64_t lo, int64_t hi,
                                    int64_t window, int64_t window_dilation, int64_t stride) {
  int64_t dilated = 0, padded = 0, span = 0;
  if (in > 0) {
    if (__builtin_mul_overflow(in - 1, base_dilation, &dilated)) return std::nullopt;
    dilated += 1;
  }
  if (__builtin_add_overflow(dilated, lo, &padded) || __builtin_add_overflow(padded, hi, &padded) ||
      padded < 0) {
    return std::nullopt;
  }
  if (window > 0) {
    if (__builtin_mul_overflow(window - 1, window_dilation, &span)) return std::nullopt;
    span += 1;
  }
  return padded < span ? 0 : (padded - span) / stride + 1;
}

std::atomic<uint32_t> g_next_serial{1};

}  // namespace

std::string_view XlaTypeName(ElementType t) {
  const TypeInfo* i = Info(t);
  return i ? i->xla : "invalid";
}
std::string_view MlirTypeName(ElementType t) {
  const TypeInfo* i = Info(t);
  return i ? i->mlir : "invalid";
}
int ElementBytes(ElementType t) {
  const TypeInfo* i = Info(t);
  return i ? i->bytes : 0;
}

// ---- Shape ------------------------------------------------------------------

Shape Shape::Array(ElementType dtype, std::vector<int64_t> dims) {
  Shape s;
  s.kind_ = Kind::kArray;
  s.dtype_ = dtype;
  s.dims_ = std::move(dims);
  return s;
}
Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.kind_ = Kind::kTuple;
  s.elements_ = std::move(elements);
  return s;
}
Shape Shape::Token() {
  Shape s;
  s.kind_ = Kind::kToken;
  return s;
}

StatusOr<Shape> Shape::CheckedArray(ElementType dtype, std::vector<int64_t> dims) {
  if (Info(dtype) == nullptr) {
    return InvalidArgument("invalid element type " + std::to_string(static_cast<int>(dtype)));
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return InvalidArgument("rank " + std::to_string(dims.size()) + " exceeds the limit of " +
                           std::to_string(kMaxRank));
  }
  int64_t nonzero = 1;
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgument("negative dimension in " + DimsText(dims));
    if (d == 0) continue;
    if (nonzero > (int64_t{1} << 40) / d) {
      return InvalidArgument("shape " + DimsText(dims) + " has more than 2^40 elements");
    }
    nonzero *= d;
  }
  return Array(dtype, std::move(dims));
}

int64_t Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::ToString() const {
  switch (kind_) {
    case Kind::kToken:
      return "token";
    case Kind::kTuple: {
      std::string s = "(";
      for (size_t i = 0; i < elements_.size(); ++i) s += (i ? ", " : "") + elements_[i].ToString();
      return s + ")";
    }
    case Kind::kArray:
      break;
  }
  return std::string(XlaTypeName(dtype_)) + DimsText(dims_);
}

std::string Shape::ToMlir() const {
  switch (kind_) {
    case Kind::kToken:
      return "!stablehlo.token";
    case Kind::kTuple: {
      std::string s = "tuple<";
      for (size_t i = 0; i < elements_.size(); ++i) s += (i ? ", " : "") + elements_[i].ToMlir();
      return s + ">";
    }
    case Kind::kArray:
      break;
  }
  std::string s = "tensor<";
  for (int64_t d : dims_) s += std::to_string(d) + "x";
  return s + std::string(MlirTypeName(dtype_)) + ">";
}

// ---- Attr -------------------------------------------------------------------

Attr Attr::Bool(bool v) {
  Attr a;
  a.kind = Kind::kBool;
  a.i = v ? 1 : 0;
  return a;
}
Attr Attr::Int(int64_t v, ElementType t) {
  Attr a;
  a.kind = Kind::kInt;
  a.i = v;
  a.int_type = t;
  return a;
}
Attr Attr::String(std::string v) {
  Attr a;
  a.kind = Kind::kString;
  a.s = std::move(v);
  return a;
}
Attr Attr::I64Array(std::vector<int64_t> v) {
  Attr a;
  a.kind = Kind::kI64Array;
  a.ints = std::move(v);
  return a;
}
Attr Attr::Dense(Shape type, std::vector<uint8_t> bytes, bool splat) {
  // All elements equal: keep one (as the text parser does), so big uniform
  // constants stay small and the FlatBuffers and text forms agree.
  const size_t width = static_cast<size_t>(ElementBytes(type.dtype()));
  if (!splat && width > 0 && bytes.size() > width) {
    bool uniform = true;
    for (size_t i = width; uniform && i < bytes.size(); i += width) {
      uniform = std::memcmp(bytes.data(), bytes.data() + i, width) == 0;
    }
    if (uniform) {
      bytes.resize(width);
      splat = true;
    }
  }
  if (width > 0 && bytes.size() == width) splat = true;  // one element, as the parser marks it
  Attr a;
  a.kind = Kind::kDense;
  a.dense_type = std::move(type);
  a.bytes = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  a.splat = splat;
  return a;
}
Attr Attr::Enum(std::string enum_name, std::string value) {
  Attr a;
  a.kind = Kind::kEnum;
  a.enum_name = std::move(enum_name);
  a.s = std::move(value);
  return a;
}
Attr Attr::Struct(std::string name, std::vector<StructField> fields) {
  Attr a;
  a.kind = Kind::kStruct;
  a.s = std::move(name);
  a.fields = std::move(fields);
  return a;
}
Attr Attr::Symbol(std::string name) {
  Attr a;
  a.kind = Kind::kSymbol;
  a.s = std::move(name);
  return a;
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> MakePadding(
    Padding padding, std::span<const int64_t> input_dims, std::span<const int64_t> window_dims,
    std::span<const int64_t> strides) {
  if (input_dims.size() != window_dims.size() || input_dims.size() != strides.size()) {
    return InvalidArgument("padding: input, window and strides differ in length");
  }
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i < input_dims.size(); ++i) {
    if (padding == Padding::kValid) {
      out.emplace_back(0, 0);
      continue;
    }
    if (strides[i] < 1) return InvalidArgument("padding: strides must be >= 1");
    // XLA's MakePadding for SAME: output = ceil(input / stride).
    const int64_t out_size = (input_dims[i] + strides[i] - 1) / strides[i];
    const int64_t total =
        std::max<int64_t>((out_size - 1) * strides[i] + window_dims[i] - input_dims[i], 0);
    out.emplace_back(total / 2, total - total / 2);
  }
  return out;
}

// ---- Builder basics ----------------------------------------------------------

Builder::Builder(std::string name) : name_(std::move(name)), serial_(g_next_serial++) {
  if (name_.empty()) name_ = "computation";
}

Status Builder::Fail(Status status) {
  if (error_.ok() && !status.ok()) error_ = status;
  return status;
}

StatusOr<const Builder::Value*> Builder::Get(OpId op, std::string_view what) const {
  const uint32_t serial = static_cast<uint32_t>(op >> 32);
  const uint64_t index = op & 0xffffffffu;
  if (op == 0) return Err(what, "an operand is no op (id 0)");
  if (serial != serial_) {
    return Err(what, "an operand belongs to another builder (ops are valid only in the "
                     "builder that made them)");
  }
  if (index == 0 || index > values_.size()) return Err(what, "an operand is not a valid op");
  return &values_[index - 1];
}

const Builder::Value& Builder::V(OpId id) const { return values_[(id & 0xffffffffu) - 1]; }

StatusOr<Shape> Builder::GetShape(OpId op) const {
  JITD_ASSIGN_OR_RETURN(const Value* v, Get(op, "GetShape"));
  return v->shape;
}

StatusOr<Shape> Builder::ArrayOf(OpId op, std::string_view what) const {
  JITD_ASSIGN_OR_RETURN(const Value* v, Get(op, what));
  if (!v->shape.is_array()) {
    return Err(what, "an operand of shape " + v->shape.ToString() + " is not an array");
  }
  return v->shape;
}

OpId Builder::NewValue(ValueRef ref, Shape shape) {
  values_.push_back({ref, std::move(shape)});
  return (static_cast<uint64_t>(serial_) << 32) | values_.size();
}

std::vector<OpId> Builder::AddNode(Node node) {
  const int32_t index = static_cast<int32_t>(graph_.nodes.size());
  std::vector<Shape> results = node.results;
  graph_.nodes.push_back(std::move(node));
  std::vector<OpId> ids;
  for (size_t i = 0; i < results.size(); ++i) {
    ids.push_back(NewValue({index, static_cast<int32_t>(i)}, std::move(results[i])));
  }
  return ids;
}

namespace {
Node MakeNode(std::string name, std::vector<ValueRef> operands, std::vector<Shape> results,
              std::vector<std::pair<std::string, Attr>> attrs = {}) {
  Node n;
  n.name = std::move(name);
  n.operands = std::move(operands);
  n.results = std::move(results);
  n.attrs = std::move(attrs);
  return n;
}
}  // namespace

OpId Builder::BroadcastTo(OpId op, const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& mapping) {
  const Shape& s = V(op).shape;
  if (s.dims() == dims) return op;
  return AddNode1(MakeNode("stablehlo.broadcast_in_dim", {V(op).ref},
                           {Shape::Array(s.dtype(), dims)},
                           {{"broadcast_dimensions", Attr::I64Array(mapping)}}));
}

OpId Builder::TupleOfResults(const std::vector<OpId>& results) {
  if (results.size() == 1) return results[0];
  std::vector<ValueRef> refs;
  std::vector<Shape> shapes;
  for (OpId r : results) {
    refs.push_back(V(r).ref);
    shapes.push_back(V(r).shape);
  }
  return AddNode1(MakeNode("stablehlo.tuple", refs, {Shape::Tuple(shapes)}));
}

StatusOr<OpId> Builder::OneResultOrTuple(Node node) {
  return TupleOfResults(AddNode(std::move(node)));
}

std::vector<OpId> Builder::Untuple(OpId op) {
  const Value& v = V(op);
  std::vector<OpId> out;
  if (v.ref.node != ValueRef::kArg &&
      graph_.nodes[static_cast<size_t>(v.ref.node)].name == "stablehlo.tuple") {
    // Fold: the tuple's operands are values of this builder already; find
    // their ids (or make new ids for the same refs).
    const Node& n = graph_.nodes[static_cast<size_t>(v.ref.node)];
    const std::vector<Shape> shapes = v.shape.elements();
    const std::vector<ValueRef> refs = n.operands;
    for (size_t i = 0; i < refs.size(); ++i) out.push_back(NewValue(refs[i], shapes[i]));
    return out;
  }
  const Shape shape = v.shape;
  for (size_t i = 0; i < shape.elements().size(); ++i) {
    out.push_back(AddNode1(MakeNode("stablehlo.get_tuple_element", {V(op).ref},
                                    {shape.elements()[i]},
                                    {{"index", Attr::Int(static_cast<int64_t>(i),
                                                         ET::ElementType_S32)}})));
  }
  return out;
}

// ---- Parameters and constants -------------------------------------------------

namespace {
Status CheckShape(std::string_view op, const Shape& s, int depth = 0) {
  if (depth > 16) return Err(op, "tuple shapes nested too deeply");
  if (s.is_array()) {
    StatusOr<Shape> checked = Shape::CheckedArray(s.dtype(), s.dims());
    if (!checked.ok()) return Err(op, checked.status().message());
  }
  for (const Shape& e : s.elements()) JITD_RETURN_IF_ERROR(CheckShape(op, e, depth + 1));
  return Status::Ok();
}
}  // namespace

StatusOr<OpId> Builder::Parameter(int64_t index, const Shape& shape, std::string name) {
  if (index < 0 || index > (int64_t{1} << 20)) {
    return Fail(Err("Parameter", "index " + std::to_string(index) + " is out of range"));
  }
  for (const Param& p : params_) {
    if (p.index == index) {
      return Fail(Err("Parameter", "parameter " + std::to_string(index) + " is already defined"));
    }
  }
  JITD_RETURN_IF_ERROR(Fail(CheckShape("Parameter", shape)));
  // Names become SSA value names in text: keep [A-Za-z0-9_], not leading
  // with a digit.
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) {
    name = "p" + std::to_string(index) + (name.empty() ? "" : "_" + name);
  }
  params_.push_back({index, name});
  graph_.args.push_back(shape);
  graph_.arg_names.push_back(name);
  return NewValue({ValueRef::kArg, static_cast<int32_t>(graph_.args.size() - 1)}, shape);
}

StatusOr<OpId> Builder::ConstantScalar(ElementType dtype, const void* value) {
  if (Info(dtype) == nullptr) {
    return Fail(Err("Constant", "invalid element type " + std::to_string(static_cast<int>(dtype))));
  }
  return ConstantArray(dtype, {}, value, static_cast<size_t>(ElementBytes(dtype)));
}

StatusOr<OpId> Builder::ConstantArray(ElementType dtype, std::vector<int64_t> dims,
                                      const void* data, size_t size_bytes) {
  StatusOr<Shape> shape = Shape::CheckedArray(dtype, std::move(dims));
  if (!shape.ok()) return Fail(Err("Constant", shape.status().message()));
  const uint64_t want =
      static_cast<uint64_t>(shape->num_elements()) * static_cast<uint64_t>(ElementBytes(dtype));
  if (size_bytes != want) {
    return Fail(Err("Constant", shape->ToString() + " needs " + std::to_string(want) +
                                    " bytes of data, got " + std::to_string(size_bytes)));
  }
  if (want > 0 && data == nullptr) return Fail(Err("Constant", "data is NULL"));
  const uint8_t* p = static_cast<const uint8_t*>(data);
  std::vector<uint8_t> bytes(p, p + want);
  if (IsPred(dtype)) {
    for (uint8_t& b : bytes) b = b != 0;  // any nonzero byte is true
  }
  return AddNode1(MakeNode("stablehlo.constant", {}, {*shape},
                           {{"value", Attr::Dense(*shape, std::move(bytes))}}));
}

// ---- Elementwise ------------------------------------------------------------------

namespace {

struct UnaryInfo {
  const char* xla;   // the op's name in messages
  const char* op;    // the emitted op
  enum Domain { kInt, kPredOrInt, kSignedFloatComplex, kFloat, kFloatComplex, kNumeric,
                kComplexOrFloat } domain;
};

UnaryInfo UnaryOf(UnaryOp u) {
  switch (u) {
    case UnaryOp::kNot: return {"Not", "stablehlo.not", UnaryInfo::kPredOrInt};
    case UnaryOp::kAbs: return {"Abs", "stablehlo.abs", UnaryInfo::kSignedFloatComplex};
    case UnaryOp::kExp: return {"Exp", "stablehlo.exponential", UnaryInfo::kFloatComplex};
    case UnaryOp::kExpm1: return {"Expm1", "stablehlo.exponential_minus_one", UnaryInfo::kFloatComplex};
    case UnaryOp::kFloor: return {"Floor", "stablehlo.floor", UnaryInfo::kFloat};
    case UnaryOp::kRound: return {"Round", "stablehlo.round_nearest_afz", UnaryInfo::kFloat};
    case UnaryOp::kCeil: return {"Ceil", "stablehlo.ceil", UnaryInfo::kFloat};
    case UnaryOp::kLog: return {"Log", "stablehlo.log", UnaryInfo::kFloatComplex};
    case UnaryOp::kLog1p: return {"Log1p", "stablehlo.log_plus_one", UnaryInfo::kFloatComplex};
    case UnaryOp::kSign: return {"Sign", "stablehlo.sign", UnaryInfo::kSignedFloatComplex};
    case UnaryOp::kCos: return {"Cos", "stablehlo.cosine", UnaryInfo::kFloatComplex};
    case UnaryOp::kSin: return {"Sin", "stablehlo.sine", UnaryInfo::kFloatComplex};
    case UnaryOp::kTanh: return {"Tanh", "stablehlo.tanh", UnaryInfo::kFloatComplex};
    case UnaryOp::kSqrt: return {"Sqrt", "stablehlo.sqrt", UnaryInfo::kFloatComplex};
    case UnaryOp::kRsqrt: return {"Rsqrt", "stablehlo.rsqrt", UnaryInfo::kFloatComplex};
    case UnaryOp::kCbrt: return {"Cbrt", "stablehlo.cbrt", UnaryInfo::kFloatComplex};
    case UnaryOp::kSquare: return {"Square", "stablehlo.multiply", UnaryInfo::kNumeric};
    case UnaryOp::kIsFinite: return {"IsFinite", "stablehlo.is_finite", UnaryInfo::kFloat};
    case UnaryOp::kReciprocal: return {"Reciprocal", "stablehlo.divide", UnaryInfo::kFloatComplex};
    case UnaryOp::kNeg: return {"Neg", "stablehlo.negate", UnaryInfo::kNumeric};
    case UnaryOp::kLogistic: return {"Logistic", "stablehlo.logistic", UnaryInfo::kFloatComplex};
    case UnaryOp::kReal: return {"Real", "stablehlo.real", UnaryInfo::kComplexOrFloat};
    case UnaryOp::kImag: return {"Imag", "stablehlo.imag", UnaryInfo::kComplexOrFloat};
    case UnaryOp::kConj: return {"Conj", "chlo.conj", UnaryInfo::kComplexOrFloat};
    case UnaryOp::kTan: return {"Tan", "stablehlo.tan", UnaryInfo::kFloatComplex};
    case UnaryOp::kClz: return {"Clz", "stablehlo.count_leading_zeros", UnaryInfo::kInt};
    case UnaryOp::kPopulationCount: return {"PopulationCount", "stablehlo.popcnt", UnaryInfo::kInt};
    case UnaryOp::kRoundNearestEven: return {"RoundNearestEven", "stablehlo.round_nearest_even", UnaryInfo::kFloat};
    case UnaryOp::kErf: return {"Erf", "chlo.erf", UnaryInfo::kFloat};
    case UnaryOp::kErfc: return {"Erfc", "chlo.erfc", UnaryInfo::kFloat};
    case UnaryOp::kErfInv: return {"ErfInv", "chlo.erf_inv", UnaryInfo::kFloat};
    case UnaryOp::kLgamma: return {"Lgamma", "chlo.lgamma", UnaryInfo::kFloat};
    case UnaryOp::kDigamma: return {"Digamma", "chlo.digamma", UnaryInfo::kFloat};
    case UnaryOp::kBesselI1e: return {"BesselI1e", "chlo.bessel_i1e", UnaryInfo::kFloat};
    case UnaryOp::kAcos: return {"Acos", "chlo.acos", UnaryInfo::kFloatComplex};
    case UnaryOp::kAsin: return {"Asin", "chlo.asin", UnaryInfo::kFloatComplex};
    case UnaryOp::kAtan: return {"Atan", "chlo.atan", UnaryInfo::kFloatComplex};
    case UnaryOp::kAcosh: return {"Acosh", "chlo.acosh", UnaryInfo::kFloatComplex};
    case UnaryOp::kAsinh: return {"Asinh", "chlo.asinh", UnaryInfo::kFloatComplex};
    case UnaryOp::kAtanh: return {"Atanh", "chlo.atanh", UnaryInfo::kFloatComplex};
    case UnaryOp::kCosh: return {"Cosh", "chlo.cosh", UnaryInfo::kFloatComplex};
    case UnaryOp::kSinh: return {"Sinh", "chlo.sinh", UnaryInfo::kFloatComplex};
  }
  return {"?", "?", UnaryInfo::kNumeric};
}

bool InDomain(UnaryInfo::Domain d, ET t) {
  switch (d) {
    case UnaryInfo::kInt: return IsInt(t);
    case UnaryInfo::kPredOrInt: return IsPred(t) || IsInt(t);
    case UnaryInfo::kSignedFloatComplex: return IsSigned(t) || IsFloatOrComplex(t);
    case UnaryInfo::kFloat: return IsFloat(t);
    case UnaryInfo::kFloatComplex: return IsFloatOrComplex(t);
    case UnaryInfo::kNumeric: return IsNumeric(t);
    case UnaryInfo::kComplexOrFloat: return IsFloatOrComplex(t);
  }
  return false;
}

const char* DomainText(UnaryInfo::Domain d) {
  switch (d) {
    case UnaryInfo::kInt: return "an integer";
    case UnaryInfo::kPredOrInt: return "a pred or integer";
    case UnaryInfo::kSignedFloatComplex: return "a signed integer, floating-point or complex";
    case UnaryInfo::kFloat: return "a floating-point";
    case UnaryInfo::kFloatComplex: return "a floating-point or complex";
    case UnaryInfo::kNumeric: return "a numeric";
    case UnaryInfo::kComplexOrFloat: return "a floating-point or complex";
  }
  return "?";
}

ET ComponentOf(ET t) {
  if (t == ET::ElementType_C64) return ET::ElementType_F32;
  if (t == ET::ElementType_C128) return ET::ElementType_F64;
  return t;
}

// One element of value 1 of `t` in host layout.
std::vector<uint8_t> OneOf(ET t) {
  std::vector<uint8_t> b(static_cast<size_t>(ElementBytes(t)), 0);
  auto put = [&](auto v) { std::memcpy(b.data(), &v, sizeof(v)); };
  switch (t) {
    case ET::ElementType_F32: case ET::ElementType_C64: put(1.0f); break;
    case ET::ElementType_F64: case ET::ElementType_C128: put(1.0); break;
    case ET::ElementType_F16: put(uint16_t{0x3C00}); break;
    case ET::ElementType_BF16: put(uint16_t{0x3F80}); break;
    case ET::ElementType_F8E4M3FN: b[0] = 0x38; break;
    case ET::ElementType_F8E4M3: b[0] = 0x38; break;
    case ET::ElementType_F8E5M2: b[0] = 0x3C; break;
    case ET::ElementType_F8E4M3FNUZ: b[0] = 0x40; break;
    case ET::ElementType_F8E5M2FNUZ: b[0] = 0x40; break;
    case ET::ElementType_F8E4M3B11FNUZ: b[0] = 0x58; break;
    case ET::ElementType_F8E3M4: b[0] = 0x30; break;
    case ET::ElementType_F8E8M0FNU: b[0] = 0x7F; break;
    case ET::ElementType_F4E2M1FN: b[0] = 0x2; break;
    case ET::ElementType_F6E2M3FN: b[0] = 0x8; break;
    case ET::ElementType_F6E3M2FN: b[0] = 0xC; break;
    default: b[0] = 1; break;  // integers (little endian)
  }
  return b;
}

}  // namespace

StatusOr<OpId> Builder::Unary(UnaryOp u, OpId operand) {
  if (static_cast<int>(u) < 0 || static_cast<int>(u) > static_cast<int>(UnaryOp::kLast)) {
    return Fail(Err("Unary", "unknown unary op " + std::to_string(static_cast<int>(u))));
  }
  const UnaryInfo info = UnaryOf(u);
  StatusOr<Shape> shape = ArrayOf(operand, info.xla);
  if (!shape.ok()) return Fail(shape.status());
  if (!InDomain(info.domain, shape->dtype())) {
    return Fail(Err(info.xla, "operand of shape " + shape->ToString() + " must be of " +
                                  DomainText(info.domain) + " element type"));
  }
  ET out = shape->dtype();
  if (u == UnaryOp::kIsFinite) out = ET::ElementType_PRED;
  if (u == UnaryOp::kReal || u == UnaryOp::kImag || (u == UnaryOp::kAbs && IsComplex(out))) {
    out = ComponentOf(out);
  }
  const Shape result = Shape::Array(out, shape->dims());
  const ValueRef x = V(operand).ref;
  if (u == UnaryOp::kSquare) {
    return AddNode1(MakeNode("stablehlo.multiply", {x, x}, {result}));
  }
  if (u == UnaryOp::kReciprocal) {
    const std::vector<uint8_t> one = OneOf(shape->dtype());
    JITD_ASSIGN_OR_RETURN(OpId c, ConstantScalar(shape->dtype(), one.data()));
    OpId ones = BroadcastTo(c, shape->dims(), {});
    return AddNode1(MakeNode("stablehlo.divide", {V(ones).ref, V(operand).ref}, {result}));
  }
  return AddNode1(MakeNode(info.op, {x}, {result}));
}

namespace {
struct BinaryInfo {
  const char* xla;
  const char* op;
  const char* direction;  // compare ops
  enum Domain { kAny, kNumeric, kPredOrInt, kInt, kFloatComplex, kFloat, kFloatOnly } domain;
};

BinaryInfo BinaryOf(BinaryOp b) {
  switch (b) {
    case BinaryOp::kEq: return {"Eq", "stablehlo.compare", "EQ", BinaryInfo::kAny};
    case BinaryOp::kNe: return {"Ne", "stablehlo.compare", "NE", BinaryInfo::kAny};
    case BinaryOp::kGe: return {"Ge", "stablehlo.compare", "GE", BinaryInfo::kAny};
    case BinaryOp::kGt: return {"Gt", "stablehlo.compare", "GT", BinaryInfo::kAny};
    case BinaryOp::kLt: return {"Lt", "stablehlo.compare", "LT", BinaryInfo::kAny};
    case BinaryOp::kLe: return {"Le", "stablehlo.compare", "LE", BinaryInfo::kAny};
    case BinaryOp::kAdd: return {"Add", "stablehlo.add", nullptr, BinaryInfo::kAny};
    case BinaryOp::kSub: return {"Sub", "stablehlo.subtract", nullptr, BinaryInfo::kNumeric};
    case BinaryOp::kMul: return {"Mul", "stablehlo.multiply", nullptr, BinaryInfo::kAny};
    case BinaryOp::kDiv: return {"Div", "stablehlo.divide", nullptr, BinaryInfo::kNumeric};
    case BinaryOp::kRem: return {"Rem", "stablehlo.remainder", nullptr, BinaryInfo::kNumeric};
    case BinaryOp::kMax: return {"Max", "stablehlo.maximum", nullptr, BinaryInfo::kAny};
    case BinaryOp::kMin: return {"Min", "stablehlo.minimum", nullptr, BinaryInfo::kAny};
    case BinaryOp::kAnd: return {"And", "stablehlo.and", nullptr, BinaryInfo::kPredOrInt};
    case BinaryOp::kOr: return {"Or", "stablehlo.or", nullptr, BinaryInfo::kPredOrInt};
    case BinaryOp::kXor: return {"Xor", "stablehlo.xor", nullptr, BinaryInfo::kPredOrInt};
    case BinaryOp::kPow: return {"Pow", "stablehlo.power", nullptr, BinaryInfo::kNumeric};
    case BinaryOp::kAtan2: return {"Atan2", "stablehlo.atan2", nullptr, BinaryInfo::kFloatComplex};
    case BinaryOp::kShiftLeft: return {"ShiftLeft", "stablehlo.shift_left", nullptr, BinaryInfo::kInt};
    case BinaryOp::kShiftRightArithmetic: return {"ShiftRightArithmetic", "stablehlo.shift_right_arithmetic", nullptr, BinaryInfo::kInt};
    case BinaryOp::kShiftRightLogical: return {"ShiftRightLogical", "stablehlo.shift_right_logical", nullptr, BinaryInfo::kInt};
    case BinaryOp::kComplex: return {"Complex", "stablehlo.complex", nullptr, BinaryInfo::kFloatOnly};
    case BinaryOp::kNextAfter: return {"NextAfter", "chlo.next_after", nullptr, BinaryInfo::kFloat};
  }
  return {"?", "?", nullptr, BinaryInfo::kAny};
}

bool InDomain(BinaryInfo::Domain d, ET t) {
  switch (d) {
    case BinaryInfo::kAny: return Info(t) != nullptr;
    case BinaryInfo::kNumeric: return IsNumeric(t);
    case BinaryInfo::kPredOrInt: return IsPred(t) || IsInt(t);
    case BinaryInfo::kInt: return IsInt(t);
    case BinaryInfo::kFloatComplex: return IsFloatOrComplex(t);
    case BinaryInfo::kFloat: return IsFloat(t);
    case BinaryInfo::kFloatOnly:
      return t == ET::ElementType_F32 || t == ET::ElementType_F64;
  }
  return false;
}

const char* DomainText(BinaryInfo::Domain d) {
  switch (d) {
    case BinaryInfo::kAny: return "any";
    case BinaryInfo::kNumeric: return "a numeric";
    case BinaryInfo::kPredOrInt: return "a pred or integer";
    case BinaryInfo::kInt: return "an integer";
    case BinaryInfo::kFloatComplex: return "a floating-point or complex";
    case BinaryInfo::kFloat: return "a floating-point";
    case BinaryInfo::kFloatOnly: return "an f32 or f64";
  }
  return "?";
}

const char* CompareType(ET t) {
  if (IsFloatOrComplex(t)) return "FLOAT";
  if (IsSigned(t)) return "SIGNED";
  return "UNSIGNED";
}
}  // namespace

StatusOr<OpId> Builder::Binary(BinaryOp b, OpId lhs, OpId rhs,
                               std::span<const int64_t> broadcast_dimensions) {
  if (static_cast<int>(b) < 0 || static_cast<int>(b) > static_cast<int>(BinaryOp::kLast)) {
    return Fail(Err("Binary", "unknown binary op " + std::to_string(static_cast<int>(b))));
  }
  const BinaryInfo info = BinaryOf(b);
  const std::string_view name = info.xla;
  StatusOr<Shape> ls = ArrayOf(lhs, name);
  if (!ls.ok()) return Fail(ls.status());
  StatusOr<Shape> rs = ArrayOf(rhs, name);
  if (!rs.ok()) return Fail(rs.status());
  const std::string both = "shapes " + ls->ToString() + " and " + rs->ToString();
  if (ls->dtype() != rs->dtype()) {
    return Fail(Err(name, both + " have different element types"));
  }
  if (!InDomain(info.domain, ls->dtype())) {
    return Fail(Err(name, both + ": the element type must be " + DomainText(info.domain)));
  }
  // Output dims and, per operand, the broadcast_in_dim mapping into them.
  const bool lhs_larger = ls->rank() >= rs->rank();
  const Shape& large = lhs_larger ? *ls : *rs;
  const Shape& small = lhs_larger ? *rs : *ls;
  std::vector<int64_t> out = large.dims();
  std::vector<int64_t> small_map;
  const std::vector<int64_t> large_map = Range(large.rank());
  if (ls->rank() == rs->rank()) {
    if (!broadcast_dimensions.empty() &&
        std::vector<int64_t>(broadcast_dimensions.begin(), broadcast_dimensions.end()) !=
            Range(ls->rank())) {
      return Fail(Err(name, both + ": broadcast_dimensions " + DimsText(broadcast_dimensions) +
                                " must be empty or the identity for operands of equal rank"));
    }
    small_map = Range(small.rank());
  } else if (broadcast_dimensions.empty()) {
    if (small.rank() != 0) {
      return Fail(Err(name, both + " are incompatible: their ranks differ and no "
                                   "broadcast_dimensions were given"));
    }
  } else {
    if (static_cast<int64_t>(broadcast_dimensions.size()) != small.rank()) {
      return Fail(Err(name, both + ": broadcast_dimensions " + DimsText(broadcast_dimensions) +
                                " must have one entry per dimension of the lower-rank operand"));
    }
    for (size_t i = 0; i < broadcast_dimensions.size(); ++i) {
      const int64_t d = broadcast_dimensions[i];
      if (d < 0 || d >= large.rank() || (i > 0 && d <= broadcast_dimensions[i - 1])) {
        return Fail(Err(name, both + ": broadcast_dimensions " + DimsText(broadcast_dimensions) +
                                  " must be increasing dimensions of the higher-rank operand"));
      }
    }
    small_map.assign(broadcast_dimensions.begin(), broadcast_dimensions.end());
  }
  for (size_t i = 0; i < small_map.size(); ++i) {
    const size_t o = static_cast<size_t>(small_map[i]);
    const int64_t sd = small.dims()[i];
    if (sd == out[o] || sd == 1) continue;
    if (out[o] == 1) {
      out[o] = sd;
      continue;
    }
    return Fail(Err(name, both + " are incompatible: dimension " + std::to_string(i) +
                              " of size " + std::to_string(sd) + " does not match dimension " +
                              std::to_string(o) + " of size " + std::to_string(out[o])));
  }
  OpId l = lhs, r = rhs;
  OpId& small_id = lhs_larger ? r : l;
  OpId& large_id = lhs_larger ? l : r;
  large_id = BroadcastTo(large_id, out, large_map);
  small_id = BroadcastTo(small_id, out, small_map);
  ET result = ls->dtype();
  std::vector<std::pair<std::string, Attr>> attrs;
  if (info.direction != nullptr) {
    result = ET::ElementType_PRED;
    attrs.push_back({"comparison_direction", Attr::Enum("comparison_direction", info.direction)});
    attrs.push_back({"compare_type", Attr::Enum("comparison_type", CompareType(ls->dtype()))});
  }
  if (b == BinaryOp::kComplex) {
    result = ls->dtype() == ET::ElementType_F32 ? ET::ElementType_C64 : ET::ElementType_C128;
  }
  return AddNode1(MakeNode(info.op, {V(l).ref, V(r).ref}, {Shape::Array(result, out)},
                           std::move(attrs)));
}


// ---- Shapes -----------------------------------------------------------------------

namespace {
int BitWidth(ET t) {
  const TypeInfo* i = Info(t);
  return i ? i->bits : 0;
}
}  // namespace

StatusOr<OpId> Builder::ConvertElementType(OpId operand, ElementType dtype) {
  StatusOr<Shape> s = ArrayOf(operand, "ConvertElementType");
  if (!s.ok()) return Fail(s.status());
  if (Info(dtype) == nullptr) {
    return Fail(Err("ConvertElementType",
                    "invalid element type " + std::to_string(static_cast<int>(dtype))));
  }
  if (IsComplex(s->dtype()) && !IsComplex(dtype)) {
    return Fail(Err("ConvertElementType", "cannot convert " + s->ToString() + " to " +
                                              std::string(XlaTypeName(dtype)) +
                                              " (use Real / Imag)"));
  }
  return AddNode1(MakeNode("stablehlo.convert", {V(operand).ref},
                           {Shape::Array(dtype, s->dims())}));
}

StatusOr<OpId> Builder::BitcastConvertType(OpId operand, ElementType dtype) {
  constexpr std::string_view kOp = "BitcastConvertType";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  if (Info(dtype) == nullptr) {
    return Fail(Err(kOp, "invalid element type " + std::to_string(static_cast<int>(dtype))));
  }
  const int from = BitWidth(s->dtype()), to = BitWidth(dtype);
  if (IsPred(s->dtype()) || IsPred(dtype) || from % 8 != 0 || to % 8 != 0) {
    return Fail(Err(kOp, "cannot bitcast " + s->ToString() + " to " +
                             std::string(XlaTypeName(dtype)) +
                             " (pred and sub-byte types have no bit layout)"));
  }
  std::vector<int64_t> dims = s->dims();
  if (from > to) {
    dims.push_back(from / to);
  } else if (from < to) {
    if (dims.empty() || dims.back() != to / from) {
      return Fail(Err(kOp, "bitcasting " + s->ToString() + " to the wider " +
                               std::string(XlaTypeName(dtype)) + " needs a last dimension of " +
                               std::to_string(to / from)));
    }
    dims.pop_back();
  }
  return AddNode1(MakeNode("stablehlo.bitcast_convert", {V(operand).ref},
                           {Shape::Array(dtype, dims)}));
}

StatusOr<OpId> Builder::Broadcast(OpId operand, std::span<const int64_t> sizes) {
  StatusOr<Shape> s = ArrayOf(operand, "Broadcast");
  if (!s.ok()) return Fail(s.status());
  std::vector<int64_t> dims(sizes.begin(), sizes.end());
  dims.insert(dims.end(), s->dims().begin(), s->dims().end());
  StatusOr<Shape> out = Shape::CheckedArray(s->dtype(), dims);
  if (!out.ok()) return Fail(Err("Broadcast", out.status().message()));
  return AddNode1(MakeNode("stablehlo.broadcast_in_dim", {V(operand).ref}, {*out},
                           {{"broadcast_dimensions",
                             Attr::I64Array(Range(s->rank(), static_cast<int64_t>(sizes.size())))}}));
}

StatusOr<OpId> Builder::BroadcastInDim(OpId operand, std::span<const int64_t> out_dims,
                                       std::span<const int64_t> broadcast_dimensions) {
  constexpr std::string_view kOp = "BroadcastInDim";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> out =
      Shape::CheckedArray(s->dtype(), std::vector<int64_t>(out_dims.begin(), out_dims.end()));
  if (!out.ok()) return Fail(Err(kOp, out.status().message()));
  if (static_cast<int64_t>(broadcast_dimensions.size()) != s->rank()) {
    return Fail(Err(kOp, "broadcast_dimensions " + DimsText(broadcast_dimensions) +
                             " must have one entry per dimension of " + s->ToString()));
  }
  JITD_RETURN_IF_ERROR(
      Fail(CheckDimList(kOp, "broadcast_dimensions", broadcast_dimensions, out->rank())));
  for (size_t i = 0; i < broadcast_dimensions.size(); ++i) {
    const int64_t o = out_dims[static_cast<size_t>(broadcast_dimensions[i])];
    if (s->dims()[i] != 1 && s->dims()[i] != o) {
      return Fail(Err(kOp, "operand " + s->ToString() + " dimension " + std::to_string(i) +
                               " cannot broadcast to dimension " +
                               std::to_string(broadcast_dimensions[i]) + " of " +
                               out->ToString()));
    }
  }
  return AddNode1(MakeNode("stablehlo.broadcast_in_dim", {V(operand).ref}, {*out},
                           {{"broadcast_dimensions",
                             Attr::I64Array({broadcast_dimensions.begin(),
                                             broadcast_dimensions.end()})}}));
}

StatusOr<OpId> Builder::Reshape(OpId operand, std::optional<std::vector<int64_t>> dimensions,
                                std::span<const int64_t> new_sizes) {
  StatusOr<Shape> s = ArrayOf(operand, "Reshape");
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> out =
      Shape::CheckedArray(s->dtype(), std::vector<int64_t>(new_sizes.begin(), new_sizes.end()));
  if (!out.ok()) return Fail(Err("Reshape", out.status().message()));
  if (out->num_elements() != s->num_elements()) {
    return Fail(Err("Reshape", "cannot reshape " + s->ToString() + " (" +
                                   std::to_string(s->num_elements()) + " elements) to " +
                                   out->ToString() + " (" +
                                   std::to_string(out->num_elements()) + " elements)"));
  }
  OpId x = operand;
  if (dimensions.has_value() && *dimensions != Range(s->rank())) {
    JITD_ASSIGN_OR_RETURN(x, Transpose(operand, *dimensions));
  }
  return AddNode1(MakeNode("stablehlo.reshape", {V(x).ref}, {*out}));
}

StatusOr<OpId> Builder::Transpose(OpId operand, std::span<const int64_t> permutation) {
  StatusOr<Shape> s = ArrayOf(operand, "Transpose");
  if (!s.ok()) return Fail(s.status());
  if (static_cast<int64_t>(permutation.size()) != s->rank()) {
    return Fail(Err("Transpose", "permutation " + DimsText(permutation) +
                                     " is not a permutation of the dimensions of " +
                                     s->ToString()));
  }
  JITD_RETURN_IF_ERROR(Fail(CheckDimList("Transpose", "permutation", permutation, s->rank())));
  std::vector<int64_t> dims;
  for (int64_t p : permutation) dims.push_back(s->dims()[static_cast<size_t>(p)]);
  return AddNode1(MakeNode("stablehlo.transpose", {V(operand).ref},
                           {Shape::Array(s->dtype(), dims)},
                           {{"permutation", Attr::I64Array({permutation.begin(), permutation.end()})}}));
}

StatusOr<OpId> Builder::Rev(OpId operand, std::span<const int64_t> dimensions) {
  StatusOr<Shape> s = ArrayOf(operand, "Rev");
  if (!s.ok()) return Fail(s.status());
  JITD_RETURN_IF_ERROR(Fail(CheckDimList("Rev", "dimensions", dimensions, s->rank())));
  return AddNode1(MakeNode("stablehlo.reverse", {V(operand).ref}, {*s},
                           {{"dimensions", Attr::I64Array({dimensions.begin(), dimensions.end()})}}));
}

StatusOr<OpId> Builder::Slice(OpId operand, std::span<const int64_t> start,
                              std::span<const int64_t> limit, std::span<const int64_t> strides) {
  StatusOr<Shape> s = ArrayOf(operand, "Slice");
  if (!s.ok()) return Fail(s.status());
  const size_t rank = static_cast<size_t>(s->rank());
  std::vector<int64_t> st(strides.begin(), strides.end());
  if (st.empty()) st.assign(rank, 1);
  if (start.size() != rank || limit.size() != rank || st.size() != rank) {
    return Fail(Err("Slice", "start " + DimsText(start) + ", limit " + DimsText(limit) +
                                 " and strides " + DimsText(st) + " need " +
                                 std::to_string(rank) + " entries for " + s->ToString()));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i) {
    if (start[i] < 0 || start[i] > limit[i] || limit[i] > s->dims()[i] || st[i] < 1) {
      return Fail(Err("Slice", "dimension " + std::to_string(i) + ": [" +
                                   std::to_string(start[i]) + ":" + std::to_string(limit[i]) +
                                   ":" + std::to_string(st[i]) + "] is not within " +
                                   s->ToString() + " (need 0 <= start <= limit <= size, "
                                   "stride >= 1)"));
    }
    dims.push_back((limit[i] - start[i] + st[i] - 1) / st[i]);
  }
  return AddNode1(MakeNode("stablehlo.slice", {V(operand).ref}, {Shape::Array(s->dtype(), dims)},
                           {{"start_indices", Attr::I64Array({start.begin(), start.end()})},
                            {"limit_indices", Attr::I64Array({limit.begin(), limit.end()})},
                            {"strides", Attr::I64Array(st)}}));
}

StatusOr<OpId> Builder::SliceInDim(OpId operand, int64_t start, int64_t limit, int64_t stride,
                                   int64_t dimno) {
  StatusOr<Shape> s = ArrayOf(operand, "SliceInDim");
  if (!s.ok()) return Fail(s.status());
  if (dimno < 0 || dimno >= s->rank()) {
    return Fail(Err("SliceInDim", "dimension " + std::to_string(dimno) +
                                      " is out of range for " + s->ToString()));
  }
  std::vector<int64_t> st(static_cast<size_t>(s->rank()), 0), li = s->dims(),
      sd(static_cast<size_t>(s->rank()), 1);
  st[static_cast<size_t>(dimno)] = start;
  li[static_cast<size_t>(dimno)] = limit;
  sd[static_cast<size_t>(dimno)] = stride;
  return Slice(operand, st, li, sd);
}

namespace {
// Start indices: `rank` integer scalars of one type.
Status CheckIndices(std::string_view op, const std::vector<Shape>& shapes, int64_t rank) {
  if (static_cast<int64_t>(shapes.size()) != rank) {
    return Err(op, "needs " + std::to_string(rank) + " start indices, got " +
                       std::to_string(shapes.size()));
  }
  for (const Shape& s : shapes) {
    if (!s.is_array() || s.rank() != 0 || !IsInt(s.dtype()) || s.dtype() != shapes[0].dtype()) {
      return Err(op, "start indices must be integer scalars of one type, got " + s.ToString());
    }
  }
  return Status::Ok();
}
}  // namespace

StatusOr<OpId> Builder::DynamicSlice(OpId operand, std::span<const OpId> start_indices,
                                     std::span<const int64_t> slice_sizes) {
  constexpr std::string_view kOp = "DynamicSlice";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  std::vector<Shape> idx;
  std::vector<ValueRef> refs = {V(operand).ref};
  for (OpId i : start_indices) {
    StatusOr<const Value*> v = Get(i, kOp);
    if (!v.ok()) return Fail(v.status());
    idx.push_back((*v)->shape);
    refs.push_back((*v)->ref);
  }
  JITD_RETURN_IF_ERROR(Fail(CheckIndices(kOp, idx, s->rank())));
  if (static_cast<int64_t>(slice_sizes.size()) != s->rank()) {
    return Fail(Err(kOp, "slice_sizes " + DimsText(slice_sizes) + " need one entry per dimension of " +
                             s->ToString()));
  }
  for (size_t i = 0; i < slice_sizes.size(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > s->dims()[i]) {
      return Fail(Err(kOp, "slice_sizes " + DimsText(slice_sizes) + " exceed " + s->ToString()));
    }
  }
  return AddNode1(MakeNode("stablehlo.dynamic_slice", refs,
                           {Shape::Array(s->dtype(), {slice_sizes.begin(), slice_sizes.end()})},
                           {{"slice_sizes", Attr::I64Array({slice_sizes.begin(), slice_sizes.end()})}}));
}

StatusOr<OpId> Builder::DynamicUpdateSlice(OpId operand, OpId update,
                                           std::span<const OpId> start_indices) {
  constexpr std::string_view kOp = "DynamicUpdateSlice";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> u = ArrayOf(update, kOp);
  if (!u.ok()) return Fail(u.status());
  std::vector<Shape> idx;
  std::vector<ValueRef> refs = {V(operand).ref, V(update).ref};
  for (OpId i : start_indices) {
    StatusOr<const Value*> v = Get(i, kOp);
    if (!v.ok()) return Fail(v.status());
    idx.push_back((*v)->shape);
    refs.push_back((*v)->ref);
  }
  JITD_RETURN_IF_ERROR(Fail(CheckIndices(kOp, idx, s->rank())));
  bool fits = u->rank() == s->rank() && u->dtype() == s->dtype();
  for (size_t i = 0; fits && i < u->dims().size(); ++i) fits = u->dims()[i] <= s->dims()[i];
  if (!fits) {
    return Fail(Err(kOp, "update " + u->ToString() + " does not fit in operand " + s->ToString()));
  }
  return AddNode1(MakeNode("stablehlo.dynamic_update_slice", refs, {*s}));
}

StatusOr<OpId> Builder::Concatenate(std::span<const OpId> operands, int64_t dimension) {
  constexpr std::string_view kOp = "ConcatInDim";
  if (operands.empty()) return Fail(Err(kOp, "needs at least one operand"));
  std::vector<ValueRef> refs;
  std::optional<Shape> first;
  std::vector<int64_t> dims;
  for (OpId o : operands) {
    StatusOr<Shape> s = ArrayOf(o, kOp);
    if (!s.ok()) return Fail(s.status());
    refs.push_back(V(o).ref);
    if (!first) {
      first = *s;
      if (dimension < 0 || dimension >= s->rank()) {
        return Fail(Err(kOp, "dimension " + std::to_string(dimension) + " is out of range for " +
                                 s->ToString()));
      }
      dims = s->dims();
      continue;
    }
    bool ok = s->dtype() == first->dtype() && s->rank() == first->rank();
    for (int64_t i = 0; ok && i < s->rank(); ++i) {
      ok = i == dimension || s->dims()[static_cast<size_t>(i)] == first->dims()[static_cast<size_t>(i)];
    }
    if (!ok) {
      return Fail(Err(kOp, "shapes " + first->ToString() + " and " + s->ToString() +
                               " cannot be concatenated in dimension " + std::to_string(dimension)));
    }
    dims[static_cast<size_t>(dimension)] += s->dims()[static_cast<size_t>(dimension)];
  }
  StatusOr<Shape> out = Shape::CheckedArray(first->dtype(), dims);
  if (!out.ok()) return Fail(Err(kOp, out.status().message()));
  return AddNode1(MakeNode("stablehlo.concatenate", refs, {*out},
                           {{"dimension", Attr::Int(dimension)}}));
}

StatusOr<OpId> Builder::Pad(OpId operand, OpId padding_value, std::span<const int64_t> low,
                            std::span<const int64_t> high, std::span<const int64_t> interior) {
  StatusOr<Shape> s = ArrayOf(operand, "Pad");
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> p = ArrayOf(padding_value, "Pad");
  if (!p.ok()) return Fail(p.status());
  if (p->rank() != 0 || p->dtype() != s->dtype()) {
    return Fail(Err("Pad", "padding value " + p->ToString() + " must be a scalar of " +
                               s->ToString() + "'s element type"));
  }
  const size_t rank = static_cast<size_t>(s->rank());
  std::vector<int64_t> in(interior.begin(), interior.end());
  if (in.empty()) in.assign(rank, 0);
  if (low.size() != rank || high.size() != rank || in.size() != rank) {
    return Fail(Err("Pad", "padding needs " + std::to_string(rank) + " entries for " + s->ToString()));
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = s->dims()[i];
    // Pad = a window of 1 over the interior-dilated, edge-padded operand.
    const std::optional<int64_t> padded =
        in[i] < 0 || in[i] == INT64_MAX ? std::nullopt
                                        : WindowedSize(d, in[i] + 1, low[i], high[i], 1, 1, 1);
    const int64_t size = padded.value_or(-1);
    if (!padded.has_value()) {
      return Fail(Err("Pad", "dimension " + std::to_string(i) + " of " + s->ToString() +
                                 ": padding low " + std::to_string(low[i]) + ", high " +
                                 std::to_string(high[i]) + ", interior " + std::to_string(in[i]) +
                                 " is invalid"));
    }
    dims.push_back(size);
  }
  StatusOr<Shape> out = Shape::CheckedArray(s->dtype(), dims);
  if (!out.ok()) return Fail(Err("Pad", out.status().message()));
  return AddNode1(MakeNode("stablehlo.pad", {V(operand).ref, V(padding_value).ref}, {*out},
                           {{"edge_padding_low", Attr::I64Array({low.begin(), low.end()})},
                            {"edge_padding_high", Attr::I64Array({high.begin(), high.end()})},
                            {"interior_padding", Attr::I64Array(in)}}));
}

StatusOr<OpId> Builder::Iota(ElementType dtype, int64_t size) {
  return BroadcastedIota(Shape::Array(dtype, {size}), 0);
}

StatusOr<OpId> Builder::BroadcastedIota(const Shape& shape, int64_t dimension) {
  if (!shape.is_array()) return Fail(Err("Iota", "shape " + shape.ToString() + " is not an array"));
  StatusOr<Shape> out = Shape::CheckedArray(shape.dtype(), shape.dims());
  if (!out.ok()) return Fail(Err("Iota", out.status().message()));
  if (IsPred(shape.dtype())) return Fail(Err("Iota", "pred iota is not supported"));
  if (dimension < 0 || dimension >= shape.rank()) {
    return Fail(Err("Iota", "dimension " + std::to_string(dimension) + " is out of range for " +
                                shape.ToString()));
  }
  return AddNode1(MakeNode("stablehlo.iota", {}, {*out}, {{"iota_dimension", Attr::Int(dimension)}}));
}

StatusOr<OpId> Builder::Select(OpId pred, OpId on_true, OpId on_false) {
  StatusOr<Shape> p = ArrayOf(pred, "Select");
  if (!p.ok()) return Fail(p.status());
  StatusOr<const Value*> t = Get(on_true, "Select");
  if (!t.ok()) return Fail(t.status());
  StatusOr<const Value*> f = Get(on_false, "Select");
  if (!f.ok()) return Fail(f.status());
  const Shape& ts = (*t)->shape;
  if (ts != (*f)->shape) {
    return Fail(Err("Select", "on_true " + ts.ToString() + " and on_false " +
                                  (*f)->shape.ToString() + " differ"));
  }
  if (!IsPred(p->dtype()) || (p->rank() != 0 && (!ts.is_array() || p->dims() != ts.dims()))) {
    return Fail(Err("Select", "pred " + p->ToString() + " must be a pred scalar or a pred array "
                                  "of the dims of " + ts.ToString()));
  }
  return AddNode1(MakeNode("stablehlo.select", {V(pred).ref, V(on_true).ref, V(on_false).ref},
                           {ts}));
}

StatusOr<OpId> Builder::Clamp(OpId min, OpId operand, OpId max) {
  StatusOr<Shape> lo = ArrayOf(min, "Clamp");
  if (!lo.ok()) return Fail(lo.status());
  StatusOr<Shape> x = ArrayOf(operand, "Clamp");
  if (!x.ok()) return Fail(x.status());
  StatusOr<Shape> hi = ArrayOf(max, "Clamp");
  if (!hi.ok()) return Fail(hi.status());
  for (const Shape* b : {&*lo, &*hi}) {
    if (b->dtype() != x->dtype() || (b->rank() != 0 && b->dims() != x->dims())) {
      return Fail(Err("Clamp", "min " + lo->ToString() + " and max " + hi->ToString() +
                                   " must be scalars or arrays of operand " + x->ToString()));
    }
  }
  return AddNode1(MakeNode("stablehlo.clamp", {V(min).ref, V(operand).ref, V(max).ref}, {*x}));
}


// ---- Inlining embedded computations ---------------------------------------------

namespace {

// Copies `src`'s nodes to the end of `dst`. References to src's top level
// are mapped: argument i -> arg_map[i] (a reference valid at dst's top
// level), node j -> node j + (dst's node count before the copy).
// Returns the mapping for src's top-level references (e.g. its results).
class Inliner {
 public:
  Inliner(std::vector<ValueRef> arg_map, int32_t offset)
      : arg_map_(std::move(arg_map)), offset_(offset) {}

  ValueRef Map(ValueRef r, int32_t depth) const {
    ValueRef m = r.node == ValueRef::kArg ? arg_map_[static_cast<size_t>(r.index)]
                                          : ValueRef{r.node + offset_, r.index, 0};
    m.up += depth;
    return m;
  }

  void Append(Graph& dst, const Graph& src) const {
    for (const Node& n : src.nodes) {
      Node copy = n;
      RemapNode(copy, 0);
      dst.nodes.push_back(std::move(copy));
    }
  }

  // Maps the references of `n` (at `depth` below the copied top level)
  // that point at the top level.
  void RemapNode(Node& n, int32_t depth) const {
    for (ValueRef& r : n.operands) {
      if (r.up == depth) r = Map(ValueRef{r.node, r.index, 0}, depth);
    }
    for (Graph& g : n.regions) {
      for (Node& inner : g.nodes) RemapNode(inner, depth + 1);
    }
  }

 private:
  std::vector<ValueRef> arg_map_;
  int32_t offset_;
};

std::vector<ValueRef> ArgRefs(size_t n) {
  std::vector<ValueRef> refs;
  for (size_t i = 0; i < n; ++i) refs.push_back({ValueRef::kArg, static_cast<int32_t>(i), 0});
  return refs;
}

Node ReturnNode(const char* name, std::vector<ValueRef> values) {
  return MakeNode(name, std::move(values), {});
}

std::string ShapesText(const std::vector<Shape>& shapes) {
  std::string s = "(";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapes[i].ToString();
  return s + ")";
}

// Checks that `c` takes `params` and returns `results` (flattened).
Status CheckSignature(std::string_view op, std::string_view role, const Computation& c,
                      const std::vector<Shape>& params, const std::vector<Shape>& results,
                      const std::vector<Shape>& actual_results) {
  if (c.parameters() != params || actual_results != results) {
    return Err(op, std::string(role) + " computation '" + c.name() + "' has signature " +
                       ShapesText(c.parameters()) + " -> " + ShapesText(actual_results) +
                       ", expected " + ShapesText(params) + " -> " + ShapesText(results));
  }
  return Status::Ok();
}

std::vector<uint8_t> I64Bytes(const std::vector<int64_t>& v) {
  std::vector<uint8_t> b(v.size() * 8);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Attr PaddingAttr(const std::vector<int64_t>& low, const std::vector<int64_t>& high) {
  std::vector<int64_t> flat;
  for (size_t i = 0; i < low.size(); ++i) {
    flat.push_back(low[i]);
    flat.push_back(high[i]);
  }
  return Attr::Dense(Shape::Array(ET::ElementType_S64, {static_cast<int64_t>(low.size()), 2}),
                     I64Bytes(flat));
}

std::vector<Shape> Scalars(const std::vector<ET>& types) {
  std::vector<Shape> out;
  for (ET t : types) out.push_back(Shape::Scalar(t));
  return out;
}

}  // namespace

Graph Builder::RegionOf(const Computation& c) {
  Graph g;
  g.args = c.parameters();
  g.arg_names = c.body_.arg_names;
  Inliner inliner(ArgRefs(g.args.size()), 0);
  inliner.Append(g, c.body_);
  std::vector<ValueRef> results;
  for (ValueRef r : c.results_) results.push_back(inliner.Map(r, 0));
  g.nodes.push_back(ReturnNode("stablehlo.return", results));
  return g;
}

// ---- Linear algebra ----------------------------------------------------------------

StatusOr<OpId> Builder::Dot(OpId lhs, OpId rhs) {
  StatusOr<Shape> l = ArrayOf(lhs, "Dot");
  if (!l.ok()) return Fail(l.status());
  StatusOr<Shape> r = ArrayOf(rhs, "Dot");
  if (!r.ok()) return Fail(r.status());
  if (l->rank() < 1 || l->rank() > 2 || r->rank() < 1 || r->rank() > 2) {
    return Fail(Err("Dot", "shapes " + l->ToString() + " and " + r->ToString() +
                               " must be vectors or matrices"));
  }
  DotDims d;
  d.lhs_contracting = {l->rank() - 1};
  d.rhs_contracting = {0};
  return DotGeneral(lhs, rhs, d);
}

StatusOr<OpId> Builder::DotGeneral(OpId lhs, OpId rhs, const DotDims& d) {
  constexpr std::string_view kOp = "DotGeneral";
  StatusOr<Shape> l = ArrayOf(lhs, kOp);
  if (!l.ok()) return Fail(l.status());
  StatusOr<Shape> r = ArrayOf(rhs, kOp);
  if (!r.ok()) return Fail(r.status());
  const std::string both = "shapes " + l->ToString() + " and " + r->ToString();
  if (l->dtype() != r->dtype()) return Fail(Err(kOp, both + " have different element types"));
  if (IsPred(l->dtype())) return Fail(Err(kOp, both + ": pred operands are not supported"));
  std::vector<int64_t> lhs_all = d.lhs_batch, rhs_all = d.rhs_batch;
  lhs_all.insert(lhs_all.end(), d.lhs_contracting.begin(), d.lhs_contracting.end());
  rhs_all.insert(rhs_all.end(), d.rhs_contracting.begin(), d.rhs_contracting.end());
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "lhs batch + contracting dimensions", lhs_all, l->rank())));
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "rhs batch + contracting dimensions", rhs_all, r->rank())));
  if (d.lhs_batch.size() != d.rhs_batch.size() ||
      d.lhs_contracting.size() != d.rhs_contracting.size()) {
    return Fail(Err(kOp, both + ": lhs and rhs need as many batch and contracting dimensions"));
  }
  auto size = [](const Shape& s, int64_t i) { return s.dims()[static_cast<size_t>(i)]; };
  for (size_t i = 0; i < d.lhs_batch.size(); ++i) {
    if (size(*l, d.lhs_batch[i]) != size(*r, d.rhs_batch[i])) {
      return Fail(Err(kOp, both + ": batch dimensions " + std::to_string(d.lhs_batch[i]) + " and " +
                               std::to_string(d.rhs_batch[i]) + " differ in size"));
    }
  }
  for (size_t i = 0; i < d.lhs_contracting.size(); ++i) {
    if (size(*l, d.lhs_contracting[i]) != size(*r, d.rhs_contracting[i])) {
      return Fail(Err(kOp, both + " are incompatible: contracting dimension " +
                               std::to_string(d.lhs_contracting[i]) + " of size " +
                               std::to_string(size(*l, d.lhs_contracting[i])) +
                               " does not match dimension " + std::to_string(d.rhs_contracting[i]) +
                               " of size " + std::to_string(size(*r, d.rhs_contracting[i]))));
    }
  }
  std::vector<int64_t> dims;
  for (int64_t b : d.lhs_batch) dims.push_back(size(*l, b));
  for (int64_t i = 0; i < l->rank(); ++i) {
    if (std::find(lhs_all.begin(), lhs_all.end(), i) == lhs_all.end()) dims.push_back(size(*l, i));
  }
  for (int64_t i = 0; i < r->rank(); ++i) {
    if (std::find(rhs_all.begin(), rhs_all.end(), i) == rhs_all.end()) dims.push_back(size(*r, i));
  }
  StatusOr<Shape> out = Shape::CheckedArray(l->dtype(), dims);
  if (!out.ok()) return Fail(Err(kOp, out.status().message()));
  std::vector<StructField> fields;
  auto field = [&](const char* name, const std::vector<int64_t>& v) {
    if (!v.empty()) fields.push_back({name, true, v});
  };
  field("lhs_batching_dimensions", d.lhs_batch);
  field("rhs_batching_dimensions", d.rhs_batch);
  field("lhs_contracting_dimensions", d.lhs_contracting);
  field("rhs_contracting_dimensions", d.rhs_contracting);
  return AddNode1(MakeNode("stablehlo.dot_general", {V(lhs).ref, V(rhs).ref}, {*out},
                           {{"dot_dimension_numbers", Attr::Struct("stablehlo.dot", fields)}}));
}

StatusOr<OpId> Builder::ConvGeneralDilated(OpId lhs, OpId rhs, const ConvOptions& o) {
  constexpr std::string_view kOp = "ConvGeneralDilated";
  StatusOr<Shape> l = ArrayOf(lhs, kOp);
  if (!l.ok()) return Fail(l.status());
  StatusOr<Shape> r = ArrayOf(rhs, kOp);
  if (!r.ok()) return Fail(r.status());
  const std::string both = "input " + l->ToString() + " and kernel " + r->ToString();
  const ConvDims& d = o.dims;
  const size_t n = d.input_spatial.size();
  if (l->dtype() != r->dtype()) return Fail(Err(kOp, both + " have different element types"));
  if (l->rank() != static_cast<int64_t>(n) + 2 || r->rank() != l->rank() ||
      d.kernel_spatial.size() != n || d.output_spatial.size() != n) {
    return Fail(Err(kOp, both + ": ranks must be 2 + the " + std::to_string(n) +
                             " spatial dimensions of the dimension numbers"));
  }
  auto cat = [](int64_t a, int64_t b, const std::vector<int64_t>& v) {
    std::vector<int64_t> out = {a, b};
    out.insert(out.end(), v.begin(), v.end());
    return out;
  };
  const int64_t rank = l->rank();
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "input dimension numbers",
                                         cat(d.input_batch, d.input_feature, d.input_spatial), rank)));
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(
      kOp, "kernel dimension numbers",
      cat(d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial), rank)));
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "output dimension numbers",
                                         cat(d.output_batch, d.output_feature, d.output_spatial), rank)));
  auto vec = [&](const std::vector<int64_t>& v, int64_t def, const char* what,
                 std::vector<int64_t>* out) -> Status {
    if (v.empty()) {
      out->assign(n, def);
    } else if (v.size() != n) {
      return Err(kOp, std::string(what) + " " + DimsText(v) + " needs " + std::to_string(n) + " entries");
    } else {
      *out = v;
    }
    return Status::Ok();
  };
  std::vector<int64_t> strides, lo, hi, ld, rd;
  JITD_RETURN_IF_ERROR(Fail(vec(o.window_strides, 1, "window_strides", &strides)));
  JITD_RETURN_IF_ERROR(Fail(vec(o.padding_low, 0, "padding_low", &lo)));
  JITD_RETURN_IF_ERROR(Fail(vec(o.padding_high, 0, "padding_high", &hi)));
  JITD_RETURN_IF_ERROR(Fail(vec(o.lhs_dilation, 1, "lhs_dilation", &ld)));
  JITD_RETURN_IF_ERROR(Fail(vec(o.rhs_dilation, 1, "rhs_dilation", &rd)));
  const int64_t fgc = o.feature_group_count, bgc = o.batch_group_count;
  auto dim = [](const Shape& s, int64_t i) { return s.dims()[static_cast<size_t>(i)]; };
  const int64_t in_features = dim(*l, d.input_feature);
  const int64_t batch = dim(*l, d.input_batch);
  const int64_t k_in = dim(*r, d.kernel_input_feature);
  const int64_t k_out = dim(*r, d.kernel_output_feature);
  if (fgc < 1 || bgc < 1 || (fgc > 1 && bgc > 1) || in_features != k_in * fgc ||
      k_out % fgc != 0 || k_out % bgc != 0 || batch % bgc != 0) {
    return Fail(Err(kOp, both + ": input features " + std::to_string(in_features) +
                             " must equal kernel input features " + std::to_string(k_in) +
                             " x feature_group_count " + std::to_string(fgc) +
                             ", and output features / batch must divide by the group counts"));
  }
  std::vector<int64_t> out(static_cast<size_t>(rank));
  out[static_cast<size_t>(d.output_batch)] = batch / bgc;
  out[static_cast<size_t>(d.output_feature)] = k_out;
  for (size_t i = 0; i < n; ++i) {
    if (strides[i] < 1 || ld[i] < 1 || rd[i] < 1) {
      return Fail(Err(kOp, "strides and dilations must be >= 1"));
    }
    const int64_t in = dim(*l, d.input_spatial[i]);
    const int64_t k = dim(*r, d.kernel_spatial[i]);
    const std::optional<int64_t> size = WindowedSize(in, ld[i], lo[i], hi[i], k, rd[i], strides[i]);
    if (!size) {
      return Fail(Err(kOp, both + ": padding or dilation of spatial dimension " +
                               std::to_string(i) + " makes it negative or too large"));
    }
    out[static_cast<size_t>(d.output_spatial[i])] = *size;
  }
  StatusOr<Shape> result = Shape::CheckedArray(l->dtype(), out);
  if (!result.ok()) return Fail(Err(kOp, result.status().message()));
  Attr conv;
  conv.kind = Attr::Kind::kConv;
  conv.conv = d;
  return AddNode1(MakeNode("stablehlo.convolution", {V(lhs).ref, V(rhs).ref}, {*result},
                           {{"window_strides", Attr::I64Array(strides)},
                            {"padding", PaddingAttr(lo, hi)},
                            {"lhs_dilation", Attr::I64Array(ld)},
                            {"rhs_dilation", Attr::I64Array(rd)},
                            {"dimension_numbers", conv},
                            {"feature_group_count", Attr::Int(fgc)},
                            {"batch_group_count", Attr::Int(bgc)}}));
}

StatusOr<OpId> Builder::Conv(OpId lhs, OpId rhs, std::span<const int64_t> strides,
                             Padding padding) {
  StatusOr<Shape> l = ArrayOf(lhs, "Conv");
  if (!l.ok()) return Fail(l.status());
  StatusOr<Shape> r = ArrayOf(rhs, "Conv");
  if (!r.ok()) return Fail(r.status());
  if (l->rank() < 2 || r->rank() != l->rank() ||
      static_cast<int64_t>(strides.size()) != l->rank() - 2) {
    return Fail(Err("Conv", "input " + l->ToString() + " and kernel " + r->ToString() +
                                " need equal ranks >= 2 and rank-2 strides, got " +
                                DimsText(strides)));
  }
  ConvOptions o;
  o.window_strides.assign(strides.begin(), strides.end());
  o.dims.input_batch = 0;
  o.dims.input_feature = 1;
  o.dims.kernel_output_feature = 0;
  o.dims.kernel_input_feature = 1;
  o.dims.output_batch = 0;
  o.dims.output_feature = 1;
  std::vector<int64_t> in, win;
  for (int64_t i = 2; i < l->rank(); ++i) {
    o.dims.input_spatial.push_back(i);
    o.dims.kernel_spatial.push_back(i);
    o.dims.output_spatial.push_back(i);
    in.push_back(l->dims()[static_cast<size_t>(i)]);
    win.push_back(r->dims()[static_cast<size_t>(i)]);
  }
  StatusOr<std::vector<std::pair<int64_t, int64_t>>> pads = MakePadding(padding, in, win, strides);
  if (!pads.ok()) return Fail(Err("Conv", pads.status().message()));
  for (auto [lo, hi] : *pads) {
    o.padding_low.push_back(lo);
    o.padding_high.push_back(hi);
  }
  return ConvGeneralDilated(lhs, rhs, o);
}

// ---- Ops with embedded computations -----------------------------------------------

StatusOr<Builder::ReduceInputs> Builder::CheckReduceInputs(std::string_view kOp,
                                                           std::span<const OpId> operands,
                                                           std::span<const OpId> init_values) {
  if (operands.empty() || operands.size() != init_values.size()) {
    return Fail(Err(kOp, "needs one or more operands and as many init values"));
  }
  std::vector<ValueRef> refs, init_refs;
  std::vector<ET> types;
  std::optional<Shape> first;
  for (size_t i = 0; i < operands.size(); ++i) {
    StatusOr<Shape> s = ArrayOf(operands[i], kOp);
    if (!s.ok()) return Fail(s.status());
    StatusOr<Shape> init = ArrayOf(init_values[i], kOp);
    if (!init.ok()) return Fail(init.status());
    if (first && s->dims() != first->dims()) {
      return Fail(Err(kOp, "operands " + first->ToString() + " and " + s->ToString() +
                               " have different dimensions"));
    }
    if (init->rank() != 0 || init->dtype() != s->dtype()) {
      return Fail(Err(kOp, "init value " + init->ToString() + " must be a scalar of operand " +
                               s->ToString() + "'s element type"));
    }
    if (!first) first = *s;
    types.push_back(s->dtype());
    refs.push_back(V(operands[i]).ref);
    init_refs.push_back(V(init_values[i]).ref);
  }
  return ReduceInputs{std::move(refs), std::move(init_refs), std::move(types), *first};
}

StatusOr<OpId> Builder::Reduce(std::span<const OpId> operands, std::span<const OpId> init_values,
                               const Computation& c, std::span<const int64_t> dimensions) {
  constexpr std::string_view kOp = "Reduce";
  JITD_ASSIGN_OR_RETURN(ReduceInputs in, CheckReduceInputs(kOp, operands, init_values));
  const std::vector<ValueRef>& refs = in.refs;
  const std::vector<ValueRef>& init_refs = in.init_refs;
  const std::vector<ET>& types = in.types;
  const Shape* first = &in.first;
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "dimensions", dimensions, first->rank())));
  std::vector<Shape> params = Scalars(types);
  const std::vector<Shape> results = params;
  params.insert(params.end(), results.begin(), results.end());
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "reducer", c, params, results, c.result_shapes_)));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < first->rank(); ++i) {
    if (std::find(dimensions.begin(), dimensions.end(), i) == dimensions.end()) {
      dims.push_back(first->dims()[static_cast<size_t>(i)]);
    }
  }
  Node node = MakeNode("stablehlo.reduce", refs, {},
                       {{"dimensions", Attr::I64Array({dimensions.begin(), dimensions.end()})}});
  node.operands.insert(node.operands.end(), init_refs.begin(), init_refs.end());
  for (ET t : types) node.results.push_back(Shape::Array(t, dims));
  node.regions.push_back(RegionOf(c));
  return OneResultOrTuple(std::move(node));
}

StatusOr<OpId> Builder::ReduceWindow(std::span<const OpId> operands,
                                     std::span<const OpId> init_values, const Computation& c,
                                     const WindowOptions& w) {
  constexpr std::string_view kOp = "ReduceWindow";
  JITD_ASSIGN_OR_RETURN(ReduceInputs in, CheckReduceInputs(kOp, operands, init_values));
  const std::vector<ValueRef>& refs = in.refs;
  const std::vector<ValueRef>& init_refs = in.init_refs;
  const std::vector<ET>& types = in.types;
  const Shape* first = &in.first;
  const size_t rank = static_cast<size_t>(first->rank());
  auto vec = [&](const std::vector<int64_t>& v, int64_t def, const char* what,
                 std::vector<int64_t>* out) -> Status {
    if (v.empty() && def >= 0) {
      out->assign(rank, def);
    } else if (v.size() != rank) {
      return Err(kOp, std::string(what) + " " + DimsText(v) + " needs " + std::to_string(rank) +
                          " entries for " + first->ToString());
    } else {
      *out = v;
    }
    return Status::Ok();
  };
  std::vector<int64_t> wd, ws, bd, wdil, lo, hi;
  JITD_RETURN_IF_ERROR(Fail(vec(w.dimensions, -1, "window_dimensions", &wd)));
  JITD_RETURN_IF_ERROR(Fail(vec(w.strides, 1, "window_strides", &ws)));
  JITD_RETURN_IF_ERROR(Fail(vec(w.base_dilations, 1, "base_dilations", &bd)));
  JITD_RETURN_IF_ERROR(Fail(vec(w.window_dilations, 1, "window_dilations", &wdil)));
  JITD_RETURN_IF_ERROR(Fail(vec(w.padding_low, 0, "padding_low", &lo)));
  JITD_RETURN_IF_ERROR(Fail(vec(w.padding_high, 0, "padding_high", &hi)));
  std::vector<int64_t> dims;
  for (size_t i = 0; i < rank; ++i) {
    if (wd[i] < 1 || ws[i] < 1 || bd[i] < 1 || wdil[i] < 1) {
      return Fail(Err(kOp, "window dimensions, strides and dilations must be >= 1, got window " +
                               DimsText(wd) + " strides " + DimsText(ws)));
    }
    const std::optional<int64_t> size =
        WindowedSize(first->dims()[i], bd[i], lo[i], hi[i], wd[i], wdil[i], ws[i]);
    if (!size) {
      return Fail(Err(kOp, "padding or dilation of dimension " + std::to_string(i) +
                               " makes it negative or too large"));
    }
    dims.push_back(*size);
  }
  StatusOr<Shape> checked = Shape::CheckedArray(types[0], dims);
  if (!checked.ok()) return Fail(Err(kOp, checked.status().message()));
  std::vector<Shape> params = Scalars(types);
  const std::vector<Shape> results = params;
  params.insert(params.end(), results.begin(), results.end());
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "reducer", c, params, results, c.result_shapes_)));
  Node node = MakeNode("stablehlo.reduce_window", refs, {},
                       {{"window_dimensions", Attr::I64Array(wd)},
                        {"window_strides", Attr::I64Array(ws)},
                        {"base_dilations", Attr::I64Array(bd)},
                        {"window_dilations", Attr::I64Array(wdil)},
                        {"padding", PaddingAttr(lo, hi)}});
  node.operands.insert(node.operands.end(), init_refs.begin(), init_refs.end());
  for (ET t : types) node.results.push_back(Shape::Array(t, dims));
  node.regions.push_back(RegionOf(c));
  return OneResultOrTuple(std::move(node));
}

StatusOr<OpId> Builder::Map(std::span<const OpId> operands, const Computation& c,
                            std::span<const int64_t> dimensions) {
  constexpr std::string_view kOp = "Map";
  if (operands.empty()) return Fail(Err(kOp, "needs at least one operand"));
  std::vector<ValueRef> refs;
  std::vector<ET> types;
  std::optional<Shape> first;
  for (OpId o : operands) {
    StatusOr<Shape> s = ArrayOf(o, kOp);
    if (!s.ok()) return Fail(s.status());
    if (first && s->dims() != first->dims()) {
      return Fail(Err(kOp, "operands " + first->ToString() + " and " + s->ToString() +
                               " have different dimensions"));
    }
    if (!first) first = *s;
    types.push_back(s->dtype());
    refs.push_back(V(o).ref);
  }
  std::vector<int64_t> dims(dimensions.begin(), dimensions.end());
  if (dims.empty()) dims = Range(first->rank());
  if (dims != Range(first->rank())) {
    return Fail(Err(kOp, "dimensions " + DimsText(dims) + " must be all dimensions of " +
                             first->ToString() + " in order"));
  }
  if (c.parameters() != Scalars(types) || c.result_shapes_.size() != 1 ||
      !c.result_shapes_[0].is_array() || c.result_shapes_[0].rank() != 0) {
    return Fail(Err(kOp, "computation '" + c.name() + "' has signature " +
                             ShapesText(c.parameters()) + " -> " + ShapesText(c.result_shapes_) +
                             ", expected " + ShapesText(Scalars(types)) + " -> (one scalar)"));
  }
  Node node = MakeNode("stablehlo.map", refs,
                       {Shape::Array(c.result_shapes_[0].dtype(), first->dims())},
                       {{"dimensions", Attr::I64Array(dims)}});
  node.regions.push_back(RegionOf(c));
  return AddNode1(std::move(node));
}

StatusOr<OpId> Builder::Sort(std::span<const OpId> operands, int64_t dimension,
                             const Computation* comparator, bool is_stable) {
  constexpr std::string_view kOp = "Sort";
  if (operands.empty()) return Fail(Err(kOp, "needs at least one operand"));
  std::vector<ValueRef> refs;
  std::vector<ET> types;
  std::vector<Shape> shapes;
  for (OpId o : operands) {
    StatusOr<Shape> s = ArrayOf(o, kOp);
    if (!s.ok()) return Fail(s.status());
    if (!shapes.empty() && s->dims() != shapes[0].dims()) {
      return Fail(Err(kOp, "operands " + shapes[0].ToString() + " and " + s->ToString() +
                               " have different dimensions"));
    }
    shapes.push_back(*s);
    types.push_back(s->dtype());
    refs.push_back(V(o).ref);
  }
  const int64_t rank = shapes[0].rank();
  if (dimension < 0) dimension += rank;
  if (dimension < 0 || dimension >= rank) {
    return Fail(Err(kOp, "dimension is out of range for " + shapes[0].ToString()));
  }
  std::vector<Shape> params;
  for (ET t : types) {
    params.push_back(Shape::Scalar(t));
    params.push_back(Shape::Scalar(t));
  }
  Graph region;
  if (comparator != nullptr) {
    JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "comparator", *comparator, params,
                                             {Shape::Scalar(ET::ElementType_PRED)},
                                             comparator->result_shapes_)));
    region = RegionOf(*comparator);
  } else {
    region.args = params;
    region.arg_names.assign(params.size(), "");
    const char* type = IsFloatOrComplex(types[0]) ? "TOTALORDER" : CompareType(types[0]);
    region.nodes.push_back(MakeNode(
        "stablehlo.compare", {{ValueRef::kArg, 0, 0}, {ValueRef::kArg, 1, 0}},
        {Shape::Scalar(ET::ElementType_PRED)},
        {{"comparison_direction", Attr::Enum("comparison_direction", "LT")},
         {"compare_type", Attr::Enum("comparison_type", type)}}));
    region.nodes.push_back(ReturnNode("stablehlo.return", {{0, 0, 0}}));
  }
  Node node = MakeNode("stablehlo.sort", refs, shapes,
                       {{"dimension", Attr::Int(dimension)}, {"is_stable", Attr::Bool(is_stable)}});
  node.regions.push_back(std::move(region));
  return OneResultOrTuple(std::move(node));
}

StatusOr<OpId> Builder::While(const Computation& condition, const Computation& body, OpId init) {
  constexpr std::string_view kOp = "While";
  StatusOr<const Value*> iv = Get(init, kOp);
  if (!iv.ok()) return Fail(iv.status());
  const Shape state = (*iv)->shape;
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "condition", condition, {state},
                                           {Shape::Scalar(ET::ElementType_PRED)},
                                           condition.result_shapes_)));
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "body", body, {state},
                                           body.root_is_tuple_ ? state.elements()
                                                               : std::vector<Shape>{state},
                                           body.result_shapes_)));
  if (!state.is_tuple()) {
    Node node = MakeNode("stablehlo.while", {V(init).ref}, {state});
    node.regions.push_back(RegionOf(condition));
    node.regions.push_back(RegionOf(body));
    return AddNode1(std::move(node));
  }
  // A tuple state is carried as its elements (flat while operands); each
  // region rebuilds the tuple for the computation's parameter.
  const std::vector<Shape>& elements = state.elements();
  auto region = [&](const Computation& c, bool is_body) {
    Graph g;
    g.args = elements;
    g.arg_names.assign(elements.size(), "");
    g.nodes.push_back(MakeNode("stablehlo.tuple", ArgRefs(elements.size()), {state}));
    Inliner inliner({ValueRef{0, 0, 0}}, 1);
    inliner.Append(g, c.body_);
    std::vector<ValueRef> results;
    if (is_body && !c.root_is_tuple_) {
      const ValueRef t = inliner.Map(c.results_[0], 0);
      for (size_t i = 0; i < elements.size(); ++i) {
        g.nodes.push_back(MakeNode("stablehlo.get_tuple_element", {t}, {elements[i]},
                                   {{"index", Attr::Int(static_cast<int64_t>(i), ET::ElementType_S32)}}));
        results.push_back({static_cast<int32_t>(g.nodes.size() - 1), 0, 0});
      }
    } else {
      for (ValueRef r : c.results_) results.push_back(inliner.Map(r, 0));
    }
    g.nodes.push_back(ReturnNode("stablehlo.return", results));
    return g;
  };
  std::vector<OpId> parts = Untuple(init);
  std::vector<ValueRef> refs;
  for (OpId p : parts) refs.push_back(V(p).ref);
  Node node = MakeNode("stablehlo.while", refs, elements);
  node.regions.push_back(region(condition, false));
  node.regions.push_back(region(body, true));
  std::vector<OpId> results = AddNode(std::move(node));
  std::vector<ValueRef> result_refs;
  for (OpId r : results) result_refs.push_back(V(r).ref);
  return AddNode1(MakeNode("stablehlo.tuple", result_refs, {state}));
}

StatusOr<OpId> Builder::Conditional(OpId pred, OpId true_operand, const Computation& true_c,
                                    OpId false_operand, const Computation& false_c) {
  StatusOr<Shape> p = ArrayOf(pred, "Conditional");
  if (!p.ok()) return Fail(p.status());
  if (!IsPred(p->dtype()) || p->rank() != 0) {
    return Fail(Err("Conditional", "predicate " + p->ToString() + " must be a pred scalar"));
  }
  // stablehlo.if: region 0 runs when pred is true.
  const Computation* ordered[] = {&true_c, &false_c};
  const OpId operands[] = {true_operand, false_operand};
  return ConditionalImpl(pred, "stablehlo.if", ordered, operands, "Conditional");
}

StatusOr<OpId> Builder::ConditionalIndexed(OpId index,
                                           std::span<const Computation* const> branches,
                                           std::span<const OpId> operands) {
  StatusOr<Shape> p = ArrayOf(index, "Conditional");
  if (!p.ok()) return Fail(p.status());
  if (p->dtype() != ET::ElementType_S32 || p->rank() != 0) {
    return Fail(Err("Conditional", "branch index " + p->ToString() + " must be an s32 scalar"));
  }
  if (branches.empty() || branches.size() != operands.size()) {
    return Fail(Err("Conditional", "needs one or more branches and one operand per branch"));
  }
  return ConditionalImpl(index, "stablehlo.case", branches, operands, "Conditional");
}

StatusOr<OpId> Builder::ConditionalImpl(OpId selector, const char* op_name,
                                        std::span<const Computation* const> branches,
                                        std::span<const OpId> operands, std::string_view what) {
  std::vector<Graph> regions;
  const Computation& first = *branches[0];
  for (size_t b = 0; b < branches.size(); ++b) {
    const Computation* c = branches[b];
    if (c == nullptr) return Fail(Err(what, "branch " + std::to_string(b) + " is NULL"));
    StatusOr<const Value*> v = Get(operands[b], what);
    if (!v.ok()) return Fail(v.status());
    JITD_RETURN_IF_ERROR(Fail(CheckSignature(what, "branch " + std::to_string(b), *c,
                                             {(*v)->shape}, first.result_shapes_,
                                             c->result_shapes_)));
    if (c->root_is_tuple_ != first.root_is_tuple_) {
      return Fail(Err(what, "branches return different shapes " + first.result_shape().ToString() +
                                " and " + c->result_shape().ToString()));
    }
    // The branch inlines the computation with its parameter bound to the
    // operand, captured from the enclosing block.
    ValueRef captured = (*v)->ref;
    captured.up = 1;
    Graph g;
    Inliner inliner({captured}, 0);
    inliner.Append(g, c->body_);
    std::vector<ValueRef> results;
    for (ValueRef r : c->results_) results.push_back(inliner.Map(r, 0));
    g.nodes.push_back(ReturnNode("stablehlo.return", results));
    regions.push_back(std::move(g));
  }
  Node node = MakeNode(op_name, {V(selector).ref}, first.result_shapes_);
  node.regions = std::move(regions);
  std::vector<OpId> results = AddNode(std::move(node));
  if (!first.root_is_tuple_) return results[0];
  std::vector<ValueRef> refs;
  for (OpId r : results) refs.push_back(V(r).ref);
  return AddNode1(MakeNode("stablehlo.tuple", refs, {first.result_shape()}));
}

// ---- Tuples, gather / scatter, tokens ------------------------------------------

StatusOr<OpId> Builder::Tuple(std::span<const OpId> elements) {
  std::vector<ValueRef> refs;
  std::vector<Shape> shapes;
  for (OpId e : elements) {
    StatusOr<const Value*> v = Get(e, "Tuple");
    if (!v.ok()) return Fail(v.status());
    refs.push_back((*v)->ref);
    shapes.push_back((*v)->shape);
  }
  return AddNode1(MakeNode("stablehlo.tuple", refs, {Shape::Tuple(shapes)}));
}

StatusOr<OpId> Builder::GetTupleElement(OpId tuple, int64_t index) {
  StatusOr<const Value*> v = Get(tuple, "GetTupleElement");
  if (!v.ok()) return Fail(v.status());
  const Shape shape = (*v)->shape;
  if (!shape.is_tuple() || index < 0 || index >= static_cast<int64_t>(shape.elements().size())) {
    return Fail(Err("GetTupleElement", "index " + std::to_string(index) +
                                           " is out of range for " + shape.ToString()));
  }
  const ValueRef ref = (*v)->ref;
  if (ref.node != ValueRef::kArg &&
      graph_.nodes[static_cast<size_t>(ref.node)].name == "stablehlo.tuple") {
    return NewValue(graph_.nodes[static_cast<size_t>(ref.node)].operands[static_cast<size_t>(index)],
                    shape.elements()[static_cast<size_t>(index)]);
  }
  return AddNode1(MakeNode("stablehlo.get_tuple_element", {ref},
                           {shape.elements()[static_cast<size_t>(index)]},
                           {{"index", Attr::Int(index, ET::ElementType_S32)}}));
}

StatusOr<OpId> Builder::Gather(OpId operand, OpId start_indices, const GatherDims& d,
                               std::span<const int64_t> slice_sizes, bool indices_are_sorted) {
  constexpr std::string_view kOp = "Gather";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> idx = ArrayOf(start_indices, kOp);
  if (!idx.ok()) return Fail(idx.status());
  if (!IsInt(idx->dtype())) {
    return Fail(Err(kOp, "start indices " + idx->ToString() + " must be integers"));
  }
  const int64_t ivd = d.index_vector_dim;
  if (ivd < 0 || ivd > idx->rank()) {
    return Fail(Err(kOp, "index_vector_dim " + std::to_string(ivd) + " is out of range for " +
                             idx->ToString()));
  }
  const int64_t index_size = ivd < idx->rank() ? idx->dims()[static_cast<size_t>(ivd)] : 1;
  if (static_cast<int64_t>(d.start_index_map.size()) != index_size) {
    return Fail(Err(kOp, "start_index_map " + DimsText(d.start_index_map) + " needs " +
                             std::to_string(index_size) + " entries (the index vector size)"));
  }
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "start_index_map", d.start_index_map, s->rank())));
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "collapsed_slice_dims", d.collapsed_slice_dims, s->rank())));
  if (static_cast<int64_t>(slice_sizes.size()) != s->rank()) {
    return Fail(Err(kOp, "slice_sizes " + DimsText(slice_sizes) + " need one entry per dimension of " +
                             s->ToString()));
  }
  for (size_t i = 0; i < slice_sizes.size(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > s->dims()[i]) {
      return Fail(Err(kOp, "slice_sizes " + DimsText(slice_sizes) + " exceed " + s->ToString()));
    }
  }
  std::vector<int64_t> offset_sizes;
  for (int64_t i = 0; i < s->rank(); ++i) {
    const bool collapsed = std::find(d.collapsed_slice_dims.begin(), d.collapsed_slice_dims.end(),
                                     i) != d.collapsed_slice_dims.end();
    if (collapsed) {
      if (slice_sizes[static_cast<size_t>(i)] > 1) {
        return Fail(Err(kOp, "collapsed dimension " + std::to_string(i) + " has slice size " +
                                 std::to_string(slice_sizes[static_cast<size_t>(i)])));
      }
      continue;
    }
    offset_sizes.push_back(slice_sizes[static_cast<size_t>(i)]);
  }
  if (d.offset_dims.size() != offset_sizes.size()) {
    return Fail(Err(kOp, "offset_dims " + DimsText(d.offset_dims) + " need " +
                             std::to_string(offset_sizes.size()) +
                             " entries (operand rank minus collapsed dimensions)"));
  }
  std::vector<int64_t> batch;
  for (int64_t i = 0; i < idx->rank(); ++i) {
    if (i != ivd) batch.push_back(idx->dims()[static_cast<size_t>(i)]);
  }
  const int64_t out_rank = static_cast<int64_t>(batch.size() + offset_sizes.size());
  for (size_t i = 0; i < d.offset_dims.size(); ++i) {
    if (d.offset_dims[i] < 0 || d.offset_dims[i] >= out_rank ||
        (i > 0 && d.offset_dims[i] <= d.offset_dims[i - 1])) {
      return Fail(Err(kOp, "offset_dims " + DimsText(d.offset_dims) +
                               " must be increasing dimensions of the result (rank " +
                               std::to_string(out_rank) + ")"));
    }
  }
  std::vector<int64_t> dims;
  size_t bi = 0, oi = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (oi < d.offset_dims.size() && d.offset_dims[oi] == i) {
      dims.push_back(offset_sizes[oi++]);
    } else {
      dims.push_back(batch[bi++]);
    }
  }
  std::vector<StructField> fields;
  if (!d.offset_dims.empty()) fields.push_back({"offset_dims", true, d.offset_dims});
  if (!d.collapsed_slice_dims.empty()) {
    fields.push_back({"collapsed_slice_dims", true, d.collapsed_slice_dims});
  }
  if (!d.start_index_map.empty()) fields.push_back({"start_index_map", true, d.start_index_map});
  fields.push_back({"index_vector_dim", false, {ivd}});
  return AddNode1(MakeNode("stablehlo.gather", {V(operand).ref, V(start_indices).ref},
                           {Shape::Array(s->dtype(), dims)},
                           {{"dimension_numbers", Attr::Struct("stablehlo.gather", fields)},
                            {"slice_sizes", Attr::I64Array({slice_sizes.begin(), slice_sizes.end()})},
                            {"indices_are_sorted", Attr::Bool(indices_are_sorted)}}));
}

StatusOr<OpId> Builder::Scatter(OpId operand, OpId indices, OpId updates, const Computation& c,
                                const ScatterDims& d, bool indices_are_sorted,
                                bool unique_indices) {
  constexpr std::string_view kOp = "Scatter";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> idx = ArrayOf(indices, kOp);
  if (!idx.ok()) return Fail(idx.status());
  StatusOr<Shape> u = ArrayOf(updates, kOp);
  if (!u.ok()) return Fail(u.status());
  if (!IsInt(idx->dtype())) {
    return Fail(Err(kOp, "scatter indices " + idx->ToString() + " must be integers"));
  }
  if (u->dtype() != s->dtype()) {
    return Fail(Err(kOp, "updates " + u->ToString() + " and operand " + s->ToString() +
                             " have different element types"));
  }
  const int64_t ivd = d.index_vector_dim;
  if (ivd < 0 || ivd > idx->rank()) {
    return Fail(Err(kOp, "index_vector_dim " + std::to_string(ivd) + " is out of range for " +
                             idx->ToString()));
  }
  const int64_t index_size = ivd < idx->rank() ? idx->dims()[static_cast<size_t>(ivd)] : 1;
  if (static_cast<int64_t>(d.scatter_dims_to_operand_dims.size()) != index_size) {
    return Fail(Err(kOp, "scatter_dims_to_operand_dims " + DimsText(d.scatter_dims_to_operand_dims) +
                             " needs " + std::to_string(index_size) + " entries"));
  }
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "scatter_dims_to_operand_dims",
                                         d.scatter_dims_to_operand_dims, s->rank())));
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "inserted_window_dims", d.inserted_window_dims, s->rank())));
  JITD_RETURN_IF_ERROR(Fail(CheckDimList(kOp, "update_window_dims", d.update_window_dims, u->rank())));
  const int64_t scatter_batch = idx->rank() - (ivd < idx->rank() ? 1 : 0);
  if (static_cast<int64_t>(d.update_window_dims.size() + d.inserted_window_dims.size()) != s->rank() ||
      u->rank() != scatter_batch + static_cast<int64_t>(d.update_window_dims.size())) {
    return Fail(Err(kOp, "updates " + u->ToString() + " do not match operand " + s->ToString() +
                             " and indices " + idx->ToString() +
                             " under the dimension numbers (update rank must be the index batch "
                             "rank plus update_window_dims, and update_window_dims plus "
                             "inserted_window_dims the operand rank)"));
  }
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "update", c,
                                           {Shape::Scalar(s->dtype()), Shape::Scalar(s->dtype())},
                                           {Shape::Scalar(s->dtype())}, c.result_shapes_)));
  std::vector<StructField> fields;
  if (!d.update_window_dims.empty()) fields.push_back({"update_window_dims", true, d.update_window_dims});
  if (!d.inserted_window_dims.empty()) {
    fields.push_back({"inserted_window_dims", true, d.inserted_window_dims});
  }
  if (!d.scatter_dims_to_operand_dims.empty()) {
    fields.push_back({"scatter_dims_to_operand_dims", true, d.scatter_dims_to_operand_dims});
  }
  fields.push_back({"index_vector_dim", false, {ivd}});
  Node node = MakeNode("stablehlo.scatter", {V(operand).ref, V(indices).ref, V(updates).ref}, {*s},
                       {{"scatter_dimension_numbers", Attr::Struct("stablehlo.scatter", fields)},
                        {"indices_are_sorted", Attr::Bool(indices_are_sorted)},
                        {"unique_indices", Attr::Bool(unique_indices)}});
  node.regions.push_back(RegionOf(c));
  return AddNode1(std::move(node));
}

StatusOr<OpId> Builder::CreateToken() {
  return AddNode1(MakeNode("stablehlo.create_token", {}, {Shape::Token()}));
}

StatusOr<OpId> Builder::AfterAll(std::span<const OpId> tokens) {
  std::vector<ValueRef> refs;
  for (OpId t : tokens) {
    StatusOr<const Value*> v = Get(t, "AfterAll");
    if (!v.ok()) return Fail(v.status());
    if (!(*v)->shape.is_token()) {
      return Fail(Err("AfterAll", "operand " + (*v)->shape.ToString() + " is not a token"));
    }
    refs.push_back((*v)->ref);
  }
  return AddNode1(MakeNode("stablehlo.after_all", refs, {Shape::Token()}));
}

StatusOr<OpId> Builder::InfeedWithToken(OpId token, const Shape& shape, std::string config) {
  StatusOr<const Value*> t = Get(token, "Infeed");
  if (!t.ok()) return Fail(t.status());
  if (!(*t)->shape.is_token()) {
    return Fail(Err("Infeed", "operand " + (*t)->shape.ToString() + " is not a token"));
  }
  std::vector<Shape> parts = shape.is_tuple() ? shape.elements() : std::vector<Shape>{shape};
  for (const Shape& p : parts) {
    if (!p.is_array()) {
      return Fail(Err("Infeed", "shape " + shape.ToString() +
                                    " must be an array or a tuple of arrays"));
    }
    JITD_RETURN_IF_ERROR(Fail(CheckShape("Infeed", p)));
  }
  std::vector<Shape> results = parts;
  results.push_back(Shape::Token());
  std::vector<OpId> ids = AddNode(MakeNode("stablehlo.infeed", {(*t)->ref}, results,
                                           {{"infeed_config", Attr::String(std::move(config))}}));
  const OpId new_token = ids.back();
  ids.pop_back();
  OpId value = ids[0];
  if (shape.is_tuple()) {
    std::vector<ValueRef> refs;
    for (OpId i : ids) refs.push_back(V(i).ref);
    value = AddNode1(MakeNode("stablehlo.tuple", refs, {shape}));
  }
  return TupleOfResults({value, new_token});
}

StatusOr<OpId> Builder::OutfeedWithToken(OpId operand, OpId token, std::string config) {
  StatusOr<const Value*> t = Get(token, "Outfeed");
  if (!t.ok()) return Fail(t.status());
  if (!(*t)->shape.is_token()) {
    return Fail(Err("Outfeed", "token operand " + (*t)->shape.ToString() + " is not a token"));
  }
  StatusOr<const Value*> v = Get(operand, "Outfeed");
  if (!v.ok()) return Fail(v.status());
  const Shape shape = (*v)->shape;
  std::vector<OpId> parts = shape.is_tuple() ? Untuple(operand) : std::vector<OpId>{operand};
  std::vector<ValueRef> refs;
  for (OpId p : parts) {
    if (!V(p).shape.is_array()) {
      return Fail(Err("Outfeed", "operand " + shape.ToString() +
                                     " must be an array or a tuple of arrays"));
    }
    refs.push_back(V(p).ref);
  }
  refs.push_back(V(token).ref);
  return AddNode1(MakeNode("stablehlo.outfeed", refs, {Shape::Token()},
                           {{"outfeed_config", Attr::String(std::move(config))}}));
}

StatusOr<OpId> Builder::ImplicitToken() {
  if (!implicit_token_) {
    JITD_ASSIGN_OR_RETURN(OpId t, CreateToken());
    implicit_token_ = t;
  }
  return *implicit_token_;
}

StatusOr<OpId> Builder::Infeed(const Shape& shape, std::string config) {
  JITD_ASSIGN_OR_RETURN(OpId token, ImplicitToken());
  JITD_ASSIGN_OR_RETURN(OpId pair, InfeedWithToken(token, shape, std::move(config)));
  std::vector<OpId> parts = Untuple(pair);
  implicit_token_ = parts[1];
  return parts[0];
}

StatusOr<OpId> Builder::Outfeed(OpId operand, std::string config) {
  JITD_ASSIGN_OR_RETURN(OpId token, ImplicitToken());
  JITD_ASSIGN_OR_RETURN(OpId t, OutfeedWithToken(operand, token, std::move(config)));
  implicit_token_ = t;
  return t;
}


// ---- More xla_client ops ----------------------------------------------------------

StatusOr<OpId> Builder::Call(const Computation& c, std::span<const OpId> operands) {
  std::vector<ValueRef> refs;
  std::vector<Shape> shapes;
  for (OpId o : operands) {
    StatusOr<const Value*> v = Get(o, "Call");
    if (!v.ok()) return Fail(v.status());
    refs.push_back((*v)->ref);
    shapes.push_back((*v)->shape);
  }
  if (shapes != c.parameters()) {
    return Fail(Err("Call", "computation '" + c.name() + "' takes " + ShapesText(c.parameters()) +
                                ", got operands " + ShapesText(shapes)));
  }
  const Inliner inliner(refs, static_cast<int32_t>(graph_.nodes.size()));
  inliner.Append(graph_, c.body_);
  std::vector<OpId> results;
  for (size_t i = 0; i < c.results_.size(); ++i) {
    results.push_back(NewValue(inliner.Map(c.results_[i], 0), c.result_shapes_[i]));
  }
  if (!c.root_is_tuple_) return results[0];
  std::vector<ValueRef> result_refs;
  for (OpId r : results) result_refs.push_back(V(r).ref);
  return AddNode1(MakeNode("stablehlo.tuple", result_refs, {c.result_shape()}));
}

StatusOr<OpId> Builder::ReducePrecision(OpId operand, int32_t exponent_bits,
                                        int32_t mantissa_bits) {
  StatusOr<Shape> s = ArrayOf(operand, "ReducePrecision");
  if (!s.ok()) return Fail(s.status());
  if (!IsFloat(s->dtype()) || exponent_bits < 1 || mantissa_bits < 0) {
    return Fail(Err("ReducePrecision", "needs a floating-point operand (got " + s->ToString() +
                                           "), exponent_bits >= 1 and mantissa_bits >= 0 (got " +
                                           std::to_string(exponent_bits) + ", " +
                                           std::to_string(mantissa_bits) + ")"));
  }
  return AddNode1(MakeNode("stablehlo.reduce_precision", {V(operand).ref}, {*s},
                           {{"exponent_bits", Attr::Int(exponent_bits, ET::ElementType_S32)},
                            {"mantissa_bits", Attr::Int(mantissa_bits, ET::ElementType_S32)}}));
}

StatusOr<OpId> Builder::ReplicaId() {
  return AddNode1(MakeNode("stablehlo.replica_id", {}, {Shape::Scalar(ET::ElementType_U32)}));
}

namespace {
// [..., n, n] of a float or complex type.
bool IsSquareBatch(const Shape& s) {
  return IsFloatOrComplex(s.dtype()) && s.rank() >= 2 &&
         s.dims()[static_cast<size_t>(s.rank() - 1)] == s.dims()[static_cast<size_t>(s.rank() - 2)];
}
}  // namespace

StatusOr<OpId> Builder::Cholesky(OpId a, bool lower) {
  StatusOr<Shape> s = ArrayOf(a, "Cholesky");
  if (!s.ok()) return Fail(s.status());
  if (!IsSquareBatch(*s)) {
    return Fail(Err("Cholesky", "operand " + s->ToString() +
                                    " must be [..., n, n] of a floating-point or complex type"));
  }
  return AddNode1(MakeNode("stablehlo.cholesky", {V(a).ref}, {*s}, {{"lower", Attr::Bool(lower)}}));
}

StatusOr<OpId> Builder::TriangularSolve(OpId a, OpId b, bool left_side, bool lower,
                                        bool unit_diagonal, int transpose_a) {
  constexpr std::string_view kOp = "TriangularSolve";
  StatusOr<Shape> as = ArrayOf(a, kOp);
  if (!as.ok()) return Fail(as.status());
  StatusOr<Shape> bs = ArrayOf(b, kOp);
  if (!bs.ok()) return Fail(bs.status());
  const int64_t rank = as->rank();
  bool ok = IsSquareBatch(*as) && bs->dtype() == as->dtype() && bs->rank() == rank;
  for (int64_t i = 0; ok && i + 2 < rank; ++i) ok = as->dims()[static_cast<size_t>(i)] == bs->dims()[static_cast<size_t>(i)];
  if (ok) {
    ok = bs->dims()[static_cast<size_t>(left_side ? rank - 2 : rank - 1)] ==
         as->dims()[static_cast<size_t>(rank - 1)];
  }
  if (!ok || transpose_a < 0 || transpose_a > 2) {
    return Fail(Err(kOp, "a " + as->ToString() + " must be [..., n, n] and b " + bs->ToString() +
                             " of the same type and batch with n " +
                             (left_side ? "rows" : "columns")));
  }
  static const char* kTranspose[] = {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
  return AddNode1(MakeNode("stablehlo.triangular_solve", {V(a).ref, V(b).ref}, {*bs},
                           {{"left_side", Attr::Bool(left_side)},
                            {"lower", Attr::Bool(lower)},
                            {"unit_diagonal", Attr::Bool(unit_diagonal)},
                            {"transpose_a", Attr::Enum("transpose", kTranspose[transpose_a])}}));
}

StatusOr<OpId> Builder::Fft(OpId operand, int fft_type, std::span<const int64_t> fft_length) {
  StatusOr<Shape> s = ArrayOf(operand, "Fft");
  if (!s.ok()) return Fail(s.status());
  static const char* kTypes[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  const size_t n = fft_length.size();
  if (fft_type < 0 || fft_type > 3 || n < 1 || n > 3 || static_cast<int64_t>(n) > s->rank()) {
    return Fail(Err("Fft", "needs an fft type and 1 to 3 (at most rank) fft lengths, got " +
                               DimsText(fft_length) + " for " + s->ToString()));
  }
  const size_t rank = static_cast<size_t>(s->rank());
  std::vector<int64_t> dims = s->dims();
  ET out = s->dtype();
  bool ok = true;
  auto trailing_match = [&](size_t skip_last) {
    for (size_t i = 0; i + skip_last < n; ++i) {
      if (dims[rank - n + i] != fft_length[i]) return false;
    }
    return true;
  };
  switch (fft_type) {
    case 0:
    case 1:
      ok = IsComplex(out) && trailing_match(0);
      break;
    case 2:
      ok = (out == ET::ElementType_F32 || out == ET::ElementType_F64) && trailing_match(0);
      out = out == ET::ElementType_F32 ? ET::ElementType_C64 : ET::ElementType_C128;
      dims[rank - 1] = fft_length[n - 1] / 2 + 1;
      break;
    case 3:
      ok = IsComplex(out) && trailing_match(1) && dims[rank - 1] == fft_length[n - 1] / 2 + 1;
      out = ComponentOf(out);
      dims[rank - 1] = fft_length[n - 1];
      break;
  }
  if (!ok) {
    return Fail(Err("Fft", std::string(kTypes[fft_type]) + " of " + s->ToString() +
                               " with fft_length " + DimsText(fft_length) +
                               ": the element type or trailing dimensions do not fit"));
  }
  return AddNode1(MakeNode("stablehlo.fft", {V(operand).ref}, {Shape::Array(out, dims)},
                           {{"fft_type", Attr::Enum("fft_type", kTypes[fft_type])},
                            {"fft_length", Attr::I64Array({fft_length.begin(), fft_length.end()})}}));
}

StatusOr<OpId> Builder::Rng(OpId a, OpId b, const Shape& shape, bool normal) {
  const std::string_view op = normal ? "RngNormal" : "RngUniform";
  StatusOr<Shape> as = ArrayOf(a, op);
  if (!as.ok()) return Fail(as.status());
  StatusOr<Shape> bs = ArrayOf(b, op);
  if (!bs.ok()) return Fail(bs.status());
  if (!shape.is_array()) return Fail(Err(op, "shape " + shape.ToString() + " is not an array"));
  JITD_RETURN_IF_ERROR(Fail(CheckShape(op, shape)));
  const ET t = shape.dtype();
  if (as->rank() != 0 || bs->rank() != 0 || as->dtype() != t || bs->dtype() != t ||
      (normal ? !IsFloat(t) : !(IsFloat(t) || IsInt(t)))) {
    return Fail(Err(op, "parameters " + as->ToString() + " and " + bs->ToString() +
                            " must be scalars of " + shape.ToString() + "'s element type, " +
                            (normal ? "a floating-point type" : "an integer or floating-point type")));
  }
  std::vector<uint8_t> bytes(shape.dims().size() * 8);
  if (!bytes.empty()) std::memcpy(bytes.data(), shape.dims().data(), bytes.size());
  const Shape dims_type = Shape::Array(ET::ElementType_S64, {shape.rank()});
  const OpId dims = AddNode1(MakeNode("stablehlo.constant", {}, {dims_type},
                                      {{"value", Attr::Dense(dims_type, std::move(bytes))}}));
  return AddNode1(MakeNode("stablehlo.rng", {V(a).ref, V(b).ref, V(dims).ref}, {shape},
                           {{"rng_distribution",
                             Attr::Enum("rng_distribution", normal ? "NORMAL" : "UNIFORM")}}));
}

StatusOr<OpId> Builder::SelectAndScatter(OpId operand, const Computation& select,
                                         const WindowOptions& w, OpId source, OpId init_value,
                                         const Computation& scatter) {
  constexpr std::string_view kOp = "SelectAndScatter";
  StatusOr<Shape> s = ArrayOf(operand, kOp);
  if (!s.ok()) return Fail(s.status());
  StatusOr<Shape> src = ArrayOf(source, kOp);
  if (!src.ok()) return Fail(src.status());
  StatusOr<Shape> init = ArrayOf(init_value, kOp);
  if (!init.ok()) return Fail(init.status());
  const size_t rank = static_cast<size_t>(s->rank());
  auto vec = [&](const std::vector<int64_t>& v, int64_t def) {
    return v.empty() && def >= 0 ? std::vector<int64_t>(rank, def) : v;
  };
  const std::vector<int64_t> wd = w.dimensions, ws = vec(w.strides, 1),
                             lo = vec(w.padding_low, 0), hi = vec(w.padding_high, 0);
  if (wd.size() != rank || ws.size() != rank || lo.size() != rank || hi.size() != rank) {
    return Fail(Err(kOp, "window dimensions, strides and padding need " + std::to_string(rank) +
                             " entries for " + s->ToString()));
  }
  std::vector<int64_t> windowed;
  for (size_t i = 0; i < rank; ++i) {
    if (wd[i] < 1 || ws[i] < 1 || lo[i] < 0 || hi[i] < 0) {
      return Fail(Err(kOp, "window dimensions and strides must be >= 1, padding >= 0"));
    }
    const std::optional<int64_t> size = WindowedSize(s->dims()[i], 1, lo[i], hi[i], wd[i], 1, ws[i]);
    if (!size) return Fail(Err(kOp, "padding of dimension " + std::to_string(i) + " is too large"));
    windowed.push_back(*size);
  }
  if (src->dtype() != s->dtype() || src->dims() != windowed || init->rank() != 0 ||
      init->dtype() != s->dtype()) {
    return Fail(Err(kOp, "source " + src->ToString() + " must be " +
                             Shape::Array(s->dtype(), windowed).ToString() +
                             " (the windowed operand) and init value " + init->ToString() +
                             " a scalar of its element type"));
  }
  const Shape scalar = Shape::Scalar(s->dtype());
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "select", select, {scalar, scalar},
                                           {Shape::Scalar(ET::ElementType_PRED)},
                                           select.result_shapes_)));
  JITD_RETURN_IF_ERROR(Fail(CheckSignature(kOp, "scatter", scatter, {scalar, scalar}, {scalar},
                                           scatter.result_shapes_)));
  Node node = MakeNode("stablehlo.select_and_scatter",
                       {V(operand).ref, V(source).ref, V(init_value).ref}, {*s},
                       {{"window_dimensions", Attr::I64Array(wd)},
                        {"window_strides", Attr::I64Array(ws)},
                        {"padding", PaddingAttr(lo, hi)}});
  node.regions.push_back(RegionOf(select));
  node.regions.push_back(RegionOf(scatter));
  return AddNode1(std::move(node));
}

// ---- Build --------------------------------------------------------------------

namespace {
// Maps every reference to the top level of `g` (at any nesting depth)
// through `map`.
void RemapTop(std::vector<Node>& nodes, int32_t depth,
              const std::function<ValueRef(ValueRef)>& map) {
  for (Node& n : nodes) {
    for (ValueRef& r : n.operands) {
      if (r.up == depth) {
        ValueRef m = map(ValueRef{r.node, r.index, 0});
        m.up = depth;
        r = m;
      }
    }
    for (Graph& g : n.regions) RemapTop(g.nodes, depth + 1, map);
  }
}
}  // namespace

StatusOr<std::shared_ptr<const Computation>> Builder::Build(OpId root) {
  if (!error_.ok()) {
    return Status(error_.code(), "Build of '" + name_ + "' failed: an earlier op failed: " +
                                     error_.message());
  }
  if (values_.empty()) return InvalidArgument("Build of '" + name_ + "': the builder has no ops");
  if (root == 0) root = (static_cast<uint64_t>(serial_) << 32) | values_.size();
  JITD_ASSIGN_OR_RETURN(const Value* r, Get(root, "Build"));
  // Parameters in index order, 0..n-1.
  std::vector<size_t> order(params_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return params_[a].index < params_[b].index; });
  std::vector<int32_t> position(params_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    if (params_[order[i]].index != static_cast<int64_t>(i)) {
      return InvalidArgument("Build of '" + name_ + "': parameter numbers must be 0.." +
                             std::to_string(params_.size() - 1) + ", parameter " +
                             std::to_string(i) + " is missing");
    }
    position[order[i]] = static_cast<int32_t>(i);
  }
  auto c = std::make_shared<Computation>();
  c->name_ = name_;
  c->body_.nodes = graph_.nodes;
  for (size_t i = 0; i < order.size(); ++i) {
    c->body_.args.push_back(graph_.args[order[i]]);
    c->body_.arg_names.push_back(graph_.arg_names[order[i]]);
  }
  const auto map = [&](ValueRef v) {
    if (v.node == ValueRef::kArg) v.index = position[static_cast<size_t>(v.index)];
    return v;
  };
  RemapTop(c->body_.nodes, 0, map);
  c->parameters_ = c->body_.args;
  c->result_shape_ = r->shape;
  const ValueRef root_ref = map(r->ref);
  if (root_ref.node != ValueRef::kArg &&
      c->body_.nodes[static_cast<size_t>(root_ref.node)].name == "stablehlo.tuple") {
    c->root_is_tuple_ = true;
    c->results_ = c->body_.nodes[static_cast<size_t>(root_ref.node)].operands;
    c->result_shapes_ = r->shape.elements();
  } else {
    c->results_ = {root_ref};
    c->result_shapes_ = {r->shape};
  }
  c->module_bytes_ = EmitFlatBuffer(*c);
  return std::shared_ptr<const Computation>(std::move(c));
}

std::string Computation::ToText() const { return EmitText(*this); }

}  // namespace jitd::client
