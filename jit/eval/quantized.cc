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
#include <cmath>
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
  return static_cast<int64_t>(std::nearbyint(v));  // default rounding: ties to even
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

KernelResult EvalDequantizeOpQuantize(OpContext& ctx) {
  const ir::Op& op = ctx.op();
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
