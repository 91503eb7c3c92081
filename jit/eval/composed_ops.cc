// Kernels for the ops beyond the corpus. Most run through other ops: CHLO's
// broadcasting binaries (broadcast_in_dim, then the StableHLO op), the
// dynamic ops once their shape operands are read (the static op with those
// values as attributes), chlo.ragged_dot (dot_general on group-masked
// operands). The collectives register from collectives.cc.
// Own loops: chlo.scan, mulhi, _asin_acos_kernel, the CHLO constants,
// einsum / unary_einsum and torch_index_select. Also eval::CheckEvaluable.
//
// A composed op is built detached, on scratch values, and evaluated with
// OpContext::EvaluateDetached; its errors carry the original op's location.
#include <algorithm>
#include <complex>
#include <cstring>
#include <memory>
#include <set>

#include "jit/eval/custom_calls.h"
#include "jit/eval/internal/kernels.h"
#include "jit/eval/internal/quantized.h"

namespace jitd::eval::internal {
namespace {

using ir::DType;
using ir::Literal;
using ir::OpCode;
using ir::Type;

ir::DenseArrayAttr I64Array(std::vector<int64_t> values) {
  return ir::DenseArrayAttr{DType::kS64, std::move(values), {}};
}

// Evaluates `code` on `args` with the given result types and attributes.
KernelResult Apply(OpContext& ctx, OpCode code, std::vector<RuntimeValue> args,
                   std::vector<Type> result_types, ir::AttributeList attrs = {}) {
  std::vector<std::unique_ptr<ir::Value>> scratch;
  std::vector<ir::Value*> operands;
  for (size_t i = 0; i < args.size(); ++i) {
    scratch.push_back(std::make_unique<ir::Value>(args[i].type(), nullptr, nullptr,
                                                  static_cast<int>(i)));
    operands.push_back(scratch.back().get());
  }
  std::unique_ptr<ir::Op> op =
      ir::CreateOp(code, ctx.op().loc(), operands, result_types, std::move(attrs));
  return ctx.EvaluateDetached(*op, std::move(args));
}

// The integer values of a 1-D shape operand.
std::vector<int64_t> Ints(const Literal& lit) {
  std::vector<int64_t> v(static_cast<size_t>(lit.num_elements()));
  for (int64_t i = 0; i < lit.num_elements(); ++i) v[static_cast<size_t>(i)] = lit.GetInt(i);
  return v;
}

// ---- chlo.broadcast_* -------------------------------------------------------

KernelResult ChloBroadcastKernel(OpContext& ctx) {
  const Type& result = ctx.result_type(0);
  const std::vector<int64_t> bdims = ctx.I64s("broadcast_dimensions");
  const bool explicit_dims = ctx.op().attr("broadcast_dimensions") != nullptr;
  std::vector<RuntimeValue> args;
  for (size_t i = 0; i < ctx.num_operands(); ++i) {
    const Literal& x = ctx.operand(i);
    const Type want = result.WithDType(x.dtype());
    if (x.type() == want) {
      args.push_back(ctx.value(i));
      continue;
    }
    // Where each operand dimension goes: broadcast_dimensions for the
    // lower-ranked operand, else trailing dimensions aligned (numpy).
    std::vector<int64_t> dims;
    const int64_t rank = x.type().rank();
    for (int64_t d = 0; d < rank; ++d) {
      dims.push_back(explicit_dims && rank < result.rank() ? bdims[static_cast<size_t>(d)]
                                                            : result.rank() - rank + d);
    }
    ir::AttributeList attrs;
    attrs.Set("broadcast_dimensions", I64Array(std::move(dims)));
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> b,
                          Apply(ctx, OpCode::kBroadcastInDim, {ctx.value(i)}, {want}, attrs));
    args.push_back(std::move(b[0]));
  }
  ir::AttributeList attrs;
  if (ctx.op().code() == OpCode::kChloBroadcastCompare) {
    attrs.Set("comparison_direction",
              ir::EnumAttr{"stablehlo", "comparison_direction",
                           std::string(ctx.Enum("comparison_direction", "EQ"))});
    if (const ir::EnumAttr* t = ctx.op().GetEnum("compare_type")) {
      attrs.Set("compare_type", ir::EnumAttr{"stablehlo", "comparison_type", t->value});
    }
  }
  return Apply(ctx, *ir::ElementwiseOfChloBroadcast(ctx.op().code()), std::move(args), {result}, std::move(attrs));
}

// ---- small CHLO ops ---------------------------------------------------------

// The high half of the double-width product.
KernelResult MulhiKernel(OpContext& ctx) {
  const Literal& a = ctx.operand(0);
  const Literal& b = ctx.operand(1);
  JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(0));
  const int bits = ir::BitWidth(a.dtype());
  const bool is_unsigned = ir::IsUnsignedInt(a.dtype());
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    if (is_unsigned) {
      const unsigned __int128 p =
          static_cast<unsigned __int128>(a.GetUInt(i)) * static_cast<unsigned __int128>(b.GetUInt(i));
      out.SetBits(i, static_cast<uint64_t>(p >> bits));
    } else {
      const __int128 p = static_cast<__int128>(a.GetInt(i)) * static_cast<__int128>(b.GetInt(i));
      out.SetInt(i, static_cast<int64_t>(p >> bits));
    }
  }
  return Single(std::move(out));
}

KernelResult ChloConstantKernel(OpContext& ctx) {
  const auto& dense = ctx.op().attr("value")->as<ir::DenseElementsAttr>();
  auto lit = ir::DenseElementsToLiteral(dense);
  if (!lit.ok()) return ctx.Error(lit.status().message());
  return Single(std::move(lit).value());
}

KernelResult ChloConstantLikeKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(0));
  const ir::Attribute& value = *ctx.op().attr("value");
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (const auto* f = value.get_if<ir::FloatAttr>()) {
      if (ir::IsComplex(out.dtype())) {
        out.SetComplex(i, {f->value, 0});
      } else {
        out.SetDouble(i, f->value);
      }
    } else if (const auto* n = value.get_if<ir::IntegerAttr>()) {
      if (ir::IsFloat(out.dtype()) || ir::IsComplex(out.dtype())) {
        out.SetDouble(i, static_cast<double>(n->value));
      } else {
        out.SetInt(i, n->value);
      }
    } else {
      out.SetInt(i, value.as<bool>() ? 1 : 0);
    }
  }
  return Single(std::move(out));
}

// chlo._asin_acos_kernel: w with asin(z) = complex(atan2(re z, re w),
// sign(im z) im w) and acos(z) = complex(atan2(re w, re z), -sign(im z) im w)
// (chlo.md): re w = re(sqrt(1 - z) sqrt(1 + z)) (Kahan's form of asin's real
// part), im w = |im asin(z)|. A real operand gives re w.
KernelResult AsinAcosKernelKernel(OpContext& ctx) {
  const Literal& x = ctx.operand(0);
  JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(0));
  const bool complex = ir::IsComplex(x.dtype());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const std::complex<double> z = complex ? x.GetComplex(i) : std::complex<double>(x.GetDouble(i), 0);
    const std::complex<double> s = std::sqrt(1.0 - z) * std::sqrt(1.0 + z);
    if (complex) {
      out.SetComplex(i, {s.real(), std::abs(std::asin(z).imag())});
    } else {
      out.SetDouble(i, s.real());
    }
  }
  return Single(std::move(out));
}

// ---- dynamism: the static op, once the shape operands are known ------------

// A shape operand must agree with the static result type jitd compiled.
Status CheckShape(OpContext& ctx, size_t operand, std::string_view name) {
  const std::vector<int64_t> shape = Ints(ctx.operand(operand));
  if (shape != ctx.result_type(0).dims()) {
    std::string got;
    for (int64_t d : shape) got += (got.empty() ? "" : ", ") + std::to_string(d);
    return ctx.Error("has " + std::string(name) + " [" + got + "], which is not the shape of its result " +
                     ctx.result_type(0).ToString());
  }
  return Status::Ok();
}

KernelResult DynamicIotaKernel(OpContext& ctx) {
  JITD_RETURN_IF_ERROR(CheckShape(ctx, 0, "output_shape"));
  ir::AttributeList attrs;
  attrs.Set("iota_dimension", ir::IntegerAttr{ctx.Int("iota_dimension", 0), DType::kS64});
  return Apply(ctx, OpCode::kIota, {}, {ctx.result_type(0)}, std::move(attrs));
}

KernelResult DynamicReshapeKernel(OpContext& ctx) {
  JITD_RETURN_IF_ERROR(CheckShape(ctx, 1, "output_shape"));
  return Apply(ctx, OpCode::kReshape, {ctx.value(0)}, {ctx.result_type(0)});
}

KernelResult DynamicBroadcastInDimKernel(OpContext& ctx) {
  JITD_RETURN_IF_ERROR(CheckShape(ctx, 1, "output_dimensions"));
  ir::AttributeList attrs;
  attrs.Set("broadcast_dimensions", I64Array(ctx.I64s("broadcast_dimensions")));
  return Apply(ctx, OpCode::kBroadcastInDim, {ctx.value(0)}, {ctx.result_type(0)},
               std::move(attrs));
}

KernelResult DynamicPadKernel(OpContext& ctx) {
  ir::AttributeList attrs;
  attrs.Set("edge_padding_low", I64Array(Ints(ctx.operand(2))));
  attrs.Set("edge_padding_high", I64Array(Ints(ctx.operand(3))));
  attrs.Set("interior_padding", I64Array(Ints(ctx.operand(4))));
  return Apply(ctx, OpCode::kPad, {ctx.value(0), ctx.value(1)}, {ctx.result_type(0)},
               std::move(attrs));
}

KernelResult RealDynamicSliceKernel(OpContext& ctx) {
  ir::AttributeList attrs;
  attrs.Set("start_indices", I64Array(Ints(ctx.operand(1))));
  attrs.Set("limit_indices", I64Array(Ints(ctx.operand(2))));
  attrs.Set("strides", I64Array(Ints(ctx.operand(3))));
  return Apply(ctx, OpCode::kSlice, {ctx.value(0)}, {ctx.result_type(0)}, std::move(attrs));
}

// The op's own attributes, less `drop`, plus what the caller adds.
ir::AttributeList CopyAttrs(const OpContext& ctx, std::initializer_list<std::string_view> drop) {
  ir::AttributeList attrs;
  for (const auto& e : ctx.op().attrs().entries()) {
    if (std::find(drop.begin(), drop.end(), e.name) == drop.end()) attrs.Set(e.name, e.value);
  }
  return attrs;
}

KernelResult DynamicGatherKernel(OpContext& ctx) {
  ir::AttributeList attrs = CopyAttrs(ctx, {});
  attrs.Set("slice_sizes", I64Array(Ints(ctx.operand(2))));
  return Apply(ctx, OpCode::kGather, {ctx.value(0), ctx.value(1)}, {ctx.result_type(0)},
               std::move(attrs));
}

KernelResult DynamicConvKernel(OpContext& ctx) {
  ir::AttributeList attrs = CopyAttrs(ctx, {"padding"});
  const Literal& padding = ctx.operand(2);
  JITD_ASSIGN_OR_RETURN(Literal p64, ctx.NewLiteral(padding.type().WithDType(DType::kS64)));
  for (int64_t i = 0; i < padding.num_elements(); ++i) p64.SetInt(i, padding.GetInt(i));
  attrs.Set("padding", ir::MakeDenseElements(p64));
  return Apply(ctx, OpCode::kConvolution, {ctx.value(0), ctx.value(1)}, {ctx.result_type(0)},
               std::move(attrs));
}

// ---- chlo.scan and chlo.ragged_dot --------------------------------------------

// Element `k` along dimension `dim` of `lit`: a tensor of one rank less.
StatusOr<Literal> TakeSlice(OpContext& ctx, const Literal& lit, int64_t dim, int64_t k) {
  std::vector<int64_t> dims = lit.type().dims();
  const int64_t n = dims[static_cast<size_t>(dim)];
  dims.erase(dims.begin() + dim);
  JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewLiteral(Type::Tensor(lit.dtype(), dims)));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= lit.type().dim(d);
  for (int64_t d = dim + 1; d < lit.type().rank(); ++d) inner *= lit.type().dim(d);
  const size_t bytes = static_cast<size_t>(inner * ir::StorageBytes(lit.dtype()));
  for (int64_t o = 0; o < outer; ++o) {
    if (bytes) std::memcpy(out.mutable_element_ptr(o * inner), lit.element_ptr((o * n + k) * inner), bytes);
  }
  return out;
}

// Stores `slice` as element `k` along dimension `dim` of `out`.
void PutSlice(Literal& out, int64_t dim, int64_t k, const Literal& slice) {
  const int64_t n = out.type().dim(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.type().dim(d);
  for (int64_t d = dim + 1; d < out.type().rank(); ++d) inner *= out.type().dim(d);
  const size_t bytes = static_cast<size_t>(inner * ir::StorageBytes(out.dtype()));
  for (int64_t o = 0; o < outer; ++o) {
    if (bytes) std::memcpy(out.mutable_element_ptr((o * n + k) * inner), slice.element_ptr(o * inner), bytes);
  }
}

// How many of the operands are inputs (the rest are inits): the
// operandSegmentSizes attribute, as MLIR writes it.
int64_t ScanInputs(const ir::Op& op) {
  const ir::Attribute* a = op.attr("operandSegmentSizes");
  const auto* d = a ? a->get_if<ir::DenseArrayAttr>() : nullptr;
  return d && d->ints.size() == 2 ? d->ints[0] : static_cast<int64_t>(op.num_operands());
}

// chlo.scan: the body runs once per index along `dimension` (last to first
// when is_reverse), on the inputs' slices there and the carries; it returns
// the outputs' slices at that index and the next carries. Results: the
// outputs, then the final carries.
KernelResult ScanKernel(OpContext& ctx) {
  const ir::Op& op = ctx.op();
  const size_t num_inputs = static_cast<size_t>(ScanInputs(op));
  const size_t num_carries = op.num_operands() - num_inputs;
  const size_t num_outputs = op.num_results() - num_carries;
  const int64_t dim = ctx.Int("dimension", 0);
  const int64_t length = num_inputs ? ctx.operand(0).type().dim(dim)
                         : num_outputs ? ctx.result_type(0).dim(dim)
                                       : ctx.Int("scan_dim_size", 0);
  const bool reverse = ctx.Bool("is_reverse", false);
  std::vector<RuntimeValue> carries;
  for (size_t i = num_inputs; i < op.num_operands(); ++i) carries.push_back(ctx.value(i));
  std::vector<Literal> outputs;
  for (size_t i = 0; i < num_outputs; ++i) {
    JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(i));
    outputs.push_back(std::move(out));
  }
  for (int64_t step = 0; step < length; ++step) {
    const int64_t k = reverse ? length - 1 - step : step;
    std::vector<RuntimeValue> args;
    for (size_t i = 0; i < num_inputs; ++i) {
      JITD_ASSIGN_OR_RETURN(Literal slice, TakeSlice(ctx, ctx.operand(i), dim, k));
      args.emplace_back(std::move(slice));
    }
    for (const RuntimeValue& c : carries) args.push_back(c);
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> returned, ctx.CallRegion(0, std::move(args)));
    if (returned.size() != num_outputs + num_carries) {
      return ctx.Error("body returned " + std::to_string(returned.size()) + " values for " +
                       std::to_string(num_outputs) + " outputs and " + std::to_string(num_carries) +
                       " carries");
    }
    for (size_t i = 0; i < num_outputs; ++i) PutSlice(outputs[i], dim, k, returned[i].literal());
    carries.assign(returned.begin() + static_cast<std::ptrdiff_t>(num_outputs), returned.end());
  }
  std::vector<RuntimeValue> out;
  for (Literal& o : outputs) out.emplace_back(std::move(o));
  for (RuntimeValue& c : carries) out.push_back(std::move(c));
  return out;
}

// chlo.ragged_dot (chlo.md): a dot_general in which the lhs's ragged
// dimension is cut into consecutive groups of group_sizes[...] elements.
//   ragged dimension not contracted (mode 1): the rows of group i multiply
//     rhs's group i (rhs_group_dimensions);
//   ragged dimension contracted (mode 2): result[i] contracts over group i;
//   ragged dimension a batch dimension (mode 3): a plain batched dot.
// Elements past the last group count nowhere. group_sizes of rank > 1 give
// the sizes per index of the leading lhs batch dimensions.
KernelResult RaggedDotKernel(OpContext& ctx) {
  const Literal& lhs = ctx.operand(0);
  const Literal& rhs = ctx.operand(1);
  const Literal& sizes = ctx.operand(2);
  const auto field = [&](std::string_view f) { return ctx.StructField("ragged_dot_dimension_numbers", f); };
  const std::vector<int64_t> lb = field("lhs_batching_dimensions"), rb = field("rhs_batching_dimensions"),
                             lc = field("lhs_contracting_dimensions"),
                             rc = field("rhs_contracting_dimensions"),
                             lr = field("lhs_ragged_dimensions"), rg = field("rhs_group_dimensions");
  if (lr.size() != 1 || rg.size() > 1) {
    return ctx.Error("needs one lhs_ragged_dimensions and at most one rhs_group_dimensions");
  }
  const int64_t ragged = lr[0];
  const auto in = [](const std::vector<int64_t>& v, int64_t d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };
  const int mode = in(lb, ragged) ? 3 : in(lc, ragged) ? 2 : 1;
  if ((mode == 1) != (rg.size() == 1)) {
    return ctx.Error(mode == 1 ? "has a ragged non-contracting dimension but no rhs group dimension"
                               : "has an rhs group dimension but a ragged batch or contracting dimension");
  }
  const int64_t groups = sizes.type().rank() ? sizes.type().dims().back() : 1;
  const size_t lead = static_cast<size_t>(std::max<int64_t>(sizes.type().rank() - 1, 0));
  if (lead > lb.size()) return ctx.Error("has group_sizes of more dimensions than lhs batch dimensions + 1");
  // The group of each lhs element (-1: past the last group).
  const std::vector<int64_t> ldims = lhs.type().dims();
  std::vector<int64_t> group(static_cast<size_t>(lhs.num_elements()), -1);
  int64_t flat = 0;
  JITD_RETURN_IF_ERROR(ForEachIndex(ldims, [&](const std::vector<int64_t>& index) {
    int64_t row = 0;  // which row of group_sizes
    for (size_t j = 0; j < lead; ++j) row = row * sizes.type().dim(static_cast<int64_t>(j)) + index[static_cast<size_t>(lb[j])];
    int64_t end = 0;
    for (int64_t g = 0; g < groups; ++g) {
      end += sizes.GetInt(row * groups + g);
      if (index[static_cast<size_t>(ragged)] < end) {
        group[static_cast<size_t>(flat)] = g;
        break;
      }
    }
    ++flat;
    return Status::Ok();
  }));
  const size_t bytes = static_cast<size_t>(ir::StorageBytes(lhs.dtype()));
  // lhs with every element outside group `g` (any group, for g = -2) zeroed.
  const auto masked = [&](int64_t g) -> StatusOr<Literal> {
    JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewLiteral(lhs.type()));
    for (int64_t i = 0; i < lhs.num_elements(); ++i) {
      const int64_t gi = group[static_cast<size_t>(i)];
      if (gi == g || (g == -2 && gi >= 0)) std::memcpy(out.mutable_element_ptr(i), lhs.element_ptr(i), bytes);
    }
    return out;
  };
  const auto dot = [&](Literal a, Literal b, std::vector<int64_t> rbatch, std::vector<int64_t> rcontract,
                       const Type& type) -> StatusOr<RuntimeValue> {
    ir::StructAttr dn{"stablehlo.dot", {{"lhs_batching_dimensions", true, lb},
                                        {"rhs_batching_dimensions", true, std::move(rbatch)},
                                        {"lhs_contracting_dimensions", true, lc},
                                        {"rhs_contracting_dimensions", true, std::move(rcontract)}}};
    ir::AttributeList attrs;
    attrs.Set("dot_dimension_numbers", std::move(dn));
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> r,
                          Apply(ctx, OpCode::kDotGeneral, {RuntimeValue(std::move(a)), RuntimeValue(std::move(b))},
                                {type}, std::move(attrs)));
    return std::move(r[0]);
  };
  const Type& result = ctx.result_type(0);
  if (mode == 3) {
    JITD_ASSIGN_OR_RETURN(Literal a, masked(-2));
    JITD_ASSIGN_OR_RETURN(RuntimeValue r, dot(std::move(a), rhs, rb, rc, result));
    return std::vector<RuntimeValue>{std::move(r)};
  }
  if (mode == 2) {
    JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(0));
    std::vector<int64_t> part(result.dims().begin() + 1, result.dims().end());
    for (int64_t g = 0; g < groups; ++g) {
      JITD_ASSIGN_OR_RETURN(Literal a, masked(g));
      JITD_ASSIGN_OR_RETURN(RuntimeValue r, dot(std::move(a), rhs, rb, rc, Type::Tensor(result.dtype(), part)));
      PutSlice(out, 0, g, r.literal());
    }
    return Single(std::move(out));
  }
  // Mode 1: sum over groups of (rows of group g) x rhs[group g].
  const int64_t gdim = rg[0];
  std::vector<int64_t> rb1 = rb, rc1 = rc;
  for (auto* v : {&rb1, &rc1}) {
    for (int64_t& d : *v) d -= d > gdim ? 1 : 0;
  }
  JITD_ASSIGN_OR_RETURN(Literal sum, ctx.NewResult(0));
  RuntimeValue acc(std::move(sum));
  for (int64_t g = 0; g < groups && g < rhs.type().dim(gdim); ++g) {
    JITD_ASSIGN_OR_RETURN(Literal a, masked(g));
    JITD_ASSIGN_OR_RETURN(Literal b, TakeSlice(ctx, rhs, gdim, g));
    JITD_ASSIGN_OR_RETURN(RuntimeValue r, dot(std::move(a), std::move(b), rb1, rc1, result));
    JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> added,
                          Apply(ctx, OpCode::kAdd, {std::move(acc), std::move(r)}, {result}));
    acc = std::move(added[0]);
  }
  return std::vector<RuntimeValue>{std::move(acc)};
}

// ---- deprecated ops: einsum, unary_einsum, torch_index_select --------------

// einsum / unary_einsum with einsum_config "ab,bc->ac" ("ab->a"): every
// output element sums, over the labels not in the output, the product of
// the operands' elements the labels select. Accumulates in int64, double or
// complex<double> and rounds once.
KernelResult EinsumKernel(OpContext& ctx) {
  const ir::Attribute* a = ctx.op().attr("einsum_config");
  const std::string config = a && a->is<ir::StringAttr>() ? a->as<ir::StringAttr>().value : "";
  const size_t arrow = config.find("->");
  std::vector<std::string> inputs;
  if (arrow != std::string::npos) {
    for (size_t start = 0;;) {
      const size_t comma = config.find(',', start);
      inputs.push_back(config.substr(start, std::min(comma, arrow) - start));
      if (comma == std::string::npos || comma > arrow) break;
      start = comma + 1;
    }
  }
  const std::string output = arrow == std::string::npos ? "" : config.substr(arrow + 2);
  if (arrow == std::string::npos || inputs.size() != ctx.num_operands() ||
      config.find("...") != std::string::npos) {
    return ctx.Error("has einsum_config '" + config + "'; expected one label string per operand, "
                     "'->' and the output's labels (no '...')");
  }
  std::string labels;  // output labels first, then the summed ones
  std::vector<int64_t> sizes;
  const auto add_label = [&](char c, int64_t size) -> Status {
    const size_t at = labels.find(c);
    if (at == std::string::npos) {
      labels += c;
      sizes.push_back(size);
    } else if (sizes[at] != size) {
      return ctx.Error("has label '" + std::string(1, c) + "' for dimensions of sizes " +
                       std::to_string(sizes[at]) + " and " + std::to_string(size));
    }
    return Status::Ok();
  };
  const Type& result = ctx.result_type(0);
  if (static_cast<int64_t>(output.size()) != result.rank()) return ctx.Error("has output labels '" + output + "' for " + result.ToString());
  for (size_t i = 0; i < output.size(); ++i) JITD_RETURN_IF_ERROR(add_label(output[i], result.dim(static_cast<int64_t>(i))));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Type& t = ctx.operand(k).type();
    if (static_cast<int64_t>(inputs[k].size()) != t.rank()) {
      return ctx.Error("has labels '" + inputs[k] + "' for operand #" + std::to_string(k) + " of type " + t.ToString());
    }
    for (size_t d = 0; d < inputs[k].size(); ++d) JITD_RETURN_IF_ERROR(add_label(inputs[k][d], t.dim(static_cast<int64_t>(d))));
  }
  // Where each operand's dimensions find their label.
  std::vector<std::vector<size_t>> picks(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    for (char c : inputs[k]) picks[k].push_back(labels.find(c));
  }
  JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(0));
  const DType dt = result.dtype();
  const bool is_complex = ir::IsComplex(dt), is_float = ir::IsFloat(dt);
  std::vector<std::complex<double>> sums(static_cast<size_t>(out.num_elements()));
  std::vector<int64_t> isums(static_cast<size_t>(out.num_elements()));
  std::vector<std::vector<int64_t>> strides(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) strides[k] = Strides(ctx.operand(k).type().dims());
  const std::vector<int64_t> out_strides = Strides(result.dims());
  JITD_RETURN_IF_ERROR(ForEachIndex(sizes, [&](const std::vector<int64_t>& index) {
    std::complex<double> p = 1;
    int64_t ip = 1;
    for (size_t k = 0; k < inputs.size(); ++k) {
      int64_t off = 0;
      for (size_t d = 0; d < picks[k].size(); ++d) off += index[picks[k][d]] * strides[k][d];
      const Literal& x = ctx.operand(k);
      if (is_complex) p *= x.GetComplex(off);
      else if (is_float) p *= x.GetDouble(off);
      else ip *= x.GetInt(off);
    }
    int64_t o = 0;
    for (size_t d = 0; d < output.size(); ++d) o += index[d] * out_strides[d];
    sums[static_cast<size_t>(o)] += p;
    isums[static_cast<size_t>(o)] += ip;
    return Status::Ok();
  }));
  for (int64_t i = 0; i < out.num_elements(); ++i) {
    if (is_complex) out.SetComplex(i, sums[static_cast<size_t>(i)]);
    else if (is_float) out.SetDouble(i, sums[static_cast<size_t>(i)].real());
    else out.SetInt(i, isums[static_cast<size_t>(i)]);
  }
  return Single(std::move(out));
}

// torch_index_select(operand, index) {dim, batch_dims}: result index
// (pre, mid, post), pre = operand dims before dim, mid = index dims after
// batch_dims, post = operand dims after dim, reads
// operand[pre, index[pre[:batch_dims], mid], post].
KernelResult TorchIndexSelectKernel(OpContext& ctx) {
  const Literal& x = ctx.operand(0);
  const Literal& index = ctx.operand(1);
  const int64_t dim = ctx.Int("dim", 0), batch = ctx.Int("batch_dims", 0);
  const int64_t mid = index.type().rank() - batch;
  JITD_ASSIGN_OR_RETURN(Literal out, ctx.NewResult(0));
  const std::vector<int64_t> xs = Strides(x.type().dims()), is = Strides(index.type().dims());
  int64_t o = 0;
  JITD_RETURN_IF_ERROR(ForEachIndex(out.type().dims(), [&](const std::vector<int64_t>& r) {
    int64_t io = 0;
    for (int64_t d = 0; d < batch; ++d) io += r[static_cast<size_t>(d)] * is[static_cast<size_t>(d)];
    for (int64_t d = 0; d < mid; ++d) io += r[static_cast<size_t>(dim + d)] * is[static_cast<size_t>(batch + d)];
    const int64_t i = index.GetInt(io);
    if (i < 0 || i >= x.type().dim(dim)) {
      return ctx.Error("has index " + std::to_string(i) + " out of range for dimension " + std::to_string(dim) +
                       " of size " + std::to_string(x.type().dim(dim)));
    }
    int64_t xo = i * xs[static_cast<size_t>(dim)];
    for (int64_t d = 0; d < dim; ++d) xo += r[static_cast<size_t>(d)] * xs[static_cast<size_t>(d)];
    for (int64_t d = dim + 1; d < x.type().rank(); ++d) xo += r[static_cast<size_t>(d - 1 + mid)] * xs[static_cast<size_t>(d)];
    CopyElement(x, xo, out, o++);
    return Status::Ok();
  }));
  return Single(std::move(out));
}

}  // namespace

void RegisterComposedKernels(KernelTable& table) {
  Register(table, OpCode::kEinsum, EinsumKernel);
  Register(table, OpCode::kUnaryEinsum, EinsumKernel);
  Register(table, OpCode::kTorchIndexSelect, TorchIndexSelectKernel);
  Register(table, OpCode::kChloScan, ScanKernel);
  Register(table, OpCode::kChloRaggedDot, RaggedDotKernel);
  for (OpCode c : {OpCode::kChloBroadcastAdd, OpCode::kChloBroadcastAnd,
                   OpCode::kChloBroadcastAtan2, OpCode::kChloBroadcastCompare,
                   OpCode::kChloBroadcastComplex, OpCode::kChloBroadcastDivide,
                   OpCode::kChloBroadcastMaximum, OpCode::kChloBroadcastMinimum,
                   OpCode::kChloBroadcastMultiply, OpCode::kChloBroadcastNextAfter,
                   OpCode::kChloBroadcastOr, OpCode::kChloBroadcastPolygamma,
                   OpCode::kChloBroadcastPower, OpCode::kChloBroadcastRemainder,
                   OpCode::kChloBroadcastSelect, OpCode::kChloBroadcastShiftLeft,
                   OpCode::kChloBroadcastShiftRightArithmetic,
                   OpCode::kChloBroadcastShiftRightLogical, OpCode::kChloBroadcastSubtract,
                   OpCode::kChloBroadcastXor, OpCode::kChloBroadcastZeta}) {
    Register(table, c, ChloBroadcastKernel);
  }
  Register(table, OpCode::kChloMulhi, MulhiKernel);
  Register(table, OpCode::kChloAsinAcosKernel, AsinAcosKernelKernel);
  Register(table, OpCode::kChloConstant, ChloConstantKernel);
  Register(table, OpCode::kChloConstantLike, ChloConstantLikeKernel);
  Register(table, OpCode::kDynamicIota, DynamicIotaKernel);
  Register(table, OpCode::kDynamicReshape, DynamicReshapeKernel);
  Register(table, OpCode::kDynamicBroadcastInDim, DynamicBroadcastInDimKernel);
  Register(table, OpCode::kDynamicPad, DynamicPadKernel);
  Register(table, OpCode::kRealDynamicSlice, RealDynamicSliceKernel);
  Register(table, OpCode::kDynamicGather, DynamicGatherKernel);
  Register(table, OpCode::kDynamicConv, DynamicConvKernel);
  RegisterCollectiveKernels(table);
}

}  // namespace jitd::eval::internal

namespace jitd::eval {

Status CheckEvaluable(const ir::Op& op) {
  static const internal::KernelTable* const table = [] {
    auto* t = new internal::KernelTable();
    t->fill(nullptr);
    internal::RegisterElementwiseKernels(*t);
    internal::RegisterShapeKernels(*t);
    internal::RegisterIndexingKernels(*t);
    internal::RegisterReductionKernels(*t);
    internal::RegisterLinalgKernels(*t);
    internal::RegisterComposedKernels(*t);
    internal::RegisterQuantizedKernels(*t);
    return t;
  }();
  using ir::OpCode;
  const OpCode c = op.code();
  if (static_cast<size_t>(c) < internal::kNumOpCodes && (*table)[static_cast<size_t>(c)]) {
    return Status::Ok();
  }
  switch (c) {
    case OpCode::kCustomCall: {
      // A target outside the registry is refused at compile, not when reached.
      std::string target;
      if (const ir::Attribute* a = op.attr("call_target_name")) {
        if (const auto* s = a->get_if<ir::StringAttr>()) target = s->value;
      }
      if (Status s = CheckCustomCallTarget(target); !s.ok()) {
        return Status(s.code(), op.loc().ToString() + ": " + std::string(s.message()));
      }
      return Status::Ok();
    }
    default:
      // Ops with special handling in the evaluator itself (constants, calls,
      // control flow, tuples, tokens, futures, feeds, custom_call, checks).
      return Status::Ok();
  }
}

}  // namespace jitd::eval
