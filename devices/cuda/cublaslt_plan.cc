#include "devices/cuda/cublaslt_plan.h"

#include <algorithm>
#include <limits>

namespace jitd::devices::cuda {

namespace {

using ir::DType;

std::vector<int64_t> DimField(const ir::Op& op, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct("dot_dimension_numbers");
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

bool ToLibType(DType t, LibType* out) {
  switch (t) {
    case DType::kF16: *out = LibType::kF16; return true;
    case DType::kBF16: *out = LibType::kBF16; return true;
    case DType::kF32: *out = LibType::kF32; return true;
    case DType::kF64: *out = LibType::kF64; return true;
    case DType::kC64: *out = LibType::kC64; return true;
    case DType::kC128: *out = LibType::kC128; return true;
    default: return false;
  }
}

Status NotPlanned(const std::string& why) { return NotFound("cuBLASLt does not take this dot: " + why); }

bool IsIota(const std::vector<int64_t>& v, int64_t from) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != from + static_cast<int64_t>(i)) return false;
  }
  return true;
}

bool Increasing(const std::vector<int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), [](int64_t a, int64_t b) { return a >= b; }) == v.end();
}

// Where one operand's non-batch dimensions put its contracting block.
enum class Order { kFreeFirst, kContractingFirst };

// Checks that `dims` (rank r, batch dims 0..nb-1 leading) holds its free and
// contracting dimensions as two contiguous blocks, and says which comes
// first. Free extents multiply into *free, contracting into *contract.
StatusOr<Order> BlockOrder(const char* side, const std::vector<int64_t>& dims, size_t nb,
                           const std::vector<int64_t>& contracting, int64_t* free, int64_t* contract) {
  const auto r = static_cast<int64_t>(dims.size());
  const auto nc = static_cast<int64_t>(contracting.size());
  const auto b = static_cast<int64_t>(nb);
  *free = 1;
  *contract = 1;
  for (int64_t c : contracting) *contract *= dims[static_cast<size_t>(c)];
  for (int64_t d = b; d < r; ++d) {
    if (std::find(contracting.begin(), contracting.end(), d) == contracting.end()) *free *= dims[static_cast<size_t>(d)];
  }
  if (nc == 0 || IsIota(contracting, r - nc)) return Order::kFreeFirst;
  if (IsIota(contracting, b)) return Order::kContractingFirst;
  return NotPlanned(std::string(side) + "'s contracting dimensions are not one block after its batch dimensions "
                    "or at its end");
}

}  // namespace

const char* LibTypeName(LibType t) {
  switch (t) {
    case LibType::kF16: return "f16";
    case LibType::kBF16: return "bf16";
    case LibType::kF32: return "f32";
    case LibType::kF64: return "f64";
    case LibType::kC64: return "c64";
    case LibType::kC128: return "c128";
  }
  return "?";
}

const char* LibComputeName(LibCompute c) {
  switch (c) {
    case LibCompute::k32F: return "32F";
    case LibCompute::k32FFastTF32: return "32F_FAST_TF32";
    case LibCompute::k64F: return "64F";
  }
  return "?";
}

StatusOr<MatmulProblem> MatmulProblemOf(const ir::Op& op) {
  if ((op.code() != ir::OpCode::kDotGeneral && op.code() != ir::OpCode::kDot) || op.num_operands() != 2 ||
      op.num_results() != 1) {
    return InvalidArgument("'" + std::string(op.name()) + "' at " + op.loc().ToString() + " is not a dot");
  }
  const ir::Type& lhs = op.operand(0)->type();
  const ir::Type& rhs = op.operand(1)->type();
  const ir::Type& result = op.result(0)->type();
  if (!lhs.is_tensor() || !rhs.is_tensor() || !result.is_tensor()) {
    return InvalidArgument("dot at " + op.loc().ToString() + " has a non-tensor operand or result");
  }
  MatmulProblem p;
  p.lhs_type = lhs.dtype();
  p.rhs_type = rhs.dtype();
  p.result_type = result.dtype();
  p.lhs_dims = lhs.dims();
  p.rhs_dims = rhs.dims();
  if (op.code() == ir::OpCode::kDot) {
    if (lhs.rank() < 1 || rhs.rank() < 1) return InvalidArgument("dot at " + op.loc().ToString() + " of a scalar");
    p.lhs_contracting = {lhs.rank() - 1};
    p.rhs_contracting = {0};
  } else {
    p.lhs_batching = DimField(op, "lhs_batching_dimensions");
    p.rhs_batching = DimField(op, "rhs_batching_dimensions");
    p.lhs_contracting = DimField(op, "lhs_contracting_dimensions");
    p.rhs_contracting = DimField(op, "rhs_contracting_dimensions");
  }
  if (const ir::Attribute* a = op.attr("precision_config")) {
    if (const auto* arr = a->get_if<ir::ArrayAttr>()) {
      for (const ir::Attribute& e : arr->elements) {
        const auto* value = e.get_if<ir::EnumAttr>();
        if (!value) continue;
        const MatmulPrecision one = value->value == "HIGHEST" ? MatmulPrecision::kHighest
                                    : value->value == "HIGH"  ? MatmulPrecision::kHigh
                                                              : MatmulPrecision::kDefault;
        p.precision = std::max(p.precision, one);
      }
    }
  }
  return p;
}

CanonicalMatmul CanonicalizeMatmul(const MatmulProblem& p) {
  auto free_dims = [](size_t rank, const std::vector<int64_t>& batching, const std::vector<int64_t>& contracting) {
    std::vector<int64_t> out;
    for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
      if (std::find(batching.begin(), batching.end(), d) == batching.end() &&
          std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
        out.push_back(d);
      }
    }
    return out;
  };
  auto permute = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
    std::vector<int64_t> out;
    for (int64_t d : perm) out.push_back(dims[static_cast<size_t>(d)]);
    return out;
  };
  auto iota = [](size_t from, size_t n) {
    std::vector<int64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(from + i);
    return v;
  };
  auto identity = [](const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  CanonicalMatmul c;
  c.problem = p;
  const size_t nb = p.lhs_batching.size(), nc = p.lhs_contracting.size();
  const std::vector<int64_t> lhs_free = free_dims(p.lhs_dims.size(), p.lhs_batching, p.lhs_contracting);
  const std::vector<int64_t> rhs_free = free_dims(p.rhs_dims.size(), p.rhs_batching, p.rhs_contracting);
  std::vector<int64_t> lp = p.lhs_batching, rp = p.rhs_batching;
  lp.insert(lp.end(), lhs_free.begin(), lhs_free.end());
  lp.insert(lp.end(), p.lhs_contracting.begin(), p.lhs_contracting.end());
  rp.insert(rp.end(), p.rhs_contracting.begin(), p.rhs_contracting.end());
  rp.insert(rp.end(), rhs_free.begin(), rhs_free.end());
  c.problem.lhs_dims = permute(p.lhs_dims, lp);
  c.problem.rhs_dims = permute(p.rhs_dims, rp);
  c.problem.lhs_batching = c.problem.rhs_batching = iota(0, nb);
  c.problem.lhs_contracting = iota(nb + lhs_free.size(), nc);
  c.problem.rhs_contracting = iota(nb, nc);
  if (!identity(lp)) c.lhs_permutation = lp;
  if (!identity(rp)) c.rhs_permutation = rp;
  return c;
}

StatusOr<CublasLtMatmulPlan> PlanCublasLtMatmul(const MatmulProblem& p, bool exact_f32) {
  const auto rl = static_cast<int64_t>(p.lhs_dims.size());
  const auto rr = static_cast<int64_t>(p.rhs_dims.size());
  auto in_range = [](const std::vector<int64_t>& v, int64_t rank) {
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
           std::all_of(v.begin(), v.end(), [rank](int64_t d) { return d >= 0 && d < rank; });
  };
  if (p.lhs_batching.size() != p.rhs_batching.size() || p.lhs_contracting.size() != p.rhs_contracting.size() ||
      !in_range(p.lhs_batching, rl) || !in_range(p.rhs_batching, rr) || !in_range(p.lhs_contracting, rl) ||
      !in_range(p.rhs_contracting, rr)) {
    return InvalidArgument("dot dimension numbers out of range, repeated or unpaired");
  }
  for (int64_t d : p.lhs_contracting) {
    if (std::find(p.lhs_batching.begin(), p.lhs_batching.end(), d) != p.lhs_batching.end()) {
      return InvalidArgument("lhs dimension " + std::to_string(d) + " both batching and contracting");
    }
  }
  for (int64_t d : p.rhs_contracting) {
    if (std::find(p.rhs_batching.begin(), p.rhs_batching.end(), d) != p.rhs_batching.end()) {
      return InvalidArgument("rhs dimension " + std::to_string(d) + " both batching and contracting");
    }
  }
  for (size_t i = 0; i < p.lhs_batching.size(); ++i) {
    if (p.lhs_dims[static_cast<size_t>(p.lhs_batching[i])] != p.rhs_dims[static_cast<size_t>(p.rhs_batching[i])]) {
      return InvalidArgument("batch dimension pair " + std::to_string(i) + " differs in extent");
    }
  }
  for (size_t i = 0; i < p.lhs_contracting.size(); ++i) {
    if (p.lhs_dims[static_cast<size_t>(p.lhs_contracting[i])] !=
        p.rhs_dims[static_cast<size_t>(p.rhs_contracting[i])]) {
      return InvalidArgument("contracting dimension pair " + std::to_string(i) + " differs in extent");
    }
  }

  CublasLtMatmulPlan plan;
  // Types.
  LibType in = LibType::kF32, out = LibType::kF32;
  if (p.lhs_type != p.rhs_type || !ToLibType(p.lhs_type, &in) || !ToLibType(p.result_type, &out)) {
    return NotPlanned("operand / result types " + std::string(ir::DTypeName(p.lhs_type)) + ", " +
                      std::string(ir::DTypeName(p.rhs_type)) + " -> " + std::string(ir::DTypeName(p.result_type)) +
                      " (only f16, bf16, f32, f64, complex, one operand type)");
  }
  const bool half = in == LibType::kF16 || in == LibType::kBF16;
  if (!(out == in || (half && out == LibType::kF32))) {
    return NotPlanned(std::string("a ") + LibTypeName(in) + " dot with a " + LibTypeName(out) + " result");
  }
  plan.a_type = plan.b_type = in;
  plan.c_type = out;
  switch (in) {
    case LibType::kF16:
    case LibType::kBF16:
      plan.compute = LibCompute::k32F;
      plan.scale_type = LibType::kF32;
      break;
    case LibType::kF32:
      plan.compute = exact_f32 || p.precision == MatmulPrecision::kHighest ? LibCompute::k32F
                                                                          : LibCompute::k32FFastTF32;
      plan.scale_type = LibType::kF32;
      break;
    case LibType::kF64:
      plan.compute = LibCompute::k64F;
      plan.scale_type = LibType::kF64;
      break;
    case LibType::kC64:
      plan.compute = LibCompute::k32F;
      plan.scale_type = LibType::kC64;
      break;
    case LibType::kC128:
      plan.compute = LibCompute::k64F;
      plan.scale_type = LibType::kC128;
      break;
  }

  // Layout.
  const size_t nb = p.lhs_batching.size();
  if (!IsIota(p.lhs_batching, 0) || !IsIota(p.rhs_batching, 0)) {
    return NotPlanned("its batch dimensions do not lead both operands in order");
  }
  if (!Increasing(p.lhs_contracting) || !Increasing(p.rhs_contracting)) {
    return NotPlanned("its contracting dimensions are not in the same order on both sides");
  }
  int64_t batch = 1;
  for (size_t i = 0; i < nb; ++i) batch *= p.lhs_dims[i];
  int64_t lhs_free = 0, rhs_free = 0, k = 0, k_rhs = 0;
  JITD_ASSIGN_OR_RETURN(Order lhs_order, BlockOrder("lhs", p.lhs_dims, nb, p.lhs_contracting, &lhs_free, &k));
  JITD_ASSIGN_OR_RETURN(Order rhs_order, BlockOrder("rhs", p.rhs_dims, nb, p.rhs_contracting, &rhs_free, &k_rhs));
  if (k != k_rhs) return InvalidArgument("contracted extents differ");
  if (batch == 0 || lhs_free == 0 || rhs_free == 0 || k == 0) {
    return NotPlanned("an empty matmul (nothing for the library to do)");
  }
  if (batch > std::numeric_limits<int32_t>::max()) return NotPlanned("more than 2^31 - 1 batches");

  plan.m = rhs_free;
  plan.n = lhs_free;
  plan.k = k;
  plan.batch = batch;
  // A = rhs: row-major [k, m] is column-major m x k (no transpose);
  // row-major [m, k] is column-major k x m, transposed.
  plan.trans_a = rhs_order == Order::kFreeFirst;
  plan.a_rows = plan.trans_a ? k : rhs_free;
  plan.a_cols = plan.trans_a ? rhs_free : k;
  plan.lda = plan.a_rows;
  plan.stride_a = rhs_free * k;
  // B = lhs: row-major [n, k] is column-major k x n (no transpose);
  // row-major [k, n] is column-major n x k, transposed.
  plan.trans_b = lhs_order == Order::kContractingFirst;
  plan.b_rows = plan.trans_b ? lhs_free : k;
  plan.b_cols = plan.trans_b ? k : lhs_free;
  plan.ldb = plan.b_rows;
  plan.stride_b = lhs_free * k;
  plan.c_rows = rhs_free;
  plan.c_cols = lhs_free;
  plan.ldc = rhs_free;
  plan.stride_c = rhs_free * lhs_free;
  plan.workspace_bytes = kCublasLtWorkspaceBytes;
  return plan;
}

namespace {
constexpr int64_t kMatmulPlanTag = 0x4d4d4c31;  // "MML1"
constexpr size_t kMatmulPlanFields = 27;
}  // namespace

std::vector<int64_t> EncodeMatmulPlan(const CublasLtMatmulPlan& p) {
  return {kMatmulPlanTag, p.m,        p.n,       p.k,        p.batch,    p.trans_a ? 1 : 0, p.trans_b ? 1 : 0,
          p.a_rows,       p.a_cols,   p.lda,     p.stride_a, p.b_rows,   p.b_cols,          p.ldb,
          p.stride_b,     p.c_rows,   p.c_cols,  p.ldc,      p.stride_c, static_cast<int64_t>(p.a_type),
          static_cast<int64_t>(p.b_type), static_cast<int64_t>(p.c_type), static_cast<int64_t>(p.compute),
          static_cast<int64_t>(p.scale_type), p.workspace_bytes, 0, 0};
}

StatusOr<CublasLtMatmulPlan> DecodeMatmulPlan(std::span<const int64_t> e) {
  if (e.size() != kMatmulPlanFields || e[0] != kMatmulPlanTag) {
    return InvalidArgument("cuBLASLt plan: " + std::to_string(e.size()) + " values, expected " +
                           std::to_string(kMatmulPlanFields) + " starting with the matmul tag");
  }
  CublasLtMatmulPlan p;
  size_t i = 1;
  for (int64_t* f : {&p.m, &p.n, &p.k, &p.batch}) *f = e[i++];
  const int64_t ta = e[i++], tb = e[i++];
  for (int64_t* f : {&p.a_rows, &p.a_cols, &p.lda, &p.stride_a, &p.b_rows, &p.b_cols, &p.ldb, &p.stride_b,
                     &p.c_rows, &p.c_cols, &p.ldc, &p.stride_c}) {
    *f = e[i++];
  }
  const int64_t at = e[i++], bt = e[i++], ct = e[i++], compute = e[i++], st = e[i++];
  p.workspace_bytes = e[i++];
  auto type_ok = [](int64_t t) { return t >= 0 && t <= static_cast<int64_t>(LibType::kC128); };
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1) || !type_ok(at) || !type_ok(bt) || !type_ok(ct) ||
      !type_ok(st) || compute < 0 || compute > static_cast<int64_t>(LibCompute::k64F)) {
    return InvalidArgument("cuBLASLt plan: a transpose, type or compute type out of range");
  }
  p.trans_a = ta == 1;
  p.trans_b = tb == 1;
  p.a_type = static_cast<LibType>(at);
  p.b_type = static_cast<LibType>(bt);
  p.c_type = static_cast<LibType>(ct);
  p.compute = static_cast<LibCompute>(compute);
  p.scale_type = static_cast<LibType>(st);
  // The shape rules PlanCublasLtMatmul makes, so a runner may trust them.
  const bool shapes = p.m > 0 && p.n > 0 && p.k > 0 && p.batch > 0 && p.batch <= std::numeric_limits<int32_t>::max() &&
                      p.a_rows == (p.trans_a ? p.k : p.m) && p.a_cols == (p.trans_a ? p.m : p.k) &&
                      p.lda == p.a_rows && p.stride_a == p.m * p.k && p.b_rows == (p.trans_b ? p.n : p.k) &&
                      p.b_cols == (p.trans_b ? p.k : p.n) && p.ldb == p.b_rows && p.stride_b == p.n * p.k &&
                      p.c_rows == p.m && p.c_cols == p.n && p.ldc == p.m && p.stride_c == p.m * p.n &&
                      p.workspace_bytes >= 0;
  if (!shapes) return InvalidArgument("cuBLASLt plan: inconsistent matrix shapes, strides or workspace");
  return p;
}

namespace {
int64_t LibTypeBytes(LibType t) {
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
}  // namespace

Status CheckMatmulBuffers(const CublasLtMatmulPlan& p, int64_t lhs_bytes, int64_t rhs_bytes, int64_t result_bytes) {
  const struct {
    const char* name;
    int64_t have, want;
  } sides[] = {{"lhs", lhs_bytes, p.batch * p.stride_b * LibTypeBytes(p.b_type)},
               {"rhs", rhs_bytes, p.batch * p.stride_a * LibTypeBytes(p.a_type)},
               {"result", result_bytes, p.batch * p.stride_c * LibTypeBytes(p.c_type)}};
  for (const auto& side : sides) {
    if (side.have != side.want) {
      return InvalidArgument(std::string("cuBLASLt call: the ") + side.name + " buffer holds " +
                             std::to_string(side.have) + " bytes, the plan " + DescribeMatmulPlan(p) + " needs " +
                             std::to_string(side.want));
    }
  }
  return Status::Ok();
}

std::string DescribeMatmulPlan(const CublasLtMatmulPlan& p) {
  std::string out = "matmul ";
  if (p.batch > 1) out += std::to_string(p.batch) + " x ";
  out += "[" + std::to_string(p.n) + "x" + std::to_string(p.k) + " * " + std::to_string(p.k) + "x" +
         std::to_string(p.m) + "] " + LibTypeName(p.b_type);
  if (p.c_type != p.b_type) out += std::string("->") + LibTypeName(p.c_type);
  out += std::string(" compute ") + LibComputeName(p.compute);
  if (p.trans_b) out += " (lhs transposed)";
  if (p.trans_a) out += " (rhs transposed)";
  return out;
}

}  // namespace jitd::devices::cuda
