// Quantized types in the evaluator (spec.md "uniform_quantize",
// "uniform_dequantize" and dequantize_op_quantize): a quantized tensor is
// held as a Literal of its storage type; the parameters live in its Type.
//
//   dequantize: (storage - zero_point) * scale, in the expressed type
//   quantize:   round_nearest_even(clamp(x / scale + zero_point,
//                                        storage_min, storage_max))
//
// The arithmetic runs in the expressed type's precision (f64 for f64,
// f32 otherwise; f16/bf16 expressed types are computed in f32 and rounded
// once at the end, a documented deviation of at most one rounding).
// Per-axis parameters are picked by the element's index along
// quantized_dimension.
#include "jit/eval/quantized.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "jit/eval/internal/kernels.h"
#include "jit/eval/internal/quantized.h"

namespace jitd::eval::internal {
namespace {

using ir::DType;
using ir::Literal;
using ir::OpCode;
using ir::Type;

// For each element (row-major), the index of its scale:zero_point pair.
// Per-tensor: all zeros (computed lazily by the callers as 0).
int64_t AxisStride(const Type& type, int64_t axis) {
  int64_t stride = 1;
  for (int64_t d = type.rank() - 1; d > axis; --d) stride *= type.dim(d);
  return stride;
}

template <typename F>
double DequantizeOne(int64_t q, double scale, int64_t zero_point) {
  const F diff = static_cast<F>(q) - static_cast<F>(zero_point);
  return static_cast<double>(diff * static_cast<F>(scale));
}

template <typename F>
int64_t QuantizeOne(double x, double scale, int64_t zero_point, int64_t lo, int64_t hi) {
  F v = static_cast<F>(x) / static_cast<F>(scale) + static_cast<F>(zero_point);
  if (std::isnan(v)) return zero_point;  // NaN has no quantized value; the spec leaves it open
  v = std::min(std::max(v, static_cast<F>(lo)), static_cast<F>(hi));
  v = std::nearbyint(v);  // default rounding: ties to even
  // F(hi) rounds above hi where F has fewer bits (i32 storage in f32: 2^31).
  if (v >= static_cast<F>(hi)) return hi;
  if (v <= static_cast<F>(lo)) return lo;
  return static_cast<int64_t>(v);
}

}  // namespace

StatusOr<Literal> DequantizeLiteral(const Literal& q, int64_t max_bytes) {
  const Type& type = q.type();
  const ir::QuantParams& p = *type.quant();
  JITD_ASSIGN_OR_RETURN(Literal out,
                        Literal::Create(Type::Tensor(p.expressed, type.dims()), max_bytes));
  const int64_t n = q.num_elements();
  const int64_t stride = p.per_axis() ? AxisStride(type, p.quantized_dimension) : 1;
  const int64_t size = p.per_axis() ? type.dim(p.quantized_dimension) : 1;
  const bool f64 = p.expressed == DType::kF64;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = p.per_axis() ? static_cast<size_t>((i / stride) % size) : 0;
    const int64_t v = q.GetInt(i);
    out.SetDouble(i, f64 ? DequantizeOne<double>(v, p.scales[k], p.zero_points[k])
                         : DequantizeOne<float>(v, p.scales[k], p.zero_points[k]));
  }
  return out;
}

StatusOr<Literal> QuantizeLiteral(const Literal& x, const Type& result_type, int64_t max_bytes) {
  const ir::QuantParams& p = *result_type.quant();
  JITD_ASSIGN_OR_RETURN(Literal out, Literal::Create(result_type, max_bytes));
  const int64_t n = x.num_elements();
  const int64_t stride = p.per_axis() ? AxisStride(result_type, p.quantized_dimension) : 1;
  const int64_t size = p.per_axis() ? result_type.dim(p.quantized_dimension) : 1;
  const bool f64 = p.expressed == DType::kF64;
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = p.per_axis() ? static_cast<size_t>((i / stride) % size) : 0;
    const double v = x.GetDouble(i);
    out.SetInt(i, f64 ? QuantizeOne<double>(v, p.scales[k], p.zero_points[k], p.storage_min,
                                            p.storage_max)
                      : QuantizeOne<float>(v, p.scales[k], p.zero_points[k], p.storage_min,
                                           p.storage_max));
  }
  return out;
}

namespace {

KernelResult EvalUniformQuantize(OpContext& ctx) {
  const Literal& in = ctx.operand(0);
  const int64_t limit = int64_t{1} << 34;
  if (in.type().is_quantized()) {
    // Requantize: quantize(dequantize(operand), type(result)).
    JITD_ASSIGN_OR_RETURN(Literal real, DequantizeLiteral(in, limit));
    JITD_ASSIGN_OR_RETURN(Literal out, QuantizeLiteral(real, ctx.result_type(0), limit));
    return Single(std::move(out));
  }
  JITD_ASSIGN_OR_RETURN(Literal out, QuantizeLiteral(in, ctx.result_type(0), limit));
  return Single(std::move(out));
}

KernelResult EvalUniformDequantize(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal out, DequantizeLiteral(ctx.operand(0), int64_t{1} << 34));
  return Single(std::move(out));
}

}  // namespace

bool HasQuantizedValues(const ir::Op& op) {
  for (size_t i = 0; i < op.num_operands(); ++i) {
    if (op.operand(i)->type().is_quantized()) return true;
  }
  for (size_t i = 0; i < op.num_results(); ++i) {
    if (op.result(i)->type().is_quantized()) return true;
  }
  return false;
}

namespace {

// A literal of s64 holding storage - zero_point per element.
StatusOr<Literal> OffsetsLiteral(const Literal& q, int64_t max_bytes) {
  const Type& type = q.type();
  const ir::QuantParams& p = *type.quant();
  JITD_ASSIGN_OR_RETURN(Literal out, Literal::Create(Type::Tensor(DType::kS64, type.dims()), max_bytes));
  const int64_t stride = p.per_axis() ? AxisStride(type, p.quantized_dimension) : 1;
  const int64_t size = p.per_axis() ? type.dim(p.quantized_dimension) : 1;
  for (int64_t i = 0; i < q.num_elements(); ++i) {
    const size_t k = p.per_axis() ? static_cast<size_t>((i / stride) % size) : 0;
    out.SetInt(i, q.GetInt(i) - p.zero_points[k]);
  }
  return out;
}

// eval::UsesQuantizedIntegerForm's computation: the op on the operands'
// offsets from their zero points in s64, plus the result's zero point,
// clamped to its storage range.
KernelResult EvalQuantizedIntegerForm(OpContext& ctx) {
  const ir::Op& op = ctx.op();
  const int64_t limit = int64_t{1} << 34;
  std::vector<std::unique_ptr<ir::Value>> scratch;
  std::vector<ir::Value*> operands;
  std::vector<RuntimeValue> args;
  for (size_t i = 0; i < 2; ++i) {
    JITD_ASSIGN_OR_RETURN(Literal offsets, OffsetsLiteral(ctx.operand(i), limit));
    args.emplace_back(std::move(offsets));
    scratch.push_back(
        std::make_unique<ir::Value>(args.back().type(), nullptr, nullptr, static_cast<int>(i)));
    operands.push_back(scratch.back().get());
  }
  const Type& result_type = op.result(0)->type();
  const Type wide = result_type.WithDType(DType::kS64);
  std::unique_ptr<ir::Op> int_op =
      ir::CreateOp(op.code(), op.loc(), operands, std::span<const Type>(&wide, 1), op.attrs());
  JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> sums, ctx.EvaluateDetached(*int_op, std::move(args)));
  const Literal& sum = sums.at(0).literal();
  const ir::QuantParams& p = *result_type.quant();
  JITD_ASSIGN_OR_RETURN(Literal out, Literal::Create(result_type, limit));
  const int64_t stride = p.per_axis() ? AxisStride(result_type, p.quantized_dimension) : 1;
  const int64_t size = p.per_axis() ? result_type.dim(p.quantized_dimension) : 1;
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    const size_t k = p.per_axis() ? static_cast<size_t>((i / stride) % size) : 0;
    const int64_t v = sum.GetInt(i) + p.zero_points[k];
    out.SetInt(i, std::min(std::max(v, p.storage_min), p.storage_max));
  }
  return Single(std::move(out));
}

}  // namespace

KernelResult EvalDequantizeOpQuantize(OpContext& ctx) {
  const ir::Op& op = ctx.op();
  if (UsesQuantizedIntegerForm(op)) return EvalQuantizedIntegerForm(ctx);
  if (op.num_regions() != 0) {
    return ctx.Unimplemented("on quantized element types is not implemented (ops with regions)");
  }
  const int64_t limit = int64_t{1} << 34;
  std::vector<std::unique_ptr<ir::Value>> scratch;
  std::vector<ir::Value*> operands;
  std::vector<RuntimeValue> args;
  for (size_t i = 0; i < ctx.num_operands(); ++i) {
    const RuntimeValue& v = ctx.value(i);
    if (v.is_tensor() && v.literal().type().is_quantized()) {
      JITD_ASSIGN_OR_RETURN(Literal real, DequantizeLiteral(v.literal(), limit));
      args.emplace_back(std::move(real));
    } else {
      args.push_back(v);
    }
    scratch.push_back(
        std::make_unique<ir::Value>(args.back().type(), nullptr, nullptr, static_cast<int>(i)));
    operands.push_back(scratch.back().get());
  }
  std::vector<Type> result_types;
  for (size_t i = 0; i < op.num_results(); ++i) {
    const Type& t = op.result(i)->type();
    result_types.push_back(t.is_quantized() ? t.WithDType(t.quant()->expressed) : t);
  }
  std::unique_ptr<ir::Op> float_op =
      ir::CreateOp(op.code(), op.loc(), operands, result_types, op.attrs());
  JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> out,
                        ctx.EvaluateDetached(*float_op, std::move(args)));
  for (size_t i = 0; i < out.size() && i < op.num_results(); ++i) {
    const Type& t = op.result(i)->type();
    if (!t.is_quantized()) continue;
    JITD_ASSIGN_OR_RETURN(Literal q, QuantizeLiteral(out[i].literal(), t, limit));
    out[i] = RuntimeValue(std::move(q));
  }
  return out;
}

void RegisterQuantizedKernels(KernelTable& table) {
  Register(table, OpCode::kUniformQuantize, EvalUniformQuantize);
  Register(table, OpCode::kUniformDequantize, EvalUniformDequantize);
}

}  // namespace jitd::eval::internal

namespace jitd::eval {
namespace {

// The largest |storage - zero_point| a value of these parameters can hold.
uint64_t MaxOffset(const ir::QuantParams& p) {
  uint64_t m = 0;
  for (int64_t z : p.zero_points) {
    m = std::max({m, static_cast<uint64_t>(std::llabs(p.storage_min - z)),
                  static_cast<uint64_t>(std::llabs(p.storage_max - z))});
  }
  return m;
}

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::vector<int64_t> DotField(const ir::Op& op, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct("dot_dimension_numbers");
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

}  // namespace

bool UsesQuantizedIntegerForm(const ir::Op& op) {
  if (op.code() != ir::OpCode::kDotGeneral && op.code() != ir::OpCode::kConvolution) return false;
  if (op.num_operands() != 2 || op.num_results() != 1) return false;
  const ir::Type& lt = op.operand(0)->type();
  const ir::Type& rt = op.operand(1)->type();
  const ir::Type& ot = op.result(0)->type();
  if (!lt.is_quantized() || !rt.is_quantized() || !ot.is_quantized()) return false;
  if (lt.is_dynamic() || rt.is_dynamic() || ot.is_dynamic()) return false;
  const ir::QuantParams& lp = *lt.quant();
  const ir::QuantParams& rp = *rt.quant();
  const ir::QuantParams& outp = *ot.quant();
  if (lp.per_axis()) return false;
  // `mapped`: the result dimension of rhs's quantized dimension; `k`: how
  // many products one result element sums.
  int64_t mapped = -1;
  uint64_t k = 1;
  if (op.code() == ir::OpCode::kDotGeneral) {
    const std::vector<int64_t> lhs_batching = DotField(op, "lhs_batching_dimensions");
    const std::vector<int64_t> lhs_contracting = DotField(op, "lhs_contracting_dimensions");
    const std::vector<int64_t> rhs_batching = DotField(op, "rhs_batching_dimensions");
    const std::vector<int64_t> rhs_contracting = DotField(op, "rhs_contracting_dimensions");
    for (int64_t d : rhs_contracting) {
      if (d < 0 || d >= rt.rank()) return false;
      k *= static_cast<uint64_t>(rt.dim(d));
    }
    if (rp.per_axis()) {
      const int64_t d = rp.quantized_dimension;
      if (Contains(rhs_contracting, d)) return false;
      const auto batch = std::find(rhs_batching.begin(), rhs_batching.end(), d);
      if (batch != rhs_batching.end()) {
        mapped = batch - rhs_batching.begin();
      } else {
        // Result dimensions: batching, lhs free, rhs free.
        const int64_t lhs_free = lt.rank() - static_cast<int64_t>(lhs_batching.size() + lhs_contracting.size());
        mapped = static_cast<int64_t>(rhs_batching.size()) + lhs_free;
        for (int64_t r = 0; r < d; ++r) {
          if (!Contains(rhs_batching, r) && !Contains(rhs_contracting, r)) ++mapped;
        }
      }
    }
  } else {
    const ir::Attribute* a = op.attr("dimension_numbers");
    const auto* dn = a ? a->get_if<ir::ConvDimensionNumbers>() : nullptr;
    if (!dn) return false;
    const int64_t out_features = rt.dim(dn->kernel_output_feature_dimension);
    if (out_features <= 0) return false;
    k = static_cast<uint64_t>(rt.num_elements() / out_features);
    if (rp.per_axis()) {
      if (rp.quantized_dimension != dn->kernel_output_feature_dimension) return false;
      mapped = dn->output_feature_dimension;
    }
  }
  if (rp.per_axis() && outp.per_axis() && outp.quantized_dimension != mapped) return false;
  for (size_t j = 0; j < rp.scales.size(); ++j) {
    for (size_t i = 0; i < outp.scales.size(); ++i) {
      if (rp.per_axis() && outp.per_axis() && i != j) continue;
      if (lp.scales[0] * rp.scales[j] != outp.scales[i]) return false;
    }
  }
  if (rp.per_axis() && outp.per_axis() && rp.scales.size() != outp.scales.size()) return false;
  uint64_t zout = 0;
  for (int64_t z : outp.zero_points) zout = std::max(zout, static_cast<uint64_t>(std::llabs(z)));
  const unsigned __int128 bound = static_cast<unsigned __int128>(k) * MaxOffset(lp) * MaxOffset(rp) + zout;
  return bound <= static_cast<unsigned __int128>(INT32_MAX);
}

}  // namespace jitd::eval
