#include "devices/cuda/im2col_plan.h"

#include <cstring>

namespace jitd::devices::cuda {

namespace {

Status NotPlanned(const std::string& why) { return NotFound("im2col + cuBLASLt does not take this convolution: " + why); }

std::vector<int64_t> IntsOr(const ir::Op& op, const char* name, size_t rank, int64_t fill) {
  std::vector<int64_t> v = op.GetI64Array(name).value_or(std::vector<int64_t>{});
  if (v.size() != rank) v.assign(rank, fill);
  return v;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Whether permuting a tensor of `dims` by `perm` keeps its bytes in place:
// the dimensions of extent above 1 stay in order (unit ones move freely).
bool KeepsLayout(const std::vector<int64_t>& perm, const std::vector<int64_t>& dims) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (dims[static_cast<size_t>(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

}  // namespace

StatusOr<Im2colConvPlan> PlanIm2colConvolution(const ir::Op& op, bool exact_f32) {
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
  if (in.dtype() != kernel.dtype() || in.dtype() != out.dtype()) return NotPlanned("mixed element types");
  switch (in.dtype()) {
    case ir::DType::kF16:
    case ir::DType::kBF16:
    case ir::DType::kF32:
    case ir::DType::kF64: break;
    default: return NotPlanned(std::string(ir::DTypeName(in.dtype())) + " elements (f16, bf16, f32 and f64 only)");
  }
  if (in.num_elements() == 0 || kernel.num_elements() == 0 || out.num_elements() == 0) {
    return NotPlanned("an empty tensor");
  }
  Im2colConvPlan plan;
  plan.element_bytes = ir::StorageBytes(in.dtype());
  const int64_t feature_groups = op.GetInt("feature_group_count").value_or(1);
  const int64_t batch_groups = op.GetInt("batch_group_count").value_or(1);
  if (feature_groups < 1 || batch_groups < 1) return InvalidArgument(where + ": a group count below 1");
  if (feature_groups > 1 && batch_groups > 1) {
    return InvalidArgument(where + ": feature_group_count and batch_group_count both above 1");
  }
  plan.groups = feature_groups > 1 ? feature_groups : batch_groups;
  plan.batch_groups = batch_groups > 1;
  const int64_t in_batch = in.dim(dn->input_batch_dimension);
  const int64_t in_features = in.dim(dn->input_feature_dimension);
  const int64_t out_features = kernel.dim(dn->kernel_output_feature_dimension);
  plan.channels = kernel.dim(dn->kernel_input_feature_dimension);
  if (out_features % plan.groups != 0 || out.dim(dn->output_feature_dimension) != out_features) {
    return InvalidArgument(where + ": output features do not split into the groups");
  }
  plan.out_per_group = out_features / plan.groups;
  if (plan.batch_groups) {
    if (in_batch % plan.groups != 0 || plan.channels != in_features) {
      return InvalidArgument(where + ": batch_group_count does not divide the batch");
    }
    plan.batch = in_batch / plan.groups;
  } else {
    if (plan.channels * plan.groups != in_features) {
      return InvalidArgument(where + ": kernel input features x feature_group_count != input features");
    }
    plan.batch = in_batch;
  }
  if (out.dim(dn->output_batch_dimension) != plan.batch) return InvalidArgument(where + ": output batch extent");

  plan.stride = IntsOr(op, "window_strides", spatial, 1);
  plan.lhs_dilation = IntsOr(op, "lhs_dilation", spatial, 1);
  plan.rhs_dilation = IntsOr(op, "rhs_dilation", spatial, 1);
  plan.reversal = IntsOr(op, "window_reversal", spatial, 0);
  plan.pad_low.assign(spatial, 0);
  if (const ir::Attribute* pa = op.attr("padding")) {
    const auto* dense = pa->get_if<ir::DenseElementsAttr>();
    if (!dense || !dense->data || dense->type.dtype() != ir::DType::kS64) return InvalidArgument(where + ": bad padding");
    const std::vector<uint8_t>& bytes = *dense->data;
    for (size_t d = 0; d < spatial; ++d) {
      const size_t at = bytes.size() == 8 ? 0 : 16 * d;
      if (at + 8 > bytes.size()) return InvalidArgument(where + ": padding of the wrong size");
      std::memcpy(&plan.pad_low[d], bytes.data() + at, 8);
    }
  }
  constexpr int64_t kLimit = int64_t{1} << 24;
  for (size_t d = 0; d < spatial; ++d) {
    if (plan.stride[d] < 1 || plan.lhs_dilation[d] < 1 || plan.rhs_dilation[d] < 1) {
      return InvalidArgument(where + ": a window stride or dilation below 1 on spatial dimension " + std::to_string(d));
    }
    for (int64_t v : {plan.stride[d], plan.lhs_dilation[d], plan.rhs_dilation[d], plan.pad_low[d]}) {
      if (v <= -kLimit || v >= kLimit) return NotPlanned("window attributes beyond 2^24");
    }
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(in.dims());
  plan.in_batch_stride = in_strides[static_cast<size_t>(dn->input_batch_dimension)];
  plan.in_feature_stride = in_strides[static_cast<size_t>(dn->input_feature_dimension)];
  plan.rows = plan.batch;
  plan.depth = plan.channels;
  for (size_t d = 0; d < spatial; ++d) {
    plan.in_spatial.push_back(in.dim(dn->input_spatial_dimensions[d]));
    plan.in_spatial_strides.push_back(in_strides[static_cast<size_t>(dn->input_spatial_dimensions[d])]);
    plan.out_spatial.push_back(out.dim(dn->output_spatial_dimensions[d]));
    plan.kernel_spatial.push_back(kernel.dim(dn->kernel_spatial_dimensions[d]));
    plan.rows *= plan.out_spatial.back();
    plan.depth *= plan.kernel_spatial.back();
  }
  plan.patch_elements = plan.groups * plan.rows * plan.depth;
  const int64_t patch_bytes = plan.patch_elements * plan.element_bytes;
  if (patch_bytes > kIm2colMaxBytes) {
    return NotPlanned("its patch matrix would take " + std::to_string(patch_bytes) + " bytes, over the " +
                      std::to_string(kIm2colMaxBytes) + "-byte cap");
  }

  // The filter as [O, Cg, taps...].
  std::vector<int64_t> fperm = {dn->kernel_output_feature_dimension, dn->kernel_input_feature_dimension};
  for (int64_t d : dn->kernel_spatial_dimensions) fperm.push_back(d);
  if (!KeepsLayout(fperm, kernel.dims())) plan.filter_permutation = fperm;

  // T = [G, N', S'..., O/G] into the result's layout.
  plan.gemm_dims = {plan.groups, plan.batch};
  for (int64_t s : plan.out_spatial) plan.gemm_dims.push_back(s);
  plan.gemm_dims.push_back(plan.out_per_group);
  std::vector<int64_t> operm;
  for (int64_t d = 0; d < out.rank(); ++d) {
    if (d == dn->output_batch_dimension) {
      operm.push_back(1);
    } else if (d == dn->output_feature_dimension) {
      operm.push_back(0);
      operm.push_back(static_cast<int64_t>(spatial) + 2);
    } else {
      for (size_t s = 0; s < spatial; ++s) {
        if (dn->output_spatial_dimensions[s] == d) operm.push_back(static_cast<int64_t>(s) + 2);
      }
    }
  }
  if (operm.size() != plan.gemm_dims.size()) return InvalidArgument(where + ": output dimension numbers");
  if (!KeepsLayout(operm, plan.gemm_dims)) plan.output_permutation = operm;

  MatmulProblem problem;
  problem.lhs_type = problem.rhs_type = problem.result_type = in.dtype();
  problem.lhs_dims = {plan.groups, plan.rows, plan.depth};
  problem.rhs_dims = {plan.groups, plan.out_per_group, plan.depth};
  problem.lhs_batching = {0};
  problem.rhs_batching = {0};
  problem.lhs_contracting = {2};
  problem.rhs_contracting = {2};
  if (const ir::Attribute* pc = op.attr("precision_config")) {
    if (const auto* arr = pc->get_if<ir::ArrayAttr>()) {
      for (const ir::Attribute& e : arr->elements) {
        const auto* value = e.get_if<ir::EnumAttr>();
        if (!value) continue;
        if (value->value == "HIGHEST") problem.precision = MatmulPrecision::kHighest;
        if (value->value == "HIGH" && problem.precision == MatmulPrecision::kDefault) {
          problem.precision = MatmulPrecision::kHigh;
        }
      }
    }
  }
  StatusOr<CublasLtMatmulPlan> matmul = PlanCublasLtMatmul(problem, exact_f32);
  if (!matmul.ok()) {
    if (matmul.status().code() == StatusCode::kNotFound) return NotPlanned(matmul.status().message());
    return matmul.status();
  }
  plan.matmul = *matmul;
  return plan;
}

int64_t Im2colSource(const Im2colConvPlan& plan, int64_t index) {
  const size_t spatial = plan.in_spatial.size();
  int64_t k = index % plan.depth;
  int64_t r = (index / plan.depth) % plan.rows;
  const int64_t g = index / (plan.depth * plan.rows);
  // k = (c, taps...), r = (n, outs...), both row-major: peel the innermost.
  int64_t offset = 0;
  for (size_t s = spatial; s-- > 0;) {
    const int64_t tap = k % plan.kernel_spatial[s];
    k /= plan.kernel_spatial[s];
    const int64_t o = r % plan.out_spatial[s];
    r /= plan.out_spatial[s];
    const int64_t w = plan.reversal[s] ? plan.kernel_spatial[s] - 1 - tap : tap;
    const int64_t p = o * plan.stride[s] + w * plan.rhs_dilation[s] - plan.pad_low[s];
    if (p < 0 || p % plan.lhs_dilation[s] != 0) return -1;
    const int64_t x = p / plan.lhs_dilation[s];
    if (x >= plan.in_spatial[s]) return -1;
    offset += x * plan.in_spatial_strides[s];
  }
  const int64_t n = plan.batch_groups ? g * plan.batch + r : r;
  const int64_t c = plan.batch_groups ? k : g * plan.channels + k;
  return offset + n * plan.in_batch_stride + c * plan.in_feature_stride;
}

std::string DescribeIm2colPlan(const Im2colConvPlan& plan) {
  std::string out = "im2col " + std::to_string(plan.groups) + " x [" + std::to_string(plan.rows) + " x " +
                    std::to_string(plan.depth) + "] of " + std::to_string(plan.element_bytes) + "-byte elements";
  std::string extras;
  auto any = [](const std::vector<int64_t>& v, int64_t unit) {
    for (int64_t x : v) {
      if (x != unit) return true;
    }
    return false;
  };
  if (any(plan.lhs_dilation, 1)) extras += " lhs_dilation";
  if (any(plan.rhs_dilation, 1)) extras += " rhs_dilation";
  if (any(plan.reversal, 0)) extras += " reversal";
  if (plan.groups > 1) extras += plan.batch_groups ? " batch_groups" : " feature_groups";
  if (!extras.empty()) out += " (" + extras.substr(1) + ")";
  return out + " + cublaslt " + DescribeMatmulPlan(plan.matmul);
}

}  // namespace jitd::devices::cuda
