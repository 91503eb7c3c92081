#include "devices/cuda/cudnn_plan.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace jitd::devices::cuda {

namespace {

using ir::DType;

constexpr int64_t kConvPlanTag = 0x434f4e31;  // "CON1"
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Status NotPlanned(const std::string& why) { return NotFound("cuDNN does not take this convolution: " + why); }

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

std::vector<int64_t> IntsOr(const ir::Op& op, const char* name, size_t rank, int64_t fill) {
  std::vector<int64_t> v = op.GetI64Array(name).value_or(std::vector<int64_t>{});
  if (v.size() != rank) v.assign(rank, fill);
  return v;
}

int64_t LibTypeSize(LibType t) {
  switch (t) {
    case LibType::kF16:
    case LibType::kBF16: return 2;
    case LibType::kF32: return 4;
    case LibType::kF64:
    case LibType::kC64: return 8;
    case LibType::kC128: return 16;
  }
  return 0;
}

// Bytes a tensor of these extents and strides reaches (0 when empty).
int64_t Reach(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, int64_t element) {
  int64_t last = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] <= 0) return 0;
    last += (dims[i] - 1) * strides[i];
  }
  return (last + 1) * element;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string out;
  for (int64_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return "[" + out + "]";
}

}  // namespace

StatusOr<CudnnConvPlan> PlanCudnnConvolution(const ir::Op& op, bool exact_f32) {
  const std::string where = "convolution at " + op.loc().ToString();
  if (op.code() != ir::OpCode::kConvolution || op.num_operands() != 2 || op.num_results() != 1) {
    return InvalidArgument("'" + std::string(op.name()) + "' at " + op.loc().ToString() + " is not a convolution");
  }
  const ir::Attribute* a = op.attr("dimension_numbers");
  const auto* dn = a ? a->get_if<ir::ConvDimensionNumbers>() : nullptr;
  if (!dn) return InvalidArgument(where + " has no dimension_numbers");
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& kernel = op.operand(1)->type();
  const ir::Type& out = op.result(0)->type();
  const size_t spatial = dn->input_spatial_dimensions.size();
  if (dn->kernel_spatial_dimensions.size() != spatial || dn->output_spatial_dimensions.size() != spatial ||
      in.rank() != static_cast<int64_t>(spatial) + 2 || kernel.rank() != in.rank() || out.rank() != in.rank()) {
    return InvalidArgument(where + ": dimension_numbers do not match the ranks");
  }
  CudnnConvPlan plan;
  // Types.
  if (in.dtype() != kernel.dtype() || in.dtype() != out.dtype()) {
    return NotPlanned("mixed element types " + std::string(ir::DTypeName(in.dtype())) + ", " +
                      std::string(ir::DTypeName(kernel.dtype())) + " -> " + std::string(ir::DTypeName(out.dtype())));
  }
  MatmulPrecision precision = MatmulPrecision::kDefault;
  if (const ir::Attribute* pc = op.attr("precision_config")) {
    if (const auto* arr = pc->get_if<ir::ArrayAttr>()) {
      for (const ir::Attribute& e : arr->elements) {
        const auto* value = e.get_if<ir::EnumAttr>();
        if (value && value->value == "HIGHEST") precision = MatmulPrecision::kHighest;
      }
    }
  }
  switch (in.dtype()) {
    case DType::kF16:
    case DType::kBF16:
      plan.type = in.dtype() == DType::kF16 ? LibType::kF16 : LibType::kBF16;
      plan.compute = LibType::kF32;
      plan.math = ConvMath::kTensorOp;
      break;
    case DType::kF32:
      plan.type = plan.compute = LibType::kF32;
      plan.math = exact_f32 || precision == MatmulPrecision::kHighest ? ConvMath::kFma : ConvMath::kDefault;
      break;
    case DType::kF64:
      plan.type = plan.compute = LibType::kF64;
      plan.math = ConvMath::kFma;
      break;
    default:
      return NotPlanned(std::string(ir::DTypeName(in.dtype())) + " elements (f16, bf16, f32 and f64 only)");
  }
  // Attributes cuDNN's forward convolution does not have.
  if (op.GetInt("batch_group_count").value_or(1) != 1) return NotPlanned("batch_group_count > 1");
  plan.groups = op.GetInt("feature_group_count").value_or(1);
  if (plan.groups < 1) return InvalidArgument(where + ": feature_group_count below 1");
  for (int64_t v : IntsOr(op, "lhs_dilation", spatial, 1)) {
    if (v != 1) return NotPlanned("lhs_dilation (a transposed convolution)");
  }
  for (int64_t v : IntsOr(op, "window_reversal", spatial, 0)) {
    if (v != 0) return NotPlanned("window_reversal");
  }
  const std::vector<int64_t> strides = IntsOr(op, "window_strides", spatial, 1);
  const std::vector<int64_t> dilation = IntsOr(op, "rhs_dilation", spatial, 1);
  std::vector<int64_t> pad(spatial, 0);
  if (const ir::Attribute* pa = op.attr("padding")) {
    const auto* dense = pa->get_if<ir::DenseElementsAttr>();
    if (!dense || !dense->data || dense->type.dtype() != DType::kS64) return InvalidArgument(where + ": bad padding");
    const std::vector<uint8_t>& bytes = *dense->data;
    for (size_t d = 0; d < spatial; ++d) {
      int64_t low = 0, high = 0;
      const size_t at = bytes.size() == 8 ? 0 : 16 * d;
      if (at + 8 > bytes.size() || (bytes.size() != 8 && at + 16 > bytes.size())) {
        return InvalidArgument(where + ": padding of the wrong size");
      }
      std::memcpy(&low, bytes.data() + at, 8);
      std::memcpy(&high, bytes.data() + (bytes.size() == 8 ? 0 : at + 8), 8);
      if (low != high || low < 0) {
        return NotPlanned("padding [" + std::to_string(low) + ", " + std::to_string(high) + "] on spatial dimension " +
                          std::to_string(d) + " (cuDNN pads both sides alike, never negatively)");
      }
      pad[d] = low;
    }
  }
  for (size_t d = 0; d < spatial; ++d) {
    if (strides[d] < 1 || dilation[d] < 1) return InvalidArgument(where + ": a window stride or dilation below 1");
  }
  if (spatial > 3) return NotPlanned(std::to_string(spatial) + " spatial dimensions (cuDNN: at most 3)");

  // Filter layout: KCRS or KRSC, packed.
  const int64_t rank = kernel.rank();
  bool kcrs = dn->kernel_output_feature_dimension == 0 && dn->kernel_input_feature_dimension == 1;
  bool krsc = dn->kernel_output_feature_dimension == 0 && dn->kernel_input_feature_dimension == rank - 1;
  for (size_t d = 0; d < spatial; ++d) {
    kcrs = kcrs && dn->kernel_spatial_dimensions[d] == static_cast<int64_t>(2 + d);
    krsc = krsc && dn->kernel_spatial_dimensions[d] == static_cast<int64_t>(1 + d);
  }
  // KRSC filters are permuted too: cuDNN's NHWC filters want NHWC
  // tensors, and the tensors keep the operands' own layouts.
  (void)krsc;
  plan.w_nhwc = false;
  if (!kcrs) {
    plan.filter_permutation = {dn->kernel_output_feature_dimension, dn->kernel_input_feature_dimension};
    for (int64_t d : dn->kernel_spatial_dimensions) plan.filter_permutation.push_back(d);
  }

  // Tensors as [N, C, S...] with the operands' own strides; unit spatial
  // dimensions up to two.
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dims());
  const std::vector<int64_t> out_strides = RowMajorStrides(out.dims());
  auto gather = [](const ir::Type& t, const std::vector<int64_t>& st, int64_t b, int64_t f,
                   const std::vector<int64_t>& sp, std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
    dims = {t.dim(b), t.dim(f)};
    strides = {st[static_cast<size_t>(b)], st[static_cast<size_t>(f)]};
    for (int64_t s : sp) {
      dims.push_back(t.dim(s));
      strides.push_back(st[static_cast<size_t>(s)]);
    }
  };
  gather(in, in_strides, dn->input_batch_dimension, dn->input_feature_dimension, dn->input_spatial_dimensions,
         plan.x_dims, plan.x_strides);
  gather(out, out_strides, dn->output_batch_dimension, dn->output_feature_dimension, dn->output_spatial_dimensions,
         plan.y_dims, plan.y_strides);
  plan.w_dims = {kernel.dim(dn->kernel_output_feature_dimension), kernel.dim(dn->kernel_input_feature_dimension)};
  for (int64_t s : dn->kernel_spatial_dimensions) plan.w_dims.push_back(kernel.dim(s));
  plan.pad = pad;
  plan.stride = strides;
  plan.dilation = dilation;
  while (plan.x_dims.size() < 4) {
    plan.x_dims.push_back(1);
    plan.x_strides.push_back(1);
    plan.y_dims.push_back(1);
    plan.y_strides.push_back(1);
    plan.w_dims.push_back(1);
    plan.pad.push_back(0);
    plan.stride.push_back(1);
    plan.dilation.push_back(1);
  }
  for (const auto* v : {&plan.x_dims, &plan.y_dims, &plan.w_dims}) {
    for (int64_t x : *v) {
      if (x == 0) return NotPlanned("an empty tensor (nothing for the library to do)");
      if (x > kInt32Max) return NotPlanned("an extent past 2^31 - 1");
    }
  }
  for (const auto* v : {&plan.x_strides, &plan.y_strides}) {
    for (int64_t x : *v) {
      if (x > kInt32Max) return NotPlanned("a stride past 2^31 - 1");
    }
  }
  // Shapes cuDNN will check: channels per group, the output extents.
  if (plan.x_dims[1] != plan.w_dims[1] * plan.groups || plan.w_dims[0] % plan.groups != 0 ||
      plan.y_dims[1] != plan.w_dims[0] || plan.y_dims[0] != plan.x_dims[0]) {
    return InvalidArgument(where + ": feature counts do not match feature_group_count");
  }
  for (size_t d = 2; d < plan.x_dims.size(); ++d) {
    const size_t s = d - 2;
    const int64_t span = plan.dilation[s] * (plan.w_dims[d] - 1) + 1;
    const int64_t want = (plan.x_dims[d] + 2 * plan.pad[s] - span) / plan.stride[s] + 1;
    if (plan.x_dims[d] + 2 * plan.pad[s] < span || want != plan.y_dims[d]) {
      return NotPlanned("output extent " + std::to_string(plan.y_dims[d]) + " on spatial dimension " +
                        std::to_string(s) + " is not cuDNN's");
    }
  }
  plan.workspace_bytes = kCudnnWorkspaceBytes;
  return plan;
}

std::vector<int64_t> EncodeConvPlan(const CudnnConvPlan& p) {
  std::vector<int64_t> e = {kConvPlanTag,
                            static_cast<int64_t>(p.type),
                            static_cast<int64_t>(p.compute),
                            static_cast<int64_t>(p.math),
                            p.groups,
                            p.w_nhwc ? 1 : 0,
                            p.workspace_bytes,
                            static_cast<int64_t>(p.x_dims.size())};
  for (const auto* v : {&p.x_dims, &p.x_strides, &p.y_dims, &p.y_strides, &p.w_dims, &p.pad, &p.stride, &p.dilation}) {
    e.insert(e.end(), v->begin(), v->end());
  }
  return e;
}

StatusOr<CudnnConvPlan> DecodeConvPlan(std::span<const int64_t> e) {
  auto bad = [](const std::string& why) { return InvalidArgument("cuDNN plan: " + why); };
  if (e.size() < 8 || e[0] != kConvPlanTag) return bad("too short or not a convolution plan");
  const int64_t nb = e[7];
  if (nb < 4 || nb > 5) return bad("rank out of range");
  const auto n = static_cast<size_t>(nb);
  if (e.size() != 8 + 5 * n + 3 * (n - 2)) return bad("wrong length for rank " + std::to_string(nb));
  CudnnConvPlan p;
  auto type_ok = [](int64_t t) { return t >= 0 && t <= 3; };  // f16, bf16, f32, f64
  if (!type_ok(e[1]) || !type_ok(e[2]) || e[3] < 0 || e[3] > 2 || e[4] < 1 || (e[5] != 0 && e[5] != 1) || e[6] < 0) {
    return bad("a type, math mode, group count or flag out of range");
  }
  p.type = static_cast<LibType>(e[1]);
  p.compute = static_cast<LibType>(e[2]);
  p.math = static_cast<ConvMath>(e[3]);
  p.groups = e[4];
  p.w_nhwc = e[5] == 1;
  p.workspace_bytes = e[6];
  size_t at = 8;
  for (auto* v : {&p.x_dims, &p.x_strides, &p.y_dims, &p.y_strides, &p.w_dims}) {
    v->assign(e.begin() + static_cast<ptrdiff_t>(at), e.begin() + static_cast<ptrdiff_t>(at + n));
    at += n;
  }
  for (auto* v : {&p.pad, &p.stride, &p.dilation}) {
    v->assign(e.begin() + static_cast<ptrdiff_t>(at), e.begin() + static_cast<ptrdiff_t>(at + n - 2));
    at += n - 2;
  }
  for (const auto* v : {&p.x_dims, &p.y_dims, &p.w_dims, &p.x_strides, &p.y_strides}) {
    for (int64_t x : *v) {
      if (x < 1 || x > kInt32Max) return bad("an extent or stride out of range");
    }
  }
  for (size_t s = 0; s + 2 < n; ++s) {
    if (p.pad[s] < 0 || p.pad[s] > kInt32Max || p.stride[s] < 1 || p.stride[s] > kInt32Max || p.dilation[s] < 1 ||
        p.dilation[s] > kInt32Max) {
      return bad("a pad, stride or dilation out of range");
    }
    const int64_t span = p.dilation[s] * (p.w_dims[s + 2] - 1) + 1;
    if (p.x_dims[s + 2] + 2 * p.pad[s] < span ||
        (p.x_dims[s + 2] + 2 * p.pad[s] - span) / p.stride[s] + 1 != p.y_dims[s + 2]) {
      return bad("output extents do not follow from the input, filter and window");
    }
  }
  if (p.x_dims[1] != p.w_dims[1] * p.groups || p.w_dims[0] % p.groups != 0 || p.y_dims[1] != p.w_dims[0] ||
      p.y_dims[0] != p.x_dims[0]) {
    return bad("feature counts do not match the group count");
  }
  return p;
}

Status CheckConvBuffers(const CudnnConvPlan& p, int64_t input_bytes, int64_t filter_bytes, int64_t output_bytes) {
  const int64_t element = LibTypeSize(p.type);
  int64_t filter = element;
  for (int64_t d : p.w_dims) filter *= d;
  const struct {
    const char* name;
    int64_t have, need;
  } sides[] = {{"input", input_bytes, Reach(p.x_dims, p.x_strides, element)},
               {"filter", filter_bytes, filter},
               {"output", output_bytes, Reach(p.y_dims, p.y_strides, element)}};
  for (const auto& s : sides) {
    if (s.have < s.need) {
      return InvalidArgument(std::string("cuDNN call: the ") + s.name + " buffer holds " + std::to_string(s.have) +
                             " bytes, " + DescribeConvPlan(p) + " reaches " + std::to_string(s.need));
    }
  }
  return Status::Ok();
}

std::string DescribeConvPlan(const CudnnConvPlan& p) {
  const char* math = p.math == ConvMath::kFma ? "FMA" : p.math == ConvMath::kTensorOp ? "TENSOR_OP" : "DEFAULT";
 return std::string("cudnn conv ") + LibTypeName(p.type) + " x " + Join(p.x_dims) + " w " + Join(p.w_dims) +
         (p.w_nhwc ? " (KRSC)" : p.filter_permutation.empty() ? " (KCRS)" : " (KCRS, permuted from " +
                                                                                 Join(p.filter_permutation) + ")") +
         " -> " + Join(p.y_dims) + " groups " + std::to_string(p.groups) +
         " math " + math;
}

}  // namespace jitd::devices::cuda
