// lower-quantized (see lower_quantized.h for the forms it emits).
#include "jit/passes/lower_quantized.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <unordered_map>

#include "jit/eval/quantized.h"
#include "jit/ir/attribute.h"
#include "jit/passes/internal/rewrite_util.h"

namespace jitd::passes {
namespace {

using internal::RewriteWalker;
using ir::DType;
using ir::Op;
using ir::OpCode;
using ir::QuantParams;
using ir::Type;
using ir::Value;

// The same shape with the storage type and no quantization.
Type StorageType(const Type& t) { return t.WithDType(t.dtype()); }

// The type jit/eval computes a quantized value's arithmetic in.
DType ComputeType(const QuantParams& p) { return p.expressed == DType::kF64 ? DType::kF64 : DType::kF32; }

bool HasQuantizedTuple(const Type& t) {
  if (!t.is_tuple()) return false;
  for (const Type& e : t.elements()) {
    if (e.is_quantized() || HasQuantizedTuple(e)) return true;
  }
  return false;
}

bool TouchesQuantized(const Op& op, bool* in_tuple) {
  bool any = false;
  auto see = [&](const Type& t) {
    if (t.is_quantized()) any = true;
    if (HasQuantizedTuple(t)) any = *in_tuple = true;
  };
  for (const Value* v : op.operands()) see(v->type());
  for (size_t i = 0; i < op.num_results(); ++i) see(op.result(i)->type());
  return any;
}

// Whether every quantized value of `fn` can be lowered: one block, no
// quantized value inside or around an op with regions, none in a tuple.
// Sets `*any` when the function has quantized values at all.
bool CanLower(const ir::Function& fn, bool* any) {
  bool in_tuple = false;
  for (const Type& t : fn.arg_types()) {
    if (t.is_quantized()) *any = true;
    if (HasQuantizedTuple(t)) return false;
  }
  for (const Type& t : fn.result_types()) {
    if (t.is_quantized()) *any = true;
    if (HasQuantizedTuple(t)) return false;
  }
  if (fn.body().num_blocks() != 1) {
    ir::WalkOps(fn.body(), [&](const Op& op) { *any |= TouchesQuantized(op, &in_tuple); });
    return false;
  }
  bool ok = true;
  for (const auto& op_ptr : fn.body().block(0).ops()) {
    const Op& op = *op_ptr;
    *any |= TouchesQuantized(op, &in_tuple);
    for (size_t r = 0; r < op.num_regions(); ++r) {
      bool inner = TouchesQuantized(op, &in_tuple);
      ir::WalkOps(op.region(r), [&](const Op& nested) { inner |= TouchesQuantized(nested, &in_tuple); });
      for (size_t b = 0; b < op.region(r).num_blocks(); ++b) {
        const ir::Block& block = op.region(r).block(b);
        for (size_t a = 0; a < block.num_args(); ++a) inner |= block.arg(a)->type().is_quantized();
      }
      if (inner) ok = false;
      *any |= inner;
    }
  }
  return ok && !in_tuple;
}

// A value standing for a quantized one: its storage-typed view and the
// quantized type (null when the value is not quantized).
struct QValue {
  Value* storage = nullptr;
  const Type* quantized = nullptr;
};

class Lowering {
 public:
  Lowering(const ir::Module& module, const ir::Function& fn) : module_(&module), fn_(&fn) {}

  // Storage-typed values that replaced quantized ones, with the quantized type.
  std::unordered_map<const Value*, Type> original;

  std::vector<Value*> Rewrite(Op& op, RewriteWalker& w) {
    bool touched = ir::HasQuantizedTypes(op);
    for (const Value* v : op.operands()) touched |= original.count(v) > 0;
    if (!touched) return {};
    w_ = &w;
    at_ = &op;
    switch (op.code()) {
      case OpCode::kFuncReturn:
        // Results keep their quantized types.
        for (size_t i = 0; i < op.num_operands() && i < fn_->result_types().size(); ++i) {
          op.set_operand(i, Requantized(op.operand(i), fn_->result_types()[i]));
        }
        return {};
      case OpCode::kFuncCall: return LowerCall(op);
      case OpCode::kConstant: return LowerConstant(op);
      case OpCode::kBitcastConvert: return LowerBitcast(op);
      case OpCode::kUniformQuantize: {
        const QValue x = Get(op.operand(0));
        Value* real = x.quantized ? Dequantize(x) : x.storage;
        return {Keep(Quantize(real, op.result(0)->type()), op.result(0)->type())};
      }
      case OpCode::kUniformDequantize: return {Dequantize(Get(op.operand(0)))};
      default: break;
    }
    if ((op.code() == OpCode::kDotGeneral || op.code() == OpCode::kConvolution) &&
        eval::UsesQuantizedIntegerForm(*AsWritten(op))) {
      return {LowerIntegerForm(op)};
    }
    return LowerDequantizeOpQuantize(op);
  }

 private:
  Value* Emit(OpCode code, std::vector<Value*> operands, const Type& type, ir::AttributeList attrs = {}) {
    return w_->Insert(ir::CreateOp(code, at_->loc(), operands, std::span<const Type>(&type, 1), std::move(attrs)))
        ->result(0);
  }

  Value* Keep(Value* storage, const Type& quantized) {
    original.emplace(storage, quantized);
    return storage;
  }

  // Operand `v` as storage and parameters. A value still quantized here is a
  // function argument or a constant kept as written: it is reinterpreted.
  QValue Get(Value* v) {
    if (auto it = original.find(v); it != original.end()) return {v, &it->second};
    if (!v->type().is_quantized()) return {v, nullptr};
    Value* s = Emit(OpCode::kBitcastConvert, {v}, StorageType(v->type()));
    return {s, &v->type()};
  }

  // `v` as a value of type `want` (a function boundary's): reinterpreted
  // when `want` is quantized and `v` holds its storage.
  Value* Requantized(Value* v, const Type& want) {
    if (!want.is_quantized() || v->type() == want) return v;
    return Emit(OpCode::kBitcastConvert, {v}, want);
  }

  // A tensor of `type` whose element at index k along p's quantized
  // dimension (every element for per-tensor parameters) is values[k].
  Value* PerChannel(const Type& type, const QuantParams& p, const std::vector<double>& values) {
    const bool same = std::all_of(values.begin(), values.end(), [&](double v) { return v == values[0]; });
    auto set = [&](ir::Literal& lit, int64_t i, double v) {
      if (ir::IsFloat(type.dtype())) {
        lit.SetDouble(i, v);
      } else {
        lit.SetInt(i, static_cast<int64_t>(v));
      }
    };
    if (!p.per_axis() || same) {
      ir::Literal scalar = *ir::Literal::Create(Type::Scalar(type.dtype()));
      set(scalar, 0, values[0]);
      return w_->Insert(internal::MakeConstant(internal::SplatAttr(type, scalar), at_->loc()))->result(0);
    }
    const Type vec = Type::Tensor(type.dtype(), {static_cast<int64_t>(values.size())});
    ir::Literal lit = *ir::Literal::Create(vec);
    for (size_t k = 0; k < values.size(); ++k) set(lit, static_cast<int64_t>(k), values[k]);
    Value* c = w_->Insert(internal::MakeConstant(ir::MakeDenseElements(lit), at_->loc()))->result(0);
    ir::AttributeList attrs;
    attrs.Set("broadcast_dimensions", internal::I64Array({p.quantized_dimension}));
    return Emit(OpCode::kBroadcastInDim, {c}, type, std::move(attrs));
  }

  Value* Splat(const Type& type, double value) { return PerChannel(type, QuantParams{}, {value}); }
  Value* SplatInt(const Type& type, int64_t value) {
    ir::Literal scalar = *ir::Literal::Create(Type::Scalar(type.dtype()));
    scalar.SetInt(0, value);
    return w_->Insert(internal::MakeConstant(internal::SplatAttr(type, scalar), at_->loc()))->result(0);
  }

  static std::vector<double> ZeroPoints(const QuantParams& p) {
    return std::vector<double>(p.zero_points.begin(), p.zero_points.end());
  }
  static bool AllZero(const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t z) { return z == 0; });
  }

  // (convert(q) - zero_point) * scale in the compute type, then the
  // expressed type (jit/eval's DequantizeLiteral).
  Value* Dequantize(const QValue& q) {
    const QuantParams& p = *q.quantized->quant();
    const Type ft = q.quantized->WithDType(ComputeType(p));
    Value* v = Emit(OpCode::kConvert, {q.storage}, ft);
    // q - 0 is q, bit for bit (an integer's +0.0 minus +0.0 is +0.0).
    if (!AllZero(p.zero_points)) v = Emit(OpCode::kSubtract, {v, PerChannel(ft, p, ZeroPoints(p))}, ft);
    v = Emit(OpCode::kMultiply, {v, PerChannel(ft, p, p.scales)}, ft);
    if (p.expressed != ft.dtype()) v = Emit(OpCode::kConvert, {v}, q.quantized->WithDType(p.expressed));
    return v;
  }

  // round_nearest_even(clamp(x / scale + zero_point)) with NaN -> zero_point,
  // in the compute type, converted to the storage type (QuantizeLiteral).
  Value* Quantize(Value* x, const Type& result) {
    const QuantParams& p = *result.quant();
    const Type ft = result.WithDType(ComputeType(p));
    Value* v = x->type().dtype() == ft.dtype() ? x : Emit(OpCode::kConvert, {x}, ft);
    v = Emit(OpCode::kDivide, {v, PerChannel(ft, p, p.scales)}, ft);
    Value* zero_point = PerChannel(ft, p, ZeroPoints(p));
    // x / scale + 0 differs from x / scale only in the sign of a zero,
    // which the conversion to an integer drops.
    if (!AllZero(p.zero_points)) v = Emit(OpCode::kAdd, {v, zero_point}, ft);
    Value* nan = Compare(v, v, "NE", ft);
    v = Emit(OpCode::kSelect, {nan, zero_point, v}, ft);
    Value* lo = Splat(ft, static_cast<double>(p.storage_min));
    Value* hi = Splat(ft, static_cast<double>(p.storage_max));
    v = Emit(OpCode::kMaximum, {v, lo}, ft);
    v = Emit(OpCode::kMinimum, {v, hi}, ft);
    v = Emit(OpCode::kRoundNearestEven, {v}, ft);
    const Type st = StorageType(result);
    if (Representable(ft.dtype(), p.storage_min) && Representable(ft.dtype(), p.storage_max)) {
      return Emit(OpCode::kConvert, {v}, st);
    }
    // A limit the compute type rounds (i32 storage in f32: 2^31 - 1 becomes
    // 2^31): values at the rounded limits become the storage limits, and are
    // kept out of the conversion (out of the storage type's range).
    Value* at_hi = Compare(v, hi, "GE", ft);
    Value* at_lo = Compare(v, lo, "LE", ft);
    Value* out_of_range = Emit(OpCode::kOr, {at_hi, at_lo}, ft.WithDType(DType::kPred));
    Value* inside = Emit(OpCode::kSelect, {out_of_range, Splat(ft, 0), v}, ft);
    Value* q = Emit(OpCode::kConvert, {inside}, st);
    q = Emit(OpCode::kSelect, {at_hi, SplatInt(st, p.storage_max), q}, st);
    return Emit(OpCode::kSelect, {at_lo, SplatInt(st, p.storage_min), q}, st);
  }

  static bool Representable(DType f, int64_t x) {
    return f == DType::kF64 ? static_cast<int64_t>(static_cast<double>(x)) == x && std::llabs(x) < (int64_t{1} << 53)
                            : std::llabs(x) <= (int64_t{1} << 24);
  }

  Value* Compare(Value* a, Value* b, const char* direction, const Type& t) {
    ir::AttributeList attrs;
    attrs.Set("comparison_direction", ir::EnumAttr{"stablehlo", "comparison_direction", direction});
    attrs.Set("compare_type", ir::EnumAttr{"stablehlo", "comparison_type", "FLOAT"});
    return Emit(OpCode::kCompare, {a, b}, t.WithDType(DType::kPred), std::move(attrs));
  }

  std::vector<Value*> LowerConstant(Op& op) {
    const Type& type = op.result(0)->type();
    const ir::Attribute* value = op.attr("value");
    const auto* dense = value ? value->get_if<ir::DenseElementsAttr>() : nullptr;
    if (!dense) return {};  // kept; uses reinterpret it (Get)
    ir::DenseElementsAttr storage = *dense;
    storage.type = StorageType(type);
    return {Keep(w_->Insert(internal::MakeConstant(std::move(storage), op.loc()))->result(0), type)};
  }

  std::vector<Value*> LowerBitcast(Op& op) {
    const QValue x = Get(op.operand(0));
    const Type& result = op.result(0)->type();
    // Always a new value (an identity convert, which canonicalize removes,
    // when the storage types agree): `original` keys storage values by what
    // they stand for, and the result stands for something else.
    const Type want = StorageType(result);
    Value* v = Emit(x.storage->type() == want ? OpCode::kConvert : OpCode::kBitcastConvert, {x.storage}, want);
    if (result.is_quantized()) return {Keep(v, result)};
    return {v};
  }

  std::vector<Value*> LowerCall(Op& op) {
    const auto* callee = op.attr("callee");
    const auto* name = callee ? callee->get_if<ir::SymbolRefAttr>() : nullptr;
    const ir::Function* fn = name ? module_->FindFunction(name->name) : nullptr;
    std::vector<Value*> operands;
    for (size_t i = 0; i < op.num_operands(); ++i) {
      Value* v = op.operand(i);
      operands.push_back(fn && i < fn->arg_types().size() ? Requantized(v, fn->arg_types()[i]) : v);
    }
    if (op.num_results() == 0) {  // kept, with the reinterpreted operands
      for (size_t i = 0; i < operands.size(); ++i) op.set_operand(i, operands[i]);
      return {};
    }
    const std::vector<Type> types = op.result_types();
    Op* call = w_->Insert(ir::CreateOp(op.code(), op.loc(), operands, types, op.attrs()));
    std::vector<Value*> out;
    for (size_t i = 0; i < call->num_results(); ++i) {
      Value* r = call->result(i);
      out.push_back(r->type().is_quantized() ? Get(r).storage : r);
      if (r->type().is_quantized()) original.emplace(out.back(), r->type());
    }
    return out;
  }

  // `op` as the program wrote it: its operands with their quantized types.
  const Op* AsWritten(const Op& op) {
    scratch_values_.clear();
    std::vector<Value*> operands;
    for (size_t i = 0; i < op.num_operands(); ++i) {
      Value* v = op.operand(i);
      auto it = original.find(v);
      scratch_values_.push_back(std::make_unique<Value>(it != original.end() ? it->second : v->type(), nullptr,
                                                        nullptr, static_cast<int>(i)));
      operands.push_back(scratch_values_.back().get());
    }
    scratch_op_ = ir::CreateOp(op.code(), op.loc(), operands, op.result_types(), op.attrs());
    return scratch_op_.get();
  }

  // storage - zero_point in i32; i8 storage with zero point 0 stays i8
  // (i8 x i8 -> i32, the int8 GEMM's form; a convolution's padding is then
  // storage 0, the zero point, as it must be).
  Value* Offsets(const QValue& q, bool keep_i8) {
    const QuantParams& p = *q.quantized->quant();
    if (keep_i8 && AllZero(p.zero_points)) return q.storage;
    const Type it = q.quantized->WithDType(DType::kS32);
    Value* v = q.storage->type().dtype() == DType::kS32 ? q.storage : Emit(OpCode::kConvert, {q.storage}, it);
    if (!AllZero(p.zero_points)) v = Emit(OpCode::kSubtract, {v, PerChannel(it, p, ZeroPoints(p))}, it);
    return v;
  }

  Value* LowerIntegerForm(Op& op) {
    const QValue lhs = Get(op.operand(0));
    const QValue rhs = Get(op.operand(1));
    const Type& result = op.result(0)->type();
    const QuantParams& p = *result.quant();
    const bool i8 = lhs.storage->type().dtype() == DType::kS8 &&
                    rhs.storage->type().dtype() == DType::kS8 && AllZero(lhs.quantized->quant()->zero_points) &&
                    AllZero(rhs.quantized->quant()->zero_points);
    const Type it = result.WithDType(DType::kS32);
    Value* v = nullptr;
    if (op.code() == OpCode::kDotGeneral && lhs.storage->type().dtype() == DType::kS8 &&
        rhs.storage->type().dtype() == DType::kS8 && AllZero(rhs.quantized->quant()->zero_points) &&
        !AllZero(lhs.quantized->quant()->zero_points)) {
      v = AsymmetricLhsDot(op, lhs, rhs, it);
    } else {
      v = Emit(op.code(), {Offsets(lhs, i8), Offsets(rhs, i8)}, it, op.attrs());
    }
    if (!AllZero(p.zero_points)) v = Emit(OpCode::kAdd, {v, PerChannel(it, p, ZeroPoints(p))}, it);
    const int64_t lo = std::max<int64_t>(p.storage_min, INT32_MIN);
    const int64_t hi = std::min<int64_t>(p.storage_max, INT32_MAX);
    if (lo > INT32_MIN) v = Emit(OpCode::kMaximum, {v, Splat(it, static_cast<double>(lo))}, it);
    if (hi < INT32_MAX) v = Emit(OpCode::kMinimum, {v, Splat(it, static_cast<double>(hi))}, it);
    if (p.storage != DType::kS32) v = Emit(OpCode::kConvert, {v}, StorageType(result));
    return Keep(v, result);
  }

  // sum((a - za) * b) for i8 a with zero point za (per-tensor) and i8 b with
  // zero points 0: the int8 product a . b, less za times b's sums over the
  // contracted dimensions -- the same dot_general of a ones lhs whose free
  // dimensions are 1, broadcast over them. Every step is i32 arithmetic
  // modulo 2^32, and the true sum fits in 32 bits (UsesQuantizedIntegerForm),
  // so the result is exact though the partial terms may wrap.
  Value* AsymmetricLhsDot(const Op& op, const QValue& lhs, const QValue& rhs, const Type& it) {
    std::vector<int64_t> batching, contracting;
    if (const ir::StructAttr* dims = op.GetStruct("dot_dimension_numbers")) {
      for (const auto& f : dims->fields) {
        if (f.name == "lhs_batching_dimensions") batching = f.values;
        if (f.name == "lhs_contracting_dimensions") contracting = f.values;
      }
    }
    const Type& lt = lhs.storage->type();
    std::vector<int64_t> ones_dims = lt.dims();
    std::vector<int64_t> sums_dims = it.dims();
    size_t free_index = batching.size();  // lhs free dimensions follow the batch ones in the result
    for (int64_t d = 0; d < lt.rank(); ++d) {
      if (std::find(batching.begin(), batching.end(), d) != batching.end() ||
          std::find(contracting.begin(), contracting.end(), d) != contracting.end()) {
        continue;
      }
      ones_dims[static_cast<size_t>(d)] = 1;
      sums_dims[free_index++] = 1;
    }
    Value* product = Emit(OpCode::kDotGeneral, {lhs.storage, rhs.storage}, it, op.attrs());
    Value* ones = SplatInt(Type::Tensor(DType::kS8, ones_dims), 1);
    Value* sums = Emit(OpCode::kDotGeneral, {ones, rhs.storage}, Type::Tensor(DType::kS32, sums_dims), op.attrs());
    std::vector<int64_t> identity(static_cast<size_t>(it.rank()));
    for (size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<int64_t>(i);
    ir::AttributeList attrs;
    attrs.Set("broadcast_dimensions", internal::I64Array(std::move(identity)));
    Value* wide = Emit(OpCode::kBroadcastInDim, {sums}, it, std::move(attrs));
    Value* correction = Emit(OpCode::kMultiply, {wide, SplatInt(it, lhs.quantized->quant()->zero_points[0])}, it);
    return Emit(OpCode::kSubtract, {product, correction}, it);
  }

  // Every other op: dequantize -> op -> quantize (EvalDequantizeOpQuantize).
  std::vector<Value*> LowerDequantizeOpQuantize(Op& op) {
    if (op.num_results() == 0) {
      // An op without results (check.expect_*, custom calls) sees its
      // operands as written: a boundary, like func.return.
      for (size_t i = 0; i < op.num_operands(); ++i) {
        auto it = original.find(op.operand(i));
        if (it != original.end()) op.set_operand(i, Requantized(op.operand(i), it->second));
      }
      return {};
    }
    std::vector<Value*> operands;
    for (Value* v : op.operands()) {
      const QValue q = Get(v);
      operands.push_back(q.quantized ? Dequantize(q) : q.storage);
    }
    std::vector<Type> types;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const Type& t = op.result(i)->type();
      types.push_back(t.is_quantized() ? t.WithDType(t.quant()->expressed) : t);
    }
    Op* real = w_->Insert(ir::CreateOp(op.code(), op.loc(), operands, types, op.attrs()));
    std::vector<Value*> out;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const Type& t = op.result(i)->type();
      out.push_back(t.is_quantized() ? Keep(Quantize(real->result(i), t), t) : real->result(i));
    }
    return out;
  }

  const ir::Module* module_;
  const ir::Function* fn_;
  RewriteWalker* w_ = nullptr;
  const Op* at_ = nullptr;
  std::vector<std::unique_ptr<Value>> scratch_values_;
  std::unique_ptr<Op> scratch_op_;
};

class LowerQuantizedPass : public Pass {
 public:
  std::string_view name() const override { return "lower-quantized"; }
  Status Run(ir::Module& module) override {
    for (const auto& fn : module.functions()) {
      bool any = false;
      if (!CanLower(*fn, &any) || !any) continue;
      Lowering lowering(module, *fn);
      RewriteWalker walker([&](Op& op, RewriteWalker& w) { return lowering.Rewrite(op, w); });
      walker.Run(*fn);
    }
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateLowerQuantizedPass() { return std::make_unique<LowerQuantizedPass>(); }

}  // namespace jitd::passes
