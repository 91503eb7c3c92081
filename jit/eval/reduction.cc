// Kernels that fold values with a region: reduce, reduce_window,
// select_and_scatter, and map.
//
// Every fold is a left fold in ascending index order that starts from the
// init value: acc = body(acc, x0), acc = body(acc, x1), ... The spec leaves
// the schedule implementation-defined; this is the order the StableHLO
// reference interpreter uses, so non-associative bodies (float sums, argmax
// tie-breaking) give its answers. Bodies are evaluated through
// OpContext::CallRegion, except that a body which is one elementwise add,
// multiply, maximum, minimum, and, or, xor of its two arguments is folded
// directly (same results, without a region call per element).
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "jit/eval/fold.h"
#include "jit/eval/internal/kernels.h"

namespace jitd::eval {

std::optional<FoldOp> RecognizeFold(const ir::Op& op, size_t region, ir::DType dtype) {
  if (op.num_regions() <= region) return std::nullopt;
  const ir::Region& r = op.region(region);
  if (r.num_blocks() != 1) return std::nullopt;
  const ir::Block& b = r.block(0);
  if (b.num_args() != 2 || b.ops().size() != 2) return std::nullopt;
  const ir::Op& body = *b.ops()[0];
  const ir::Op& ret = *b.ops()[1];
  if (ret.code() != ir::OpCode::kReturn || ret.num_operands() != 1 ||
      ret.operand(0) != body.result(0) || body.num_operands() != 2 || body.num_results() != 1 ||
      body.num_regions() != 0) {
    return std::nullopt;
  }
  const bool args_ok = (body.operand(0) == b.arg(0) && body.operand(1) == b.arg(1)) ||
                       (body.operand(0) == b.arg(1) && body.operand(1) == b.arg(0));
  const ir::Type scalar = ir::Type::Scalar(dtype);
  if (!args_ok || b.arg(0)->type() != scalar || b.arg(1)->type() != scalar ||
      body.result(0)->type() != scalar) {
    return std::nullopt;
  }
  const bool is_int = ir::IsInteger(dtype) || ir::IsPred(dtype);
  const bool is_float =
      dtype == ir::DType::kF16 || dtype == ir::DType::kBF16 || dtype == ir::DType::kF32 || dtype == ir::DType::kF64;
  switch (body.code()) {
    case ir::OpCode::kAdd:
      if (is_int || is_float) return FoldOp::kAdd;
      break;
    case ir::OpCode::kMultiply:
      if (is_int || is_float) return FoldOp::kMultiply;
      break;
    case ir::OpCode::kMaximum:
      if (is_int || is_float) return FoldOp::kMaximum;
      break;
    case ir::OpCode::kMinimum:
      if (is_int || is_float) return FoldOp::kMinimum;
      break;
    case ir::OpCode::kAnd:
      if (is_int) return FoldOp::kAnd;
      break;
    case ir::OpCode::kOr:
      if (is_int) return FoldOp::kOr;
      break;
    case ir::OpCode::kXor:
      if (is_int) return FoldOp::kXor;
      break;
    default: break;
  }
  return std::nullopt;
}

}  // namespace jitd::eval

namespace jitd::eval::internal {
namespace {

using ir::DType;
using ir::Literal;

// A 0-d tensor of `dtype` holding element i of `lit`, converted.
RuntimeValue ScalarAs(const Literal& lit, int64_t i, DType dtype) {
  if (lit.dtype() == dtype) return ScalarOf(lit, i);
  Literal scalar = *Literal::Create(ir::Type::Scalar(dtype));
  ConvertElement(lit, i, scalar, 0);
  return RuntimeValue(std::move(scalar));
}

// Checks that a region returned one 0-d tensor of each of `outs`' element
// types, then stores them as element `offset` of `outs`.
Status StoreRegionResults(const OpContext& ctx, const std::vector<RuntimeValue>& returned,
                          std::vector<Literal>& outs, int64_t offset) {
  if (returned.size() != outs.size()) {
    return ctx.Error("body returned " + std::to_string(returned.size()) + " values, expected " +
                     std::to_string(outs.size()));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const RuntimeValue& v = returned[i];
    if (!v.is_tensor() || v.literal().dtype() != outs[i].dtype() ||
        v.literal().num_elements() != 1) {
      return ctx.Error("body returned a value of an unexpected type");
    }
    StoreScalar(v, outs[i], offset);
  }
  return Status::Ok();
}

// ---- Directly folded bodies -----------------------------------------------

using eval::FoldOp;

// acc = fold(acc, element i of x), for RecognizeFold's ops and types. Floats are
// computed in double and rounded once, which for one +, * of f16..f32 operands
// is exactly the operation in the narrow type; maximum/minimum propagate NaN
// and order -0 below +0 (IEEE-754 maximum/minimum). Integers wrap; for i1,
// add/or and multiply/and coincide as the elementwise ops define them.
void ApplyFold(FoldOp op, Literal& acc, int64_t a, const Literal& x, int64_t i) {
  const DType t = acc.dtype();
  if (ir::IsFloat(t)) {
    const double l = acc.GetDouble(a), r = x.GetDouble(i);
    double v = 0;
    switch (op) {
      case FoldOp::kAdd: v = l + r; break;
      case FoldOp::kMultiply: v = l * r; break;
      case FoldOp::kMaximum:
      case FoldOp::kMinimum: {
        if (std::isnan(l)) {
          v = l;
        } else if (std::isnan(r)) {
          v = r;
        } else if (l == r) {  // only -0 vs +0 can differ
          const bool pick_l = (op == FoldOp::kMaximum) != std::signbit(l);
          v = pick_l ? l : r;
        } else {
          v = (op == FoldOp::kMaximum) == (l > r) ? l : r;
        }
        break;
      }
      default: break;
    }
    acc.SetDouble(a, v);
    return;
  }
  if (ir::IsPred(t)) {
    const bool l = acc.GetPred(a), r = x.GetPred(i);
    bool v = false;
    switch (op) {
      case FoldOp::kAdd:
      case FoldOp::kOr:
      case FoldOp::kMaximum: v = l || r; break;
      case FoldOp::kMultiply:
      case FoldOp::kAnd:
      case FoldOp::kMinimum: v = l && r; break;
      case FoldOp::kXor: v = l != r; break;
    }
    acc.SetInt(a, v);
    return;
  }
  const uint64_t l = acc.GetUInt(a), r = x.GetUInt(i);  // sign-extended when signed
  uint64_t v = 0;
  const bool is_signed = ir::IsSignedInt(t);
  const bool l_less = is_signed ? static_cast<int64_t>(l) < static_cast<int64_t>(r) : l < r;
  switch (op) {
    case FoldOp::kAdd: v = l + r; break;
    case FoldOp::kMultiply: v = l * r; break;
    case FoldOp::kMaximum: v = l_less ? r : l; break;
    case FoldOp::kMinimum: v = l_less ? l : r; break;
    case FoldOp::kAnd: v = l & r; break;
    case FoldOp::kOr: v = l | r; break;
    case FoldOp::kXor: v = l ^ r; break;
  }
  acc.SetInt(a, static_cast<int64_t>(v));
}

// ---- Window helpers -------------------------------------------------------

// An i64 array attribute, or `rank` copies of `fill` when absent.
std::vector<int64_t> I64sOr(const OpContext& ctx, std::string_view name, size_t rank,
                            int64_t fill) {
  std::vector<int64_t> v = ctx.I64s(name);
  if (v.size() != rank) v.assign(rank, fill);
  return v;
}

// Window attributes bounded so that index arithmetic stays far from int64
// overflow (inputs are materialized, so their dimensions are below 2^32).
Status CheckWindowBounds(const OpContext& ctx,
                         std::initializer_list<const std::vector<int64_t>*> lists,
                         const std::vector<std::pair<int64_t, int64_t>>& padding) {
  constexpr int64_t kLimit = int64_t{1} << 24;
  auto ok = [&](int64_t v) { return v > -kLimit && v < kLimit; };
  for (const auto* list : lists) {
    for (int64_t v : *list) {
      if (!ok(v)) return ctx.Unimplemented("window attributes beyond 2^24 are not supported");
    }
  }
  for (auto [lo, hi] : padding) {
    if (!ok(lo) || !ok(hi)) return ctx.Unimplemented("padding beyond 2^24 is not supported");
  }
  return Status::Ok();
}

// ---- reduce ---------------------------------------------------------------

KernelResult ReduceKernel(OpContext& ctx) {
  const size_t n = ctx.num_operands() / 2;
  const std::vector<int64_t>& in_dims = ctx.operand(0).type().dims();
  const size_t rank = in_dims.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : ctx.I64s("dimensions")) {
    if (d >= 0 && static_cast<size_t>(d) < rank) reduced[static_cast<size_t>(d)] = true;
  }
  std::vector<Literal> results;
  for (size_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(i));
    for (int64_t j = 0; j < r.num_elements(); ++j) ConvertElement(ctx.operand(n + i), 0, r, j);
    results.push_back(std::move(r));
  }
  // Each input element folds into the result element its kept dimensions
  // name; visiting inputs in row-major order folds each result's elements in
  // ascending index order.
  const std::vector<int64_t> out_strides = Strides(results[0].type().dims());
  std::vector<int64_t> in_to_out(rank, 0);
  for (size_t d = 0, k = 0; d < rank; ++d) {
    if (!reduced[d]) in_to_out[d] = out_strides[k++];
  }
  const std::optional<FoldOp> fold = n == 1 && ctx.operand(0).dtype() == results[0].dtype()
                                         ? RecognizeFold(ctx.op(), 0, results[0].dtype())
                                         : std::nullopt;
  int64_t linear = 0;
  JITD_RETURN_IF_ERROR(ForEachIndex(in_dims, [&](const std::vector<int64_t>& index) -> Status {
    const int64_t out = Offset(index, in_to_out);
    const int64_t in = linear++;
    if (fold) {
      ApplyFold(*fold, results[0], out, ctx.operand(0), in);
      return Status::Ok();
    }
    std::vector<RuntimeValue> args;
    args.reserve(2 * n);
    for (size_t i = 0; i < n; ++i) args.push_back(ScalarOf(results[i], out));
    for (size_t i = 0; i < n; ++i) args.push_back(ScalarAs(ctx.operand(i), in, results[i].dtype()));
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> returned, ctx.CallRegion(0, std::move(args)));
    return StoreRegionResults(ctx, returned, results, out);
  }));
  std::vector<RuntimeValue> out;
  for (auto& r : results) out.emplace_back(std::move(r));
  return out;
}

// ---- reduce_window --------------------------------------------------------

KernelResult ReduceWindowKernel(OpContext& ctx) {
  const size_t n = ctx.num_operands() / 2;
  const std::vector<int64_t>& in_dims = ctx.operand(0).type().dims();
  const size_t rank = in_dims.size();
  const std::vector<int64_t> window = I64sOr(ctx, "window_dimensions", rank, 1);
  const std::vector<int64_t> strides = I64sOr(ctx, "window_strides", rank, 1);
  const std::vector<int64_t> base_dilations = I64sOr(ctx, "base_dilations", rank, 1);
  const std::vector<int64_t> window_dilations = I64sOr(ctx, "window_dilations", rank, 1);
  const auto padding = ctx.Padding("padding", static_cast<int64_t>(rank));
  JITD_RETURN_IF_ERROR(
      CheckWindowBounds(ctx, {&window, &strides, &base_dilations, &window_dilations}, padding));

  std::vector<Literal> results;
  for (size_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(i));
    results.push_back(std::move(r));
  }
  const std::optional<FoldOp> fold = n == 1 && ctx.operand(0).dtype() == results[0].dtype()
                                         ? RecognizeFold(ctx.op(), 0, results[0].dtype())
                                         : std::nullopt;
  const std::vector<int64_t> in_strides = Strides(in_dims);
  int64_t out = 0;
  JITD_RETURN_IF_ERROR(
      ForEachIndex(results[0].type().dims(), [&](const std::vector<int64_t>& r) -> Status {
        for (size_t i = 0; i < n; ++i) ConvertElement(ctx.operand(n + i), 0, results[i], out);
        JITD_RETURN_IF_ERROR(ForEachIndex(window, [&](const std::vector<int64_t>& w) -> Status {
          // The position in the padded, base-dilated input; positions in the
          // padding or between dilated elements hold the init values.
          int64_t in = 0;
          bool is_padding = false;
          for (size_t d = 0; d < rank && !is_padding; ++d) {
            const int64_t p = r[d] * strides[d] + w[d] * window_dilations[d] - padding[d].first;
            if (p < 0 || p % base_dilations[d] != 0 || p / base_dilations[d] >= in_dims[d]) {
              is_padding = true;
            } else {
              in += p / base_dilations[d] * in_strides[d];
            }
          }
          if (fold) {
            const Literal& x = is_padding ? ctx.operand(1) : ctx.operand(0);
            ApplyFold(*fold, results[0], out, x, is_padding ? 0 : in);
            return Status::Ok();
          }
          std::vector<RuntimeValue> args;
          args.reserve(2 * n);
          for (size_t i = 0; i < n; ++i) args.push_back(ScalarOf(results[i], out));
          for (size_t i = 0; i < n; ++i) {
            args.push_back(is_padding ? ScalarAs(ctx.operand(n + i), 0, results[i].dtype())
                                      : ScalarAs(ctx.operand(i), in, results[i].dtype()));
          }
          JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> returned,
                                ctx.CallRegion(0, std::move(args)));
          return StoreRegionResults(ctx, returned, results, out);
        }));
        ++out;
        return Status::Ok();
      }));
  std::vector<RuntimeValue> values;
  for (auto& res : results) values.emplace_back(std::move(res));
  return values;
}

// ---- select_and_scatter ---------------------------------------------------

// For each source element, selects one operand element of its window with
// the `select` region (a left fold over the window's in-bounds elements in
// index order that keeps the current choice while select(current, next)
// holds), then folds the source element into the result at the selected
// position with the `scatter` region. Padding positions are never selected;
// a window with no in-bounds element scatters nothing.
KernelResult SelectAndScatterKernel(OpContext& ctx) {
  const Literal& operand = ctx.operand(0);
  const Literal& source = ctx.operand(1);
  const std::vector<int64_t>& in_dims = operand.type().dims();
  const size_t rank = in_dims.size();
  const std::vector<int64_t> window = I64sOr(ctx, "window_dimensions", rank, 1);
  const std::vector<int64_t> strides = I64sOr(ctx, "window_strides", rank, 1);
  const auto padding = ctx.Padding("padding", static_cast<int64_t>(rank));
  JITD_RETURN_IF_ERROR(CheckWindowBounds(ctx, {&window, &strides}, padding));

  std::vector<Literal> result;
  JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(0));
  result.push_back(std::move(r));
  const DType dtype = result[0].dtype();
  for (int64_t j = 0; j < result[0].num_elements(); ++j) {
    ConvertElement(ctx.operand(2), 0, result[0], j);
  }
  const std::optional<FoldOp> fold =
      operand.dtype() == dtype ? RecognizeFold(ctx.op(), 1, dtype) : std::nullopt;
  const std::vector<int64_t> in_strides = Strides(in_dims);
  int64_t src = 0;
  JITD_RETURN_IF_ERROR(
      ForEachIndex(source.type().dims(), [&](const std::vector<int64_t>& s) -> Status {
        int64_t selected = -1;
        JITD_RETURN_IF_ERROR(ForEachIndex(window, [&](const std::vector<int64_t>& w) -> Status {
          int64_t in = 0;
          for (size_t d = 0; d < rank; ++d) {
            const int64_t p = s[d] * strides[d] + w[d] - padding[d].first;
            if (p < 0 || p >= in_dims[d]) return Status::Ok();
            in += p * in_strides[d];
          }
          if (selected < 0) {
            selected = in;
            return Status::Ok();
          }
          JITD_ASSIGN_OR_RETURN(
              std::vector<RuntimeValue> keep,
              ctx.CallRegion(0, {ScalarOf(operand, selected), ScalarOf(operand, in)}));
          if (keep.size() != 1 || !keep[0].is_tensor() ||
              keep[0].literal().dtype() != DType::kPred || keep[0].literal().num_elements() != 1) {
            return ctx.Error("select must return one tensor<i1>");
          }
          if (!keep[0].literal().GetPred(0)) selected = in;
          return Status::Ok();
        }));
        const int64_t this_source = src++;
        if (selected < 0) return Status::Ok();
        if (fold) {
          ApplyFold(*fold, result[0], selected, source, this_source);
          return Status::Ok();
        }
        JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> returned,
                              ctx.CallRegion(1, {ScalarOf(result[0], selected),
                                                 ScalarAs(source, this_source, dtype)}));
        return StoreRegionResults(ctx, returned, result, selected);
      }));
  return Single(std::move(result[0]));
}

// ---- map ------------------------------------------------------------------

KernelResult MapKernel(OpContext& ctx) {
  std::vector<Literal> result;
  JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(0));
  result.push_back(std::move(r));
  const int64_t count = result[0].num_elements();
  for (int64_t i = 0; i < count; ++i) {
    std::vector<RuntimeValue> args;
    args.reserve(ctx.num_operands());
    for (size_t k = 0; k < ctx.num_operands(); ++k) args.push_back(ScalarOf(ctx.operand(k), i));
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> returned, ctx.CallRegion(0, std::move(args)));
    JITD_RETURN_IF_ERROR(StoreRegionResults(ctx, returned, result, i));
  }
  return Single(std::move(result[0]));
}

}  // namespace

void RegisterReductionKernels(KernelTable& table) {
  Register(table, ir::OpCode::kReduce, ReduceKernel);
  Register(table, ir::OpCode::kReduceWindow, ReduceWindowKernel);
  Register(table, ir::OpCode::kSelectAndScatter, SelectAndScatterKernel);
  Register(table, ir::OpCode::kMap, MapKernel);
}

}  // namespace jitd::eval::internal
