// refine_shapes: see refine_shapes.h. One walk over the entry function in
// program order; each op is refined once its operands are (values are
// defined before their uses), and nested regions are refined with their
// op: before it for while/if/case (their block arguments and results follow
// the operands), inside it for the others (whose block arguments are
// scalars). Nothing here trusts the IR: attribute lists are checked before
// they index anything, and an op whose attributes do not fit its operands
// is left with its declared types, which the final verification reports.
#include "jit/passes/refine_shapes.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "jit/eval/custom_calls.h"
#include "jit/eval/eval.h"
#include "jit/ir/verifier.h"
#include "jit/passes/internal/rewrite_util.h"
#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;
using Dims = std::vector<int64_t>;
// Wide enough for any sum or product of two int64 sizes or paddings.
using Wide = __int128;
constexpr int64_t kDyn = Type::kDynamic;

// Shape operands hold at most this many values (a rank, or rank x 2).
constexpr int64_t kMaxShapeValues = 2 * ir::kMaxRank;
// Integer ops on constants fold when their results are at most this big:
// shape computations are a few values.
constexpr int64_t kMaxFoldedElements = 1024;

std::string DimsText(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i] == kDyn ? "?" : std::to_string(dims[i]);
  }
  return s + "]";
}

// "%name" (or "%name#k" for a result of a group), else "result #i", then
// " of 'op' at line:col"; for a block argument "%name (argument #i)".
std::string DescribeValue(const Value* v) {
  const Op* op = v->defining_op();
  if (!op) {
    std::string s = v->name().empty() ? "block argument" : "%" + v->name();
    return s + " (argument #" + std::to_string(v->index()) + ")";
  }
  std::string name;
  int first = 0;
  for (const ir::ResultGroup& g : op->result_groups()) {
    if (v->index() < first + g.count) {
      name = "%" + g.name;
      if (g.count > 1) name += "#" + std::to_string(v->index() - first);
      break;
    }
    first += g.count;
  }
  if (name.empty()) name = "result #" + std::to_string(v->index());
  return name + " of '" + std::string(op->name()) + "' at " + op->loc().ToString();
}

Status OpError(const Op& op, const std::string& what) {
  return InvalidArgument("shape refinement: " + op.loc().ToString() + ": '" +
                         std::string(op.name()) + "' " + what);
}

// The integer values of `v` when a stablehlo.constant defines it (at most
// kMaxShapeValues of them).
std::optional<Dims> IntValues(const Value* v) {
  const ir::DenseElementsAttr* attr = internal::ConstantAttr(v);
  if (!attr || !attr->type.is_tensor() || attr->type.is_dynamic() ||
      !(ir::IsInteger(attr->type.dtype())) || attr->type.num_elements() > kMaxShapeValues) {
    return std::nullopt;
  }
  auto literal = ir::DenseElementsToLiteral(*attr);
  if (!literal.ok()) return std::nullopt;
  Dims out(static_cast<size_t>(literal->num_elements()));
  for (int64_t i = 0; i < literal->num_elements(); ++i) out[static_cast<size_t>(i)] = literal->GetInt(i);
  return out;
}

const ir::StructField* Field(const Op& op, std::string_view attr, std::string_view name) {
  const ir::Attribute* a = op.attr(attr);
  const auto* s = a ? a->get_if<ir::StructAttr>() : nullptr;
  if (!s) return nullptr;
  for (const ir::StructField& f : s->fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}
Dims FieldValues(const Op& op, std::string_view attr, std::string_view name) {
  const ir::StructField* f = Field(op, attr, name);
  return f ? f->values : Dims{};
}
bool InRange(const Dims& values, int64_t rank) {
  for (int64_t v : values) {
    if (v < 0 || v >= rank) return false;
  }
  return true;
}
bool Contains(const Dims& values, int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// Merges what the operands say about a dimension: a static size wins over
// `?`; two different static sizes leave the first (the verifier reports it).
int64_t Merge(int64_t a, int64_t b) { return a == kDyn ? b : a; }

// ---------------------------------------------------------------------------
// Result shapes from operand shapes. Each returns the dims of result 0 (or
// of every result), kDyn where the operands do not tell; nullopt when the op
// has no rule or its attributes do not fit (its declared type stays).

std::optional<Dims> ElementwiseShape(const Op& op, int64_t rank) {
  Dims dims(static_cast<size_t>(rank), kDyn);
  bool any = false;
  for (const Value* v : op.operands()) {
    const Type& t = v->type();
    if (!t.is_tensor() || t.rank() != rank) continue;
    any = true;
    for (int64_t i = 0; i < rank; ++i) dims[i] = Merge(dims[i], t.dim(i));
  }
  if (!any) return std::nullopt;
  return dims;
}

std::optional<Dims> BroadcastInDimShape(const Op& op, const Dims& declared) {
  const auto bdims = op.GetI64Array("broadcast_dimensions");
  const Type& x = op.operand(0)->type();
  if (!bdims || static_cast<int64_t>(bdims->size()) != x.rank() ||
      !InRange(*bdims, static_cast<int64_t>(declared.size()))) {
    return std::nullopt;
  }
  Dims dims = declared;
  for (size_t j = 0; j < bdims->size(); ++j) {
    // An operand dimension of 1 may expand to anything; others map through.
    const int64_t d = x.dim(static_cast<int64_t>(j));
    if (d != 1 && d != kDyn) dims[(*bdims)[j]] = Merge(dims[(*bdims)[j]], d);
  }
  return dims;
}

std::optional<Dims> ReshapeShape(const Op& op, const Dims& declared) {
  const Type& x = op.operand(0)->type();
  if (x.is_dynamic()) return std::nullopt;
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i] == kDyn) {
      if (unknown >= 0) return std::nullopt;  // two `?`: not determined
      unknown = static_cast<int64_t>(i);
    } else {
      known *= declared[i];
    }
  }
  Dims dims = declared;
  if (unknown >= 0) {
    if (known == 0 || x.num_elements() % known != 0) return std::nullopt;
    dims[unknown] = x.num_elements() / known;
  }
  return dims;
}

std::optional<Dims> TransposeShape(const Op& op) {
  const auto perm = op.GetI64Array("permutation");
  const Type& x = op.operand(0)->type();
  if (!perm || static_cast<int64_t>(perm->size()) != x.rank() || !InRange(*perm, x.rank())) {
    return std::nullopt;
  }
  Dims dims;
  for (int64_t p : *perm) dims.push_back(x.dim(p));
  return dims;
}

std::optional<Dims> DotGeneralShape(const Op& op) {
  const Type& lhs = op.operand(0)->type();
  const Type& rhs = op.operand(1)->type();
  const char* attr = "dot_dimension_numbers";
  const Dims lb = FieldValues(op, attr, "lhs_batching_dimensions");
  const Dims rb = FieldValues(op, attr, "rhs_batching_dimensions");
  const Dims lc = FieldValues(op, attr, "lhs_contracting_dimensions");
  const Dims rc = FieldValues(op, attr, "rhs_contracting_dimensions");
  if (!InRange(lb, lhs.rank()) || !InRange(lc, lhs.rank()) || !InRange(rb, rhs.rank()) ||
      !InRange(rc, rhs.rank())) {
    return std::nullopt;
  }
  Dims dims;
  for (int64_t d : lb) dims.push_back(lhs.dim(d));
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (!Contains(lb, d) && !Contains(lc, d)) dims.push_back(lhs.dim(d));
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (!Contains(rb, d) && !Contains(rc, d)) dims.push_back(rhs.dim(d));
  }
  return dims;
}

std::optional<Dims> DotShape(const Op& op) {
  const Type& lhs = op.operand(0)->type();
  const Type& rhs = op.operand(1)->type();
  Dims dims;
  if (lhs.rank() == 2) dims.push_back(lhs.dim(0));
  if (rhs.rank() == 2) dims.push_back(rhs.dim(1));
  if (lhs.rank() < 1 || lhs.rank() > 2 || rhs.rank() < 1 || rhs.rank() > 2) return std::nullopt;
  return dims;
}

std::optional<Dims> ConcatenateShape(const Op& op) {
  const auto dim = op.GetInt("dimension");
  if (!dim || op.num_operands() == 0) return std::nullopt;
  const int64_t rank = op.operand(0)->type().rank();
  if (*dim < 0 || *dim >= rank) return std::nullopt;
  Dims dims(static_cast<size_t>(rank), kDyn);
  int64_t sum = 0;
  for (const Value* v : op.operands()) {
    const Type& t = v->type();
    if (t.rank() != rank) return std::nullopt;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != *dim) dims[i] = Merge(dims[i], t.dim(i));
    }
    if (t.dim(*dim) == kDyn || sum == kDyn) {
      sum = kDyn;
    } else {
      sum += t.dim(*dim);
    }
  }
  dims[*dim] = sum;
  return dims;
}

// slice / real_dynamic_slice with known start, limit, strides.
std::optional<Dims> SliceShape(const Dims& start, const Dims& limit, const Dims& strides,
                               int64_t rank) {
  if (static_cast<int64_t>(start.size()) != rank || limit.size() != start.size() ||
      strides.size() != start.size()) {
    return std::nullopt;
  }
  Dims dims;
  for (size_t i = 0; i < start.size(); ++i) {
    if (strides[i] <= 0 || limit[i] < start[i]) return std::nullopt;
    const Wide size = (Wide(limit[i]) - start[i] + strides[i] - 1) / strides[i];
    if (size > ir::kMaxElements) return std::nullopt;
    dims.push_back(static_cast<int64_t>(size));
  }
  return dims;
}

// pad / dynamic_pad with known paddings.
std::optional<Dims> PadShape(const Type& x, const Dims& lo, const Dims& hi, const Dims& interior) {
  if (x.is_dynamic() || static_cast<int64_t>(lo.size()) != x.rank() || hi.size() != lo.size() ||
      interior.size() != lo.size()) {
    return std::nullopt;
  }
  Dims dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    const int64_t d = x.dim(i);
    if (interior[i] < 0) return std::nullopt;
    const Wide size = Wide(lo[i]) + d + (d > 0 ? Wide(d - 1) * interior[i] : 0) + hi[i];
    if (size < 0 || size > ir::kMaxElements) return std::nullopt;
    dims.push_back(static_cast<int64_t>(size));
  }
  return dims;
}

std::optional<Dims> ReduceShape(const Op& op, size_t result) {
  const auto reduced = op.GetI64Array("dimensions");
  if (!reduced || result >= op.num_operands()) return std::nullopt;
  const Type& x = op.operand(result)->type();
  if (!InRange(*reduced, x.rank())) return std::nullopt;
  Dims dims;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!Contains(*reduced, d)) dims.push_back(x.dim(d));
  }
  return dims;
}

// gather / dynamic_gather (spec: shape(result) from batch dims of the
// indices and the offset dims of slice_sizes).
std::optional<Dims> GatherShape(const Op& op, const Dims& slice_sizes, int64_t result_rank) {
  const Type& x = op.operand(0)->type();
  const Type& idx = op.operand(1)->type();
  const char* attr = "dimension_numbers";
  const Dims offset_dims = FieldValues(op, attr, "offset_dims");
  const Dims collapsed = FieldValues(op, attr, "collapsed_slice_dims");
  const Dims obatch = FieldValues(op, attr, "operand_batching_dims");
  const ir::StructField* ivd_field = Field(op, attr, "index_vector_dim");
  // Absent means 0, as the verifier reads it (the attribute's default).
  const int64_t ivd = ivd_field && ivd_field->values.size() == 1 ? ivd_field->values[0] : 0;
  if (static_cast<int64_t>(slice_sizes.size()) != x.rank() || ivd < 0 || ivd > idx.rank() ||
      !InRange(offset_dims, result_rank)) {
    return std::nullopt;
  }
  Dims batch;
  for (int64_t d = 0; d < idx.rank(); ++d) {
    if (d != ivd) batch.push_back(idx.dim(d));
  }
  Dims offsets;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!Contains(collapsed, d) && !Contains(obatch, d)) offsets.push_back(slice_sizes[d]);
  }
  if (static_cast<int64_t>(batch.size() + offsets.size()) != result_rank ||
      offsets.size() != offset_dims.size()) {
    return std::nullopt;
  }
  Dims dims;
  size_t b = 0, o = 0;
  for (int64_t d = 0; d < result_rank; ++d) {
    dims.push_back(Contains(offset_dims, d) ? offsets[o++] : batch[b++]);
  }
  return dims;
}

// convolution / dynamic_conv with known padding rows [lo, hi].
std::optional<Dims> ConvolutionShape(const Op& op, const Dims& padding) {
  const Type& lhs = op.operand(0)->type();
  const Type& rhs = op.operand(1)->type();
  const ir::Attribute* a = op.attr("dimension_numbers");
  const auto* dn = a ? a->get_if<ir::ConvDimensionNumbers>() : nullptr;
  if (!dn || lhs.is_dynamic() || rhs.is_dynamic()) return std::nullopt;
  const size_t n = dn->input_spatial_dimensions.size();
  if (dn->kernel_spatial_dimensions.size() != n || dn->output_spatial_dimensions.size() != n ||
      padding.size() != 2 * n || !InRange(dn->input_spatial_dimensions, lhs.rank()) ||
      !InRange(dn->kernel_spatial_dimensions, rhs.rank()) ||
      !InRange({dn->input_batch_dimension}, lhs.rank()) ||
      !InRange({dn->kernel_output_feature_dimension}, rhs.rank()) ||
      !InRange(dn->output_spatial_dimensions, lhs.rank()) ||
      !InRange({dn->output_batch_dimension, dn->output_feature_dimension}, lhs.rank())) {
    return std::nullopt;
  }
  auto list = [&](const char* name) {
    auto v = op.GetI64Array(name);
    return v && v->size() == n ? *v : Dims(n, 1);
  };
  const Dims strides = list("window_strides"), lhs_dil = list("lhs_dilation"),
             rhs_dil = list("rhs_dilation");
  const int64_t batch_groups = op.GetInt("batch_group_count").value_or(1);
  if (batch_groups <= 0) return std::nullopt;
  Dims dims(static_cast<size_t>(lhs.rank()), kDyn);
  dims[dn->output_batch_dimension] = lhs.dim(dn->input_batch_dimension) / batch_groups;
  dims[dn->output_feature_dimension] = rhs.dim(dn->kernel_output_feature_dimension);
  for (size_t i = 0; i < n; ++i) {
    const int64_t in = lhs.dim(dn->input_spatial_dimensions[i]);
    const int64_t win = rhs.dim(dn->kernel_spatial_dimensions[i]);
    if (strides[i] <= 0 || lhs_dil[i] <= 0 || rhs_dil[i] <= 0) return std::nullopt;
    const Wide dilated_in = in == 0 ? 0 : Wide(in - 1) * lhs_dil[i] + 1;
    const Wide padded = Wide(padding[2 * i]) + dilated_in + padding[2 * i + 1];
    const Wide dilated_win = win == 0 ? 0 : Wide(win - 1) * rhs_dil[i] + 1;
    const Wide size = padded <= 0 || dilated_win > padded ? 0 : (padded - dilated_win) / strides[i] + 1;
    if (size > ir::kMaxElements) return std::nullopt;
    dims[dn->output_spatial_dimensions[i]] = static_cast<int64_t>(size);
  }
  return dims;
}

// reduce_window / select_and_scatter's windows over `x` (spec: num_windows
// per dimension).
std::optional<Dims> WindowShape(const Op& op, const Type& x) {
  const int64_t rank = x.rank();
  auto list = [&](const char* name, int64_t fill) -> std::optional<Dims> {
    auto v = op.GetI64Array(name);
    if (!v) return Dims(static_cast<size_t>(rank), fill);
    if (static_cast<int64_t>(v->size()) != rank) return std::nullopt;
    return *v;
  };
  const auto window = op.GetI64Array("window_dimensions");
  const auto strides = list("window_strides", 1), base = list("base_dilations", 1),
             dil = list("window_dilations", 1);
  if (!window || static_cast<int64_t>(window->size()) != rank || !strides || !base || !dil ||
      x.is_dynamic()) {
    return std::nullopt;
  }
  Dims padding(static_cast<size_t>(2 * rank), 0);
  if (const ir::Attribute* a = op.attr("padding")) {
    const auto* d = a->get_if<ir::DenseElementsAttr>();
    if (!d) return std::nullopt;
    auto literal = ir::DenseElementsToLiteral(*d);
    if (!literal.ok() || literal->num_elements() != 2 * rank || !ir::IsInteger(literal->dtype())) {
      return std::nullopt;
    }
    for (int64_t k = 0; k < 2 * rank; ++k) padding[k] = literal->GetInt(k);
  }
  Dims dims;
  for (int64_t i = 0; i < rank; ++i) {
    if ((*strides)[i] <= 0 || (*base)[i] <= 0 || (*dil)[i] <= 0 || (*window)[i] < 0) {
      return std::nullopt;
    }
    const int64_t in = x.dim(i);
    const Wide dilated_in = in == 0 ? 0 : Wide(in - 1) * (*base)[i] + 1;
    const Wide padded = Wide(padding[2 * i]) + dilated_in + padding[2 * i + 1];
    const int64_t w = (*window)[i];
    const Wide dilated_window = w == 0 ? 0 : Wide(w - 1) * (*dil)[i] + 1;
    const Wide size =
        padded <= 0 || dilated_window > padded ? 0 : (padded - dilated_window) / (*strides)[i] + 1;
    if (size > ir::kMaxElements) return std::nullopt;
    dims.push_back(static_cast<int64_t>(size));
  }
  return dims;
}

// The attributes of the static form of a dynamic op, and the static op.
std::unique_ptr<Op> StaticForm(const Op& op, OpCode code, std::span<Value* const> operands,
                               ir::AttributeList attrs) {
  const std::vector<Type> types = op.result_types();
  std::string name = op.result_groups().empty() ? std::string() : op.result_groups()[0].name;
  auto out = ir::CreateOp(code, op.loc(), operands, types, std::move(attrs), std::move(name));
  return out;
}


std::string_view CustomCallTarget(const Op& op) {
  const ir::Attribute* target = op.attr("call_target_name");
  const auto* name = target ? target->get_if<ir::StringAttr>() : nullptr;
  return name ? std::string_view(name->value) : std::string_view();
}

// The `k` of jax's dynamic top-k calls: a scalar integer operand that is a
// constant once the argument shapes are known.
std::optional<int64_t> ScalarValue(const Value* v) {
  std::optional<Dims> k = IntValues(v);
  if (!k || k->size() != 1 || (*k)[0] < 0) return std::nullopt;
  return (*k)[0];
}

// Result `i`'s dimensions for the dynamic custom calls jax.export writes
// when a size depends on a symbolic dimension (StableHLO's "experimental
// dynamic ops", stablehlo/dialect/ExperimentalOps.h):
//   @stablehlo.dynamic_top_k(%operand, %k) -> (values, indices): the
//     operand's shape with its last dimension k;
//   @stablehlo.dynamic_approx_top_k(%inputs..., %inits..., %k) -> (N
//     results): the inputs' shape with reduction_dim k (aggregate_to_topk;
//     jax gives the shapes as indices_of_shape_operands too);
//   @stablehlo.dynamic_rng_bit_generator(%state, %shape) -> (state, bits):
//     the state's type, then the shape operand's values.
std::optional<Dims> DynamicCustomCallDims(const Op& op, size_t i) {
  const std::string_view target = CustomCallTarget(op);
  if (target == "stablehlo.dynamic_top_k") {
    if (op.num_operands() != 2 || op.num_results() != 2 || i >= 2) return std::nullopt;
    const Type& x = op.operand(0)->type();
    std::optional<int64_t> k = ScalarValue(op.operand(1));
    if (!k || !x.is_tensor() || x.is_dynamic() || x.rank() == 0) return std::nullopt;
    Dims dims = x.dims();
    dims.back() = *k;
    return dims;
  }
  if (target == "stablehlo.dynamic_approx_top_k") {
    const size_t n = op.num_results();
    if (n == 0 || op.num_operands() < 2 * n + 1 || i >= n) return std::nullopt;
    const Type& x = op.operand(i)->type();
    std::optional<int64_t> k = ScalarValue(op.operand(2 * n));
    const ir::Attribute* cfg = op.attr("mhlo.backend_config");
    const auto* dict = cfg ? cfg->get_if<ir::DictionaryAttr>() : nullptr;
    std::optional<int64_t> dim;
    if (dict) {
      for (const auto& e : dict->entries) {
        if (e.name == "reduction_dim") {
          if (const auto* v = e.value.get_if<ir::IntegerAttr>()) dim = v->value;
        }
      }
    }
    if (!k || !dim || !x.is_tensor() || x.is_dynamic()) return std::nullopt;
    if (*dim < 0) *dim += x.rank();
    if (*dim < 0 || *dim >= x.rank()) return std::nullopt;
    Dims dims = x.dims();
    dims[static_cast<size_t>(*dim)] = *k;
    return dims;
  }
  if (target == "stablehlo.dynamic_rng_bit_generator") {
    if (op.num_operands() != 2 || op.num_results() != 2) return std::nullopt;
    if (i == 0) {
      const Type& state = op.operand(0)->type();
      if (!state.is_tensor() || state.is_dynamic()) return std::nullopt;
      return state.dims();
    }
    return IntValues(op.operand(1));
  }
  return std::nullopt;
}

// jax's approx_top_k as XLA computes it on CPU (its exact fallback), for
// `custom_call @ApproxTopK` and a refined `@stablehlo.dynamic_approx_top_k`
// (operands: N inputs, N initial values, [k], [shapes]; called_computations
// = [@comparator] of 2N scalars; results of static type): a stable sort of
// the inputs together along reduction_dim by the comparator's body, then
// each result's size sliced off the front. The ops, in order; the last N
// ones' results replace the call's.
StatusOr<std::vector<std::unique_ptr<Op>>> BuildApproxTopK(const ir::Module& module, const Op& op) {
  const std::string where = "'stablehlo.custom_call' at " + op.loc().ToString() + ": @" +
                            std::string(CustomCallTarget(op)) + " ";
  const size_t n = op.num_results();
  const ir::Attribute* cc = op.attr("called_computations");
  const auto* list = cc ? cc->get_if<ir::ArrayAttr>() : nullptr;
  const auto* ref = list && list->elements.size() == 1 ? list->elements[0].get_if<ir::SymbolRefAttr>() : nullptr;
  const ir::Function* cmp = ref ? module.FindFunction(ref->name) : nullptr;
  if (!cmp || !cmp->entry() || cmp->entry()->num_args() != 2 * n) {
    return InvalidArgument(where + "needs called_computations = [@comparator], a function of two scalars per input");
  }
  if (n == 0 || op.num_operands() < 2 * n) {
    return InvalidArgument(where + "takes N inputs and N initial values for its N results");
  }
  const Type& x = op.operand(0)->type();
  for (size_t r = 0; r < n; ++r) {
    const Type& in = op.operand(r)->type();
    const Type& out = op.result(r)->type();
    if (!in.is_tensor() || !out.is_tensor() || in.is_dynamic() || out.is_dynamic() || in.rank() != x.rank() ||
        out.rank() != x.rank() || in.dims() != x.dims() || out.dtype() != in.dtype()) {
      return InvalidArgument(where + "needs static inputs of one shape and results of their element types, got " +
                             in.ToString() + " -> " + out.ToString());
    }
  }
  int64_t dim = -1;
  const ir::Attribute* cfg = op.attr("mhlo.backend_config");
  if (const auto* dict = cfg ? cfg->get_if<ir::DictionaryAttr>() : nullptr) {
    for (const auto& e : dict->entries) {
      if (e.name == "reduction_dim") {
        if (const auto* v = e.value.get_if<ir::IntegerAttr>()) dim = v->value < 0 ? v->value + x.rank() : v->value;
      }
    }
  }
  if (dim < 0 || dim >= x.rank()) return InvalidArgument(where + "has no valid reduction_dim in mhlo.backend_config");
  for (size_t r = 0; r < n; ++r) {
    const Type& out = op.result(r)->type();
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d != dim ? out.dim(d) != x.dim(d) : out.dim(d) > x.dim(d)) {
        return InvalidArgument(where + "result " + out.ToString() + " is not the input " + x.ToString() +
                               " cut along reduction_dim " + std::to_string(dim));
      }
    }
  }
  std::vector<std::unique_ptr<Op>> ops;
  std::vector<Value*> inputs;
  std::vector<Type> types;
  for (size_t r = 0; r < n; ++r) {
    inputs.push_back(op.operand(r));
    types.push_back(op.operand(r)->type());
  }
  ir::AttributeList sort_attrs;
  sort_attrs.Set("dimension", ir::IntegerAttr{dim, ir::DType::kS64});
  sort_attrs.Set("is_stable", true);
  auto sort = ir::CreateOp(OpCode::kSort, op.loc(), inputs, types, std::move(sort_attrs));
  ir::Block& block = sort->add_region().add_block();
  ir::ValueMap mapping;
  for (size_t a = 0; a < cmp->entry()->num_args(); ++a) {
    mapping[cmp->entry()->arg(a)] = block.add_arg(cmp->entry()->arg(a)->type());
  }
  for (const auto& inner : cmp->entry()->ops()) {
    std::unique_ptr<Op> copy = ir::CloneOp(*inner, mapping);
    if (copy->code() == OpCode::kFuncReturn) {
      std::vector<Value*> values(copy->operands().begin(), copy->operands().end());
      copy = ir::CreateOp(OpCode::kReturn, copy->loc(), values, {}, ir::AttributeList());
    }
    block.add_op(std::move(copy));
  }
  Op* sorted = sort.get();
  ops.push_back(std::move(sort));
  for (size_t r = 0; r < n; ++r) {
    const Type& out = op.result(r)->type();
    ir::AttributeList attrs;
    std::vector<int64_t> start(static_cast<size_t>(out.rank()), 0), strides(static_cast<size_t>(out.rank()), 1);
    attrs.Set("start_indices", internal::I64Array(start));
    attrs.Set("limit_indices", internal::I64Array(out.dims()));
    attrs.Set("strides", internal::I64Array(strides));
    Value* v = sorted->result(r);
    ops.push_back(ir::CreateOp(OpCode::kSlice, op.loc(), std::span<Value* const>(&v, 1),
                               std::span<const Type>(&out, 1), std::move(attrs)));
  }
  return ops;
}

// Replaces every `custom_call @ApproxTopK` of `region` (nested regions too).
Status LowerApproxTopKIn(const ir::Module& module, ir::Region& region, ir::ValueMap& remap,
                         std::vector<std::unique_ptr<Op>>& dead) {
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    ir::Block& block = region.block(b);
    std::vector<std::unique_ptr<Op>> ops = block.TakeOps();
    std::vector<std::unique_ptr<Op>> out;
    Status status = Status::Ok();
    for (auto& op : ops) {
      if (!status.ok()) {
        out.push_back(std::move(op));
        continue;
      }
      for (size_t r = 0; r < op->num_regions(); ++r) {
        if (Status s = LowerApproxTopKIn(module, op->region(r), remap, dead); !s.ok()) status = s;
      }
      if (op->code() != OpCode::kCustomCall || CustomCallTarget(*op) != "ApproxTopK") {
        out.push_back(std::move(op));
        continue;
      }
      auto built = BuildApproxTopK(module, *op);
      if (!built.ok()) {
        status = built.status();
        out.push_back(std::move(op));
        continue;
      }
      const size_t n = op->num_results();
      for (size_t i = 0; i < built->size(); ++i) {
        Op* added = (*built)[i].get();
        added->set_parent_block(&block);
        if (i + n >= built->size()) remap[op->result(i + n - built->size())] = added->result(0);
        out.push_back(std::move((*built)[i]));
      }
      op->set_parent_block(nullptr);
      dead.push_back(std::move(op));
    }
    block.SetOps(std::move(out));
    JITD_RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

bool IsShapeArithmetic(OpCode code) {
  if (ir::IsElementwiseUnary(code) || ir::IsElementwiseBinary(code)) return true;
  switch (code) {
    case OpCode::kReshape:
    case OpCode::kBroadcastInDim:
    case OpCode::kConcatenate:
    case OpCode::kSlice:
    case OpCode::kCompare:
    case OpCode::kSelect:
    case OpCode::kClamp:
    case OpCode::kTranspose:
    case OpCode::kReduce:
      return true;
    default:
      return false;
  }
}

class Refiner {
 public:
  explicit Refiner(ir::Module& module) : module_(module) {}

  Status RefineFunction(ir::Function& fn) {
    JITD_RETURN_IF_ERROR(RefineRegion(fn.body()));
    const Op* ret = fn.entry() ? fn.entry()->terminator() : nullptr;
    if (!ret || ret->code() != OpCode::kFuncReturn ||
        ret->num_operands() != fn.result_types().size()) {
      return InvalidArgument("shape refinement: @" + fn.name() +
                             " does not end with a func.return of its results");
    }
    for (size_t i = 0; i < ret->num_operands(); ++i) {
      fn.result_types()[i] = ret->operand(i)->type();
    }
    map_.clear();
    graveyard_.clear();
    return Status::Ok();
  }

 private:
  Status RefineRegion(ir::Region& region) {
    for (size_t b = 0; b < region.num_blocks(); ++b) {
      ir::Block& block = region.block(b);
      for (size_t i = 0; i < block.num_args(); ++i) {
        if (block.arg(i)->type().is_dynamic()) {
          return InvalidArgument("shape refinement: " + DescribeValue(block.arg(i)) +
                                 " of a region of '" +
                                 std::string(region.parent_op() ? region.parent_op()->name()
                                                                : std::string_view("func.func")) +
                                 "' still has the dynamic type " + block.arg(i)->type().ToString());
        }
      }
      std::vector<std::unique_ptr<Op>> ops = block.TakeOps();
      std::vector<std::unique_ptr<Op>> out;
      out.reserve(ops.size());
      Status status = Status::Ok();
      size_t k = 0;
      for (; k < ops.size(); ++k) {
        std::unique_ptr<Op>& op_ptr = ops[k];
        Op& op = *op_ptr;
        for (size_t j = 0; j < op.num_operands(); ++j) {
          Value* v = op.operand(j);
          for (auto it = map_.find(v); it != map_.end(); it = map_.find(v)) v = it->second;
          op.set_operand(j, v);
        }
        block_ = &block;
        out_ = &out;
        std::vector<Value*> replacements;
        bool erase = false;
        status = RefineOp(op, replacements, erase);
        if (!status.ok()) break;  // this op and the rest go back below
        if (replacements.empty() && !erase) {
          out.push_back(std::move(op_ptr));
          continue;
        }
        for (size_t r = 0; r < replacements.size() && r < op.num_results(); ++r) {
          if (replacements[r] != op.result(r)) map_[op.result(r)] = replacements[r];
        }
        op.set_parent_block(nullptr);
        graveyard_.push_back(std::move(op_ptr));
      }
      for (; k < ops.size(); ++k) out.push_back(std::move(ops[k]));
      block.SetOps(std::move(out));
      JITD_RETURN_IF_ERROR(status);
    }
    return Status::Ok();
  }

  Op* Insert(std::unique_ptr<Op> op) {
    op->set_parent_block(block_);
    out_->push_back(std::move(op));
    return out_->back().get();
  }

  // Refines `op`: its regions, its result types, then folds it or swaps it
  // for its static form (`replacements` for its results), or erases it.
  Status RefineOp(Op& op, std::vector<Value*>& replacements, bool& erase) {
    JITD_RETURN_IF_ERROR(RefineRegions(op));
    JITD_RETURN_IF_ERROR(InferResults(op));
    for (size_t i = 0; i < op.num_results(); ++i) {
      if (op.result(i)->type().is_dynamic()) {
        return InvalidArgument("shape refinement: " + DescribeValue(op.result(i)) +
                               " is still dynamic (" + op.result(i)->type().ToString() +
                               ") after refinement: its shape does not follow from the "
                               "argument shapes and constants");
      }
    }
    if (op.code() == OpCode::kCustomCall) {
      JITD_ASSIGN_OR_RETURN(bool replaced, StaticCustomCall(op, replacements));
      if (replaced) return Status::Ok();
      return CheckShapeAssertion(op, erase);
    }
    if (op.code() == OpCode::kGetDimensionSize) {
      const auto dim = op.GetInt("dimension");
      const Type& x = op.operand(0)->type();
      const Type& r = op.result(0)->type();
      if (dim && *dim >= 0 && *dim < x.rank() && r.is_tensor() && r.rank() == 0 &&
          ir::IsInteger(r.dtype())) {
        auto literal = ir::Literal::Create(r);
        if (literal.ok()) {
          literal->SetInt(0, x.dim(*dim));
          replacements.push_back(
              Insert(internal::MakeConstant(ir::MakeDenseElements(*literal), op.loc()))->result(0));
        }
      }
      return Status::Ok();
    }
    if (std::unique_ptr<Op> s = MakeStatic(op)) {
      // The static form may fold at once (a broadcast of a shape constant).
      replacements = Fold(*s);
      if (replacements.empty()) {
        Op* inserted = Insert(std::move(s));
        for (size_t i = 0; i < inserted->num_results(); ++i) replacements.push_back(inserted->result(i));
      }
      return Status::Ok();
    }
    replacements = Fold(op);
    return Status::Ok();
  }

  Status RefineRegions(Op& op) {
    if (op.num_regions() == 0) return Status::Ok();
    auto set_args = [&](ir::Region& region, std::span<Value* const> values) -> Status {
      if (region.num_blocks() != 1 || region.block(0).num_args() != values.size()) {
        return OpError(op, "has a region whose arguments do not match its operands");
      }
      for (size_t i = 0; i < values.size(); ++i) region.block(0).arg(i)->set_type(values[i]->type());
      return Status::Ok();
    };
    if (op.code() == OpCode::kWhile) {
      if (op.num_regions() != 2) return OpError(op, "requires 2 regions");
      JITD_RETURN_IF_ERROR(set_args(op.region(0), op.operands()));
      JITD_RETURN_IF_ERROR(set_args(op.region(1), op.operands()));
    }
    for (size_t r = 0; r < op.num_regions(); ++r) JITD_RETURN_IF_ERROR(RefineRegion(op.region(r)));
    if (op.code() == OpCode::kWhile) {
      // Shape polymorphism keeps loop-carried shapes fixed: the body must
      // return what it was given.
      const Op* ret = op.region(1).block(0).terminator();
      for (size_t i = 0; ret && i < ret->num_operands() && i < op.num_operands(); ++i) {
        if (ret->operand(i)->type() != op.operand(i)->type()) {
          return OpError(op, "body returns " + ret->operand(i)->type().ToString() +
                                 " for loop value #" + std::to_string(i) + " of type " +
                                 op.operand(i)->type().ToString() +
                                 " (a loop-carried shape must not change)");
        }
      }
    }
    return Status::Ok();
  }

  // Sets each dynamic result's type from the operands (and constant shape
  // operands); a static size the op declares must agree.
  Status InferResults(Op& op) {
    bool dynamic = false;
    for (size_t i = 0; i < op.num_results(); ++i) dynamic |= op.result(i)->type().is_dynamic();
    if (!dynamic) return Status::Ok();
    for (size_t i = 0; i < op.num_results(); ++i) {
      Value* result = op.result(i);
      const Type& declared = result->type();
      std::optional<Type> refined = InferType(op, i);
      if (!refined || !declared.is_dynamic()) continue;
      if (refined->is_tensor() && declared.is_tensor()) {
        if (refined->rank() != declared.rank()) continue;  // the verifier reports it
        Dims dims = declared.dims();
        for (int64_t d = 0; d < declared.rank(); ++d) {
          const int64_t want = refined->dim(d);
          if (want == kDyn) continue;
          if (dims[d] != kDyn && dims[d] != want) {
            return InvalidArgument("shape refinement: " + DescribeValue(result) + " is declared " +
                                   declared.ToString() + " but its operands give dimension " +
                                   std::to_string(d) + " size " + std::to_string(want));
          }
          if (want < 0) {
            return InvalidArgument("shape refinement: " + DescribeValue(result) +
                                   " would have dimension " + std::to_string(d) +
                                   " of negative size " + std::to_string(want));
          }
          if (dims[d] == kDyn && d < static_cast<int64_t>(declared.bounds().size()) &&
              declared.bounds()[d] != kDyn && want > declared.bounds()[d]) {
            return InvalidArgument("shape refinement: " + DescribeValue(result) + " gets size " +
                                   std::to_string(want) + " in dimension " + std::to_string(d) +
                                   ", above its bound " + std::to_string(declared.bounds()[d]));
          }
          dims[d] = want;
        }
        // The limits of type.h hold for refined shapes as for parsed ones
        // (a shape operand may ask for anything).
        std::vector<int64_t> known;
        for (int64_t d : dims) {
          if (d != kDyn) known.push_back(d);
        }
        if (Status limits = Type::CheckedTensor(declared.dtype(), known).status(); !limits.ok()) {
          return InvalidArgument("shape refinement: " + DescribeValue(result) + " would have the shape " +
                                 DimsText(dims) + ": " + limits.message());
        }
        Type t = declared.WithDims(dims);
        // Still dynamic somewhere: keep the bounds with the rest.
        if (t.is_dynamic() && !declared.bounds().empty()) {
          auto with_bounds = Type::CheckedDynamicTensor(declared.dtype(), dims, declared.bounds());
          if (with_bounds.ok()) {
            t = declared.is_quantized() ? with_bounds->WithQuant(*declared.quant()) : *with_bounds;
          }
        }
        result->set_type(std::move(t));
      } else if (refined->is_tuple() && declared.is_tuple() && !refined->is_dynamic()) {
        result->set_type(*refined);
      }
    }
    return Status::Ok();
  }

  // The type result #i follows from, or nullopt.
  std::optional<Type> InferType(const Op& op, size_t i) {
    const Type& declared = op.result(i)->type();
    auto with = [&](std::optional<Dims> dims) -> std::optional<Type> {
      if (!dims || !declared.is_tensor()) return std::nullopt;
      return declared.WithDims(std::move(*dims));
    };
    auto operand_type = [&](size_t k) -> std::optional<Type> {
      if (k >= op.num_operands()) return std::nullopt;
      return op.operand(k)->type();
    };
    const OpCode code = op.code();
    if (ir::IsElementwiseUnary(code) || ir::IsElementwiseBinary(code)) {
      return with(ElementwiseShape(op, declared.rank()));
    }
    switch (code) {
      case OpCode::kSelect:
      case OpCode::kClamp:
      case OpCode::kCompare:
      case OpCode::kComplex:
      case OpCode::kBitcastConvert:
      case OpCode::kReducePrecision:
      case OpCode::kMap:
      case OpCode::kUniformQuantize:
      case OpCode::kUniformDequantize:
        return with(ElementwiseShape(op, declared.rank()));
      case OpCode::kBroadcastInDim:
        return with(BroadcastInDimShape(op, declared.dims()));
      case OpCode::kDynamicBroadcastInDim:
      case OpCode::kDynamicReshape:
      case OpCode::kDynamicIota: {
        const size_t shape_operand = code == OpCode::kDynamicIota ? 0 : 1;
        if (op.num_operands() <= shape_operand) return std::nullopt;
        std::optional<Dims> shape = IntValues(op.operand(shape_operand));
        if (!shape) {
          if (code == OpCode::kDynamicBroadcastInDim) {
            return with(BroadcastInDimShape(op, declared.dims()));
          }
          if (code == OpCode::kDynamicReshape) return with(ReshapeShape(op, declared.dims()));
          return std::nullopt;
        }
        return with(shape);
      }
      case OpCode::kReshape:
        return with(ReshapeShape(op, declared.dims()));
      case OpCode::kTranspose:
        return with(TransposeShape(op));
      case OpCode::kDotGeneral:
        return with(DotGeneralShape(op));
      case OpCode::kDot:
        return with(DotShape(op));
      case OpCode::kReduce:
        return with(ReduceShape(op, i));
      case OpCode::kConcatenate:
        return with(ConcatenateShape(op));
      case OpCode::kSlice: {
        auto start = op.GetI64Array("start_indices"), limit = op.GetI64Array("limit_indices"),
             strides = op.GetI64Array("strides");
        if (!start || !limit) return std::nullopt;
        return with(SliceShape(*start, *limit, strides ? *strides : Dims(start->size(), 1),
                               op.operand(0)->type().rank()));
      }
      case OpCode::kRealDynamicSlice: {
        if (op.num_operands() != 4) return std::nullopt;
        auto start = IntValues(op.operand(1)), limit = IntValues(op.operand(2)),
             strides = IntValues(op.operand(3));
        if (!start || !limit || !strides) return std::nullopt;
        return with(SliceShape(*start, *limit, *strides, op.operand(0)->type().rank()));
      }
      case OpCode::kPad: {
        auto lo = op.GetI64Array("edge_padding_low"), hi = op.GetI64Array("edge_padding_high"),
             in = op.GetI64Array("interior_padding");
        if (!lo || !hi) return std::nullopt;
        return with(PadShape(op.operand(0)->type(), *lo, *hi, in ? *in : Dims(lo->size(), 0)));
      }
      case OpCode::kDynamicPad: {
        if (op.num_operands() != 5) return std::nullopt;
        auto lo = IntValues(op.operand(2)), hi = IntValues(op.operand(3)),
             in = IntValues(op.operand(4));
        if (!lo || !hi || !in) return std::nullopt;
        return with(PadShape(op.operand(0)->type(), *lo, *hi, *in));
      }
      case OpCode::kDynamicSlice: {
        auto sizes = op.GetI64Array("slice_sizes");
        return sizes ? with(*sizes) : std::nullopt;
      }
      case OpCode::kGather: {
        auto sizes = op.GetI64Array("slice_sizes");
        if (!sizes || op.num_operands() != 2) return std::nullopt;
        return with(GatherShape(op, *sizes, declared.rank()));
      }
      case OpCode::kDynamicGather: {
        if (op.num_operands() != 3) return std::nullopt;
        auto sizes = IntValues(op.operand(2));
        if (!sizes) return std::nullopt;
        return with(GatherShape(op, *sizes, declared.rank()));
      }
      case OpCode::kConvolution: {
        const ir::Attribute* a = op.attr("padding");
        const auto* d = a ? a->get_if<ir::DenseElementsAttr>() : nullptr;
        Dims padding;
        if (d) {
          auto literal = ir::DenseElementsToLiteral(*d);
          if (!literal.ok() || !ir::IsInteger(literal->dtype())) return std::nullopt;
          for (int64_t k = 0; k < literal->num_elements(); ++k) padding.push_back(literal->GetInt(k));
        } else {
          const ir::Attribute* dn = op.attr("dimension_numbers");
          const auto* c = dn ? dn->get_if<ir::ConvDimensionNumbers>() : nullptr;
          if (!c) return std::nullopt;
          padding.assign(2 * c->input_spatial_dimensions.size(), 0);
        }
        return with(ConvolutionShape(op, padding));
      }
      case OpCode::kDynamicConv: {
        if (op.num_operands() != 3) return std::nullopt;
        auto padding = IntValues(op.operand(2));
        if (!padding) return std::nullopt;
        return with(ConvolutionShape(op, *padding));
      }
      case OpCode::kFft: {
        const ir::EnumAttr* type = op.GetEnum("fft_type");
        const auto length = op.GetI64Array("fft_length");
        std::optional<Type> x = operand_type(0);
        if (!type || !length || !x || !x->is_tensor() || x->is_dynamic() ||
            static_cast<int64_t>(length->size()) > x->rank() || length->empty()) {
          return std::nullopt;
        }
        Dims dims = x->dims();
        if (type->value == "RFFT") {
          dims.back() = length->back() / 2 + 1;
        } else if (type->value == "IRFFT") {
          dims.back() = length->back();
        }
        return with(dims);
      }
      case OpCode::kBatchNormInference:
      case OpCode::kBatchNormTraining:
      case OpCode::kBatchNormGrad: {
        // The normalized (or gradient) operand has the operand's shape; the
        // statistics and scale / offset gradients are per feature.
        std::optional<Type> x = operand_type(0);
        const auto feature = op.GetInt("feature_index");
        if (!x || !x->is_tensor() || !feature || *feature < 0 || *feature >= x->rank()) {
          return std::nullopt;
        }
        if (i == 0) return with(x->dims());
        return with(Dims{x->dim(*feature)});
      }
      case OpCode::kReduceWindow: {
        if (i >= op.num_operands()) return std::nullopt;
        return with(WindowShape(op, op.operand(i)->type()));
      }
      case OpCode::kCustomCall: {
        // A shape-polymorphic export passes each result's shape as an
        // operand (jax's indices_of_shape_operands).
        if (auto shapes = eval::ShapeOperandIndices(op); shapes.ok() && i < shapes->size()) {
          return with(IntValues(op.operand(static_cast<size_t>((*shapes)[i]))));
        }
        if (std::optional<Dims> dims = DynamicCustomCallDims(op, i)) return with(dims);
        // jax.export's @Sharding annotation: the value itself.
        const ir::Attribute* target = op.attr("call_target_name");
        const auto* name = target ? target->get_if<ir::StringAttr>() : nullptr;
        if (!name || name->value != "Sharding" || op.num_operands() != 1 || i != 0) {
          return std::nullopt;
        }
        return operand_type(0);
      }
      case OpCode::kWhile:
      case OpCode::kOptimizationBarrier:
        return operand_type(i);
      case OpCode::kSort:
      case OpCode::kScatter:
      case OpCode::kReverse:
      case OpCode::kDynamicUpdateSlice:
      case OpCode::kSelectAndScatter:
      case OpCode::kCholesky:
      case OpCode::kAllReduce:
      case OpCode::kCollectivePermute:
      case OpCode::kCollectiveBroadcast:
      case OpCode::kCrossReplicaSum: {
        std::optional<Type> t = operand_type(i);
        if (!t || !t->is_tensor()) return std::nullopt;
        return with(t->dims());
      }
      case OpCode::kTriangularSolve: {
        std::optional<Type> t = operand_type(1);
        if (!t || !t->is_tensor()) return std::nullopt;
        return with(t->dims());
      }
      case OpCode::kIf:
      case OpCode::kCase: {
        // Every branch returns the same types; take them from the first
        // static one.
        for (size_t r = 0; r < op.num_regions(); ++r) {
          const ir::Region& region = op.region(r);
          if (region.num_blocks() != 1) continue;
          const Op* ret = region.block(0).terminator();
          if (!ret || i >= ret->num_operands()) continue;
          const Type& t = ret->operand(i)->type();
          if (!t.is_dynamic()) return t;
        }
        return std::nullopt;
      }
      case OpCode::kTuple: {
        std::vector<Type> elements;
        for (const Value* v : op.operands()) elements.push_back(v->type());
        return Type::Tuple(std::move(elements));
      }
      case OpCode::kGetTupleElement: {
        const auto index = op.GetInt("index");
        std::optional<Type> t = operand_type(0);
        if (!index || !t || !t->is_tuple() || *index < 0 ||
            *index >= static_cast<int64_t>(t->elements().size())) {
          return std::nullopt;
        }
        return t->elements()[*index];
      }
      default:
        return std::nullopt;
    }
  }

  // The static forms of jax's dynamic custom calls once their results are
  // static (DynamicCustomCallDims): dynamic_top_k -> chlo.top_k,
  // dynamic_rng_bit_generator -> rng_bit_generator, dynamic_approx_top_k ->
  // sort by its comparator along reduction_dim, then the first k (XLA's
  // exact fallback, what approx_top_k computes on CPU). Inserts them and
  // sets `replacements`; false when `op` is none of these.
  StatusOr<bool> StaticCustomCall(const Op& op, std::vector<Value*>& replacements) {
    const std::string_view target = CustomCallTarget(op);
    auto insert = [&](std::unique_ptr<Op> s) {
      Op* inserted = Insert(std::move(s));
      for (size_t r = 0; r < inserted->num_results(); ++r) replacements.push_back(inserted->result(r));
      return true;
    };
    if (target == "stablehlo.dynamic_top_k") {
      if (op.num_operands() != 2 || op.num_results() != 2) {
        return OpError(op, "@stablehlo.dynamic_top_k takes (operand, k) and returns (values, indices)");
      }
      std::optional<int64_t> k = ScalarValue(op.operand(1));
      if (!k) return OpError(op, "@stablehlo.dynamic_top_k's k does not fold to a constant for these argument shapes");
      ir::AttributeList attrs;
      attrs.Set("k", ir::IntegerAttr{*k, ir::DType::kS64});
      Value* x = op.operand(0);
      return insert(StaticForm(op, OpCode::kChloTopK, std::span<Value* const>(&x, 1), std::move(attrs)));
    }
    if (target == "stablehlo.dynamic_rng_bit_generator") {
      if (op.num_operands() != 2 || op.num_results() != 2) {
        return OpError(op, "@stablehlo.dynamic_rng_bit_generator takes (state, shape) and returns (state, bits)");
      }
      ir::AttributeList attrs;
      const ir::Attribute* algorithm = op.attr("rng_algorithm");
      if (!algorithm) return OpError(op, "@stablehlo.dynamic_rng_bit_generator needs an rng_algorithm attribute");
      attrs.Set("rng_algorithm", *algorithm);
      Value* state = op.operand(0);
      return insert(StaticForm(op, OpCode::kRngBitGenerator, std::span<Value* const>(&state, 1), std::move(attrs)));
    }
    if (target == "stablehlo.dynamic_approx_top_k") return ApproxTopKAsSort(op, replacements);
    return false;
  }

  StatusOr<bool> ApproxTopKAsSort(const Op& op, std::vector<Value*>& replacements) {
    JITD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Op>> ops, BuildApproxTopK(module_, op));
    const size_t n = op.num_results();
    for (size_t i = 0; i < ops.size(); ++i) {
      Op* inserted = Insert(std::move(ops[i]));
      if (i + n >= ops.size()) replacements.push_back(inserted->result(0));
    }
    return true;
  }

  // The static op for a dynamic op whose shape operands are constants.
  std::unique_ptr<Op> MakeStatic(const Op& op) {
    if (op.num_results() != 1 || op.result(0)->type().is_dynamic()) return nullptr;
    ir::AttributeList attrs;
    auto copy = [&](const char* name) {
      if (const ir::Attribute* a = op.attr(name)) attrs.Set(name, *a);
    };
    switch (op.code()) {
      case OpCode::kDynamicBroadcastInDim: {
        if (!IntValues(op.operand(1))) return nullptr;
        copy("broadcast_dimensions");
        Value* x = op.operand(0);
        return StaticForm(op, OpCode::kBroadcastInDim, std::span<Value* const>(&x, 1), std::move(attrs));
      }
      case OpCode::kDynamicReshape: {
        if (!IntValues(op.operand(1))) return nullptr;
        Value* x = op.operand(0);
        return StaticForm(op, OpCode::kReshape, std::span<Value* const>(&x, 1), std::move(attrs));
      }
      case OpCode::kDynamicIota: {
        if (!IntValues(op.operand(0))) return nullptr;
        copy("iota_dimension");
        return StaticForm(op, OpCode::kIota, {}, std::move(attrs));
      }
      case OpCode::kDynamicPad: {
        auto lo = IntValues(op.operand(2)), hi = IntValues(op.operand(3)),
             in = IntValues(op.operand(4));
        if (!lo || !hi || !in) return nullptr;
        attrs.Set("edge_padding_low", internal::I64Array(*lo));
        attrs.Set("edge_padding_high", internal::I64Array(*hi));
        attrs.Set("interior_padding", internal::I64Array(*in));
        Value* operands[2] = {op.operand(0), op.operand(1)};
        return StaticForm(op, OpCode::kPad, operands, std::move(attrs));
      }
      case OpCode::kRealDynamicSlice: {
        auto start = IntValues(op.operand(1)), limit = IntValues(op.operand(2)),
             strides = IntValues(op.operand(3));
        if (!start || !limit || !strides) return nullptr;
        attrs.Set("start_indices", internal::I64Array(*start));
        attrs.Set("limit_indices", internal::I64Array(*limit));
        attrs.Set("strides", internal::I64Array(*strides));
        Value* x = op.operand(0);
        return StaticForm(op, OpCode::kSlice, std::span<Value* const>(&x, 1), std::move(attrs));
      }
      case OpCode::kDynamicGather: {
        auto sizes = IntValues(op.operand(2));
        if (!sizes) return nullptr;
        copy("dimension_numbers");
        copy("indices_are_sorted");
        attrs.Set("slice_sizes", internal::I64Array(*sizes));
        Value* operands[2] = {op.operand(0), op.operand(1)};
        return StaticForm(op, OpCode::kGather, operands, std::move(attrs));
      }
      case OpCode::kDynamicConv: {
        auto padding = IntValues(op.operand(2));
        const Type& pt = op.operand(2)->type();
        if (!padding || pt.rank() != 2) return nullptr;
        for (const ir::NamedAttribute& a : op.attrs().entries()) attrs.Set(a.name, a.value);
        auto literal = ir::Literal::Create(Type::Tensor(ir::DType::kS64, {pt.dim(0), pt.dim(1)}));
        if (!literal.ok()) return nullptr;
        for (size_t k = 0; k < padding->size(); ++k) literal->SetInt(static_cast<int64_t>(k), (*padding)[k]);
        attrs.Set("padding", ir::MakeDenseElements(*literal));
        Value* operands[2] = {op.operand(0), op.operand(1)};
        return StaticForm(op, OpCode::kConvolution, operands, std::move(attrs));
      }
      default:
        return nullptr;
    }
  }

  // Folds a shape computation: an integer (or i1) op on constants with a
  // small result, evaluated by jit/eval. Inserts the constants; returns
  // them, or nothing.
  std::vector<Value*> Fold(const Op& op) {
    if (!IsShapeArithmetic(op.code()) || op.num_results() == 0 || op.num_regions() > 0) return {};
    int64_t elements = 0;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const Type& t = op.result(i)->type();
      if (!t.is_tensor() || t.is_quantized() ||
          !(ir::IsInteger(t.dtype()) || ir::IsPred(t.dtype()))) {
        return {};
      }
      elements += t.num_elements();
    }
    if (elements > kMaxFoldedElements) return {};
    std::vector<eval::RuntimeValue> operands;
    for (const Value* v : op.operands()) {
      const ir::DenseElementsAttr* attr = internal::ConstantAttr(v);
      if (!attr || attr->type.num_elements() > kMaxFoldedElements) return {};
      auto literal = ir::DenseElementsToLiteral(*attr);
      if (!literal.ok()) return {};
      operands.emplace_back(std::move(*literal));
    }
    auto results = eval::EvaluateDetachedOp(module_, op, std::move(operands));
    if (!results.ok() || results->size() != op.num_results()) return {};
    std::vector<Value*> constants;
    for (size_t i = 0; i < results->size(); ++i) {
      const eval::RuntimeValue& r = (*results)[i];
      if (!r.is_tensor() || r.type() != op.result(i)->type()) return {};
    }
    for (size_t i = 0; i < results->size(); ++i) {
      constants.push_back(
          Insert(internal::MakeConstant(ir::MakeDenseElements((*results)[i].literal()), op.loc()))
              ->result(0));
    }
    return constants;
  }

  // jax.export's `custom_call @shape_assertion(%ok, %dim_values...)
  // {error_message = "..."}`: holds for these shapes (erased) or fails with
  // its message, `{0}`, `{1}`... standing for the dimension values.
  Status CheckShapeAssertion(Op& op, bool& erase) {
    const ir::Attribute* target = op.attr("call_target_name");
    const auto* name = target ? target->get_if<ir::StringAttr>() : nullptr;
    if (!name || name->value != "shape_assertion") return Status::Ok();
    if (op.num_operands() == 0) return OpError(op, "@shape_assertion has no condition operand");
    const ir::DenseElementsAttr* cond = internal::ConstantAttr(op.operand(0));
    auto value = cond ? ir::DenseElementsToLiteral(*cond) : StatusOr<ir::Literal>(InvalidArgument(""));
    if (!value.ok() || value->num_elements() != 1 || !ir::IsPred(value->dtype())) {
      return OpError(op, "@shape_assertion's condition does not fold to a constant for these "
                         "argument shapes");
    }
    if (value->GetPred(0)) {
      erase = true;
      return Status::Ok();
    }
    std::string message = "shape assertion failed";
    if (const ir::Attribute* m = op.attr("error_message")) {
      if (const auto* s = m->get_if<ir::StringAttr>()) message = s->value;
    }
    for (size_t k = 1; k < op.num_operands(); ++k) {
      const std::string hole = "{" + std::to_string(k - 1) + "}";
      std::optional<Dims> v = IntValues(op.operand(k));
      const std::string text = v && v->size() == 1 ? std::to_string((*v)[0]) : "?";
      for (size_t at = message.find(hole); at != std::string::npos;
           at = message.find(hole, at + text.size())) {
        message.replace(at, hole.size(), text);
      }
    }
    return InvalidArgument("shape refinement: " + op.loc().ToString() + ": " + message);
  }

  ir::Module& module_;
  ir::ValueMap map_;
  std::vector<std::unique_ptr<Op>> graveyard_;
  std::vector<std::unique_ptr<Op>>* out_ = nullptr;
  ir::Block* block_ = nullptr;
};

bool HasCalls(const ir::Module& module) {
  bool calls = false;
  for (const auto& fn : module.functions()) {
    ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const Op& op) {
      calls |= op.code() == OpCode::kFuncCall;
    });
  }
  return calls;
}

bool FunctionIsDynamic(const ir::Function& fn) {
  for (const Type& t : fn.arg_types()) {
    if (t.is_dynamic() || !t.bounds().empty()) return true;
  }
  for (const Type& t : fn.result_types()) {
    if (t.is_dynamic() || !t.bounds().empty()) return true;
  }
  bool dynamic = false;
  ir::WalkOps(static_cast<const ir::Region&>(fn.body()), [&](const Op& op) {
    for (size_t i = 0; i < op.num_results(); ++i) dynamic |= op.result(i)->type().is_dynamic();
    for (size_t r = 0; r < op.num_regions(); ++r) {
      const ir::Region& region = op.region(r);
      for (size_t b = 0; b < region.num_blocks(); ++b) {
        for (size_t a = 0; a < region.block(b).num_args(); ++a) {
          dynamic |= region.block(b).arg(a)->type().is_dynamic();
        }
      }
    }
  });
  return dynamic;
}

// Whether `given` may stand for `declared`: same kind and element type,
// same rank, equal static dimensions, dynamic ones within their bounds.
std::string ArgumentMismatch(const Type& declared, const Type& given) {
  if (given.is_dynamic()) return "is not static";
  if (declared.kind() != given.kind()) return "is of another kind";
  if (declared.is_tuple()) return declared == given ? "" : "differs from the declared tuple";
  if (!declared.is_tensor()) return "";
  if (declared.dtype() != given.dtype() || declared.is_quantized() != given.is_quantized() ||
      (declared.is_quantized() && !(*declared.quant() == *given.quant()))) {
    return "has another element type";
  }
  if (declared.rank() != given.rank()) return "has another rank";
  for (int64_t d = 0; d < declared.rank(); ++d) {
    if (declared.dim(d) != kDyn && declared.dim(d) != given.dim(d)) {
      return "differs in static dimension " + std::to_string(d);
    }
    if (d < static_cast<int64_t>(declared.bounds().size()) && declared.bounds()[d] != kDyn &&
        given.dim(d) > declared.bounds()[d]) {
      return "exceeds the bound " + std::to_string(declared.bounds()[d]) + " of dimension " +
             std::to_string(d);
    }
  }
  return "";
}

}  // namespace

bool HasDynamicShapes(const ir::Module& module) {
  for (const auto& fn : module.functions()) {
    if (FunctionIsDynamic(*fn)) return true;
  }
  return false;
}

Status LowerApproxTopK(ir::Module& module) {
  for (const auto& fn : module.functions()) {
    if (!fn->entry()) continue;
    bool any = false;
    ir::WalkOps(std::as_const(fn->body()), [&](const Op& op) {
      any |= op.code() == OpCode::kCustomCall && CustomCallTarget(op) == "ApproxTopK";
    });
    if (!any) continue;  // most programs: nothing to rebuild
    ir::ValueMap remap;
    std::vector<std::unique_ptr<Op>> dead;
    JITD_RETURN_IF_ERROR(LowerApproxTopKIn(module, fn->body(), remap, dead));
    if (!remap.empty()) ir::RemapOperands(fn->body(), remap);
  }
  return Status::Ok();
}

Status RefineShapes(ir::Module& module, std::span<const Type> argument_types) {
  ir::Function* entry = module.EntryFunction();
  if (!entry || !entry->entry()) {
    return InvalidArgument("shape refinement: the module has no entry function with a body");
  }
  if (argument_types.size() != entry->arg_types().size()) {
    return InvalidArgument("shape refinement: @" + entry->name() + " takes " +
                           std::to_string(entry->arg_types().size()) + " arguments, " +
                           std::to_string(argument_types.size()) + " argument types were given");
  }
  for (size_t i = 0; i < argument_types.size(); ++i) {
    const std::string problem = ArgumentMismatch(entry->arg_types()[i], argument_types[i]);
    if (!problem.empty()) {
      return InvalidArgument("shape refinement: argument #" + std::to_string(i) + " of @" +
                             entry->name() + ": the given type " + argument_types[i].ToString() +
                             " " + problem + " (declared " + entry->arg_types()[i].ToString() + ")");
    }
  }
  if (!HasDynamicShapes(module)) {
    for (size_t i = 0; i < argument_types.size(); ++i) {
      if (argument_types[i] != entry->arg_types()[i]) {
        return InvalidArgument("shape refinement: argument #" + std::to_string(i) + " of @" +
                               entry->name() + " is declared " + entry->arg_types()[i].ToString() +
                               ", the given type is " + argument_types[i].ToString());
      }
    }
    return Status::Ok();
  }
  // Callees refine with their call site's types: inline them first.
  if (HasCalls(module)) {
    JITD_RETURN_IF_ERROR(CreateInlinePass()->Run(module));
    entry = module.EntryFunction();
    if (!entry || !entry->entry()) {
      return InvalidArgument("shape refinement: the module has no entry function with a body");
    }
  }
  for (const auto& fn : module.functions()) {
    if (fn.get() != entry && FunctionIsDynamic(*fn)) {
      return InvalidArgument("shape refinement: function @" + fn->name() +
                             " has dynamic types but is not called from @" + entry->name() +
                             " where shapes are known (only the entry function is refined)");
    }
  }
  for (size_t i = 0; i < argument_types.size(); ++i) {
    entry->arg_types()[i] = argument_types[i];
    entry->entry()->arg(i)->set_type(argument_types[i]);
  }
  Refiner refiner(module);
  JITD_RETURN_IF_ERROR(refiner.RefineFunction(*entry));
  for (size_t i = 0; i < entry->result_types().size(); ++i) {
    if (entry->result_types()[i].is_dynamic()) {
      return InvalidArgument("shape refinement: result #" + std::to_string(i) + " of @" +
                             entry->name() + " is still dynamic");
    }
  }
  // Unused static forms and folded operands are left to DCE; the module
  // must verify as a static program now.
  if (Status s = ir::VerifyModule(module); !s.ok()) {
    return Status(s.code(), "shape refinement: the refined program does not verify: " + s.message());
  }
  return Status::Ok();
}

StatusOr<std::vector<Type>> ParseArgumentTypes(std::string_view text) {
  std::vector<Type> types;
  size_t pos = 0;
  auto skip = [&] {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n')) ++pos;
  };
  skip();
  if (pos == text.size()) return types;  // no arguments
  while (true) {
    skip();
    const size_t start = pos;
    const std::string where = "argument type #" + std::to_string(types.size());
    if (text.substr(pos, 7) != "tensor<") {
      return InvalidArgument(where + ": expected 'tensor<', got '" +
                             std::string(text.substr(pos, 20)) + "'");
    }
    pos += 7;
    Dims dims;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      int64_t d = 0;
      auto r = std::from_chars(text.data() + pos, text.data() + text.size(), d);
      if (r.ec != std::errc()) return InvalidArgument(where + ": dimension out of range");
      pos = static_cast<size_t>(r.ptr - text.data());
      if (pos >= text.size() || text[pos] != 'x') {
        return InvalidArgument(where + ": expected 'x' after dimension " + std::to_string(d));
      }
      ++pos;
      dims.push_back(d);
    }
    if (pos < text.size() && text[pos] == '?') {
      return InvalidArgument(where + ": argument types must be static, got '?'");
    }
    size_t close = text.find('>', pos);
    std::string_view element = text.substr(pos, close == std::string_view::npos ? close : close - pos);
    std::optional<ir::DType> dtype;
    if (element.substr(0, 8) == "complex<") {
      auto inner = ir::ParseDTypeName(element.substr(8));
      if (inner && close + 1 < text.size() && text[close + 1] == '>') {
        dtype = ir::ComplexOf(*inner);
        ++close;
      }
    } else {
      dtype = ir::ParseDTypeName(element);
    }
    if (close == std::string_view::npos || !dtype) {
      return InvalidArgument(where + ": unknown element type in '" +
                             std::string(text.substr(start, 40)) + "'");
    }
    pos = close + 1;
    auto type = Type::CheckedTensor(*dtype, std::move(dims));
    if (!type.ok()) return InvalidArgument(where + ": " + type.status().message());
    types.push_back(*type);
    skip();
    if (pos == text.size()) break;
    if (text[pos] != ',' && text[pos] != ';') {
      return InvalidArgument("expected ',' after " + where + ", got '" + std::string(1, text[pos]) + "'");
    }
    ++pos;
  }
  return types;
}

}  // namespace jitd::passes
