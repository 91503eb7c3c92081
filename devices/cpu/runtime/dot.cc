// stablehlo.dot_general and stablehlo.dot as batched matrix products.
//
// Planned once: the batching, free and contracting dimensions of each
// operand become a [batch, M, K] (or [batch, K, M]) lhs and a [batch, K, N]
// (or [batch, N, K]) rhs. When an operand's dimensions already come in one
// of those orders it is used in place (BLAS transposes for free); otherwise
// it is copied into [batch, free, contracting] order at run time. The
// result, [batch, lhs free, rhs free], is row-major [batch, M, N].
#include <algorithm>
#include <complex>
#include <numeric>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/gemm.h"
#include "devices/cpu/runtime/internal/ops.h"

namespace jitd::cpu::internal {
namespace {

using ir::DType;

std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batching,
                              const std::vector<int64_t>& contracting) {
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (int64_t d : batching) used[static_cast<size_t>(d)] = true;
  for (int64_t d : contracting) used[static_cast<size_t>(d)] = true;
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (!used[static_cast<size_t>(d)]) free.push_back(d);
  }
  return free;
}

std::vector<int64_t> Concat(std::vector<int64_t> a, const std::vector<int64_t>& b,
                            const std::vector<int64_t>& c) {
  a.insert(a.end(), b.begin(), b.end());
  a.insert(a.end(), c.begin(), c.end());
  return a;
}

bool IsIdentity(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// How one operand is read as a stack of matrices.
struct OperandPlan {
  ir::Type type;
  // [batch, free, contracting]: the order it is copied into when neither
  // layout below matches.
  std::vector<int64_t> canonical;
  bool canonical_in_place = false;  // already [batch, free, contracting]
  bool swapped_in_place = false;    // already [batch, contracting, free]
};

class DotOp final : public LibraryOp {
 public:
  DotOp(OperandPlan lhs, OperandPlan rhs, DType result, int64_t batch, int64_t m, int64_t n,
        int64_t k)
      : lhs_(std::move(lhs)), rhs_(std::move(rhs)), result_(result), batch_(batch), m_(m),
        n_(n), k_(k) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    return WithDomain(DomainOf(result_), [&]<typename T>() {
      return RunIn<T>(operands[0], operands[1], results[0], context);
    });
  }

 private:
  // The operand's matrices in domain T; `transposed` tells whether each is
  // stored [contracting, free] rather than [free, contracting].
  template <typename T>
  const T* Prepare(const OperandPlan& plan, const void* data, std::vector<T>& converted,
                   std::vector<T>& permuted, bool& transposed) const {
    const DType from = plan.type.dtype();
    const int64_t count = plan.type.num_elements();
    const T* values = static_cast<const T*>(data);
    if (!IsNative<T>(from)) {
      converted.resize(static_cast<size_t>(count));
      LoadDomain<T>(data, from, result_, count, converted.data());
      values = converted.data();
    }
    if (plan.canonical_in_place || plan.swapped_in_place) {
      transposed = !plan.canonical_in_place;
      return values;
    }
    permuted.resize(static_cast<size_t>(count));
    Permute(values, plan.type.dims(), plan.canonical, permuted.data());
    transposed = false;
    return permuted.data();
  }

  template <typename T>
  Status RunIn(const void* lhs, const void* rhs, void* result, const RunContext& context) const {
    std::vector<T> lhs_converted, lhs_permuted, rhs_converted, rhs_permuted, out;
    bool lhs_km = false, rhs_nk_swapped = false;
    const T* a = Prepare<T>(lhs_, lhs, lhs_converted, lhs_permuted, lhs_km);
    // The rhs's canonical order is [batch, N, K]; "swapped" is [batch, K, N].
    const T* b = Prepare<T>(rhs_, rhs, rhs_converted, rhs_permuted, rhs_nk_swapped);
    const bool b_trans = !rhs_nk_swapped;
    T* c = static_cast<T*>(result);
    if (!IsNative<T>(result_)) {
      out.resize(static_cast<size_t>(batch_ * m_ * n_));
      c = out.data();
    }
    const int64_t lda = lhs_km ? m_ : k_;
    const int64_t ldb = b_trans ? k_ : n_;
    for (int64_t i = 0; i < batch_; ++i) {
      if (PastDeadline(context)) {
        return Status(StatusCode::kDeadlineExceeded, "dot_general ran past its deadline");
      }
      Gemm<T>(m_, n_, k_, a + i * m_ * k_, lda, lhs_km, b + i * k_ * n_, ldb, b_trans,
              c + i * m_ * n_, n_, context);
    }
    if (!IsNative<T>(result_)) StoreDomain<T>(c, batch_ * m_ * n_, result_, result);
    return Status::Ok();
  }

  OperandPlan lhs_, rhs_;
  DType result_;
  int64_t batch_, m_, n_, k_;
};

std::vector<int64_t> StructField(const ir::Op& op, std::string_view attr,
                                 std::string_view field) {
  const ir::StructAttr* s = op.GetStruct(attr);
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

}  // namespace

LibraryOpOr CreateDotOp(const ir::Op& op) {
  if (op.num_operands() != 2 || op.num_results() != 1) return Declined();
  const ir::Type& lt = op.operand(0)->type();
  const ir::Type& rt = op.operand(1)->type();
  const ir::Type& ot = op.result(0)->type();
  if (!lt.is_tensor() || !rt.is_tensor() || !ot.is_tensor()) return Declined();
  std::vector<int64_t> lb, rb, lc, rc;
  if (op.code() == ir::OpCode::kDot) {
    if (lt.rank() < 1 || lt.rank() > 2 || rt.rank() < 1 || rt.rank() > 2) return Declined();
    lc = {lt.rank() - 1};
    rc = {0};
  } else {
    constexpr std::string_view kAttr = "dot_dimension_numbers";
    lb = StructField(op, kAttr, "lhs_batching_dimensions");
    rb = StructField(op, kAttr, "rhs_batching_dimensions");
    lc = StructField(op, kAttr, "lhs_contracting_dimensions");
    rc = StructField(op, kAttr, "rhs_contracting_dimensions");
  }
  auto valid = [](const std::vector<int64_t>& dims, int64_t rank) {
    return std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d >= 0 && d < rank; });
  };
  if (lb.size() != rb.size() || lc.size() != rc.size() || !valid(lb, lt.rank()) ||
      !valid(lc, lt.rank()) || !valid(rb, rt.rank()) || !valid(rc, rt.rank())) {
    return OpError(op, "has invalid dot dimension numbers");
  }
  const std::vector<int64_t> lf = FreeDims(lt.rank(), lb, lc);
  const std::vector<int64_t> rf = FreeDims(rt.rank(), rb, rc);
  auto product = [](const ir::Type& t, const std::vector<int64_t>& ds) {
    int64_t p = 1;
    for (int64_t d : ds) p *= t.dim(d);
    return p;
  };
  const int64_t batch = product(lt, lb), m = product(lt, lf), k = product(lt, lc);
  const int64_t n = product(rt, rf);
  if (product(rt, rb) != batch || product(rt, rc) != k || batch * m * n != ot.num_elements()) {
    return OpError(op, "operand and result shapes do not match the dot dimension numbers");
  }
  OperandPlan lhs{lt, Concat(lb, lf, lc)};
  lhs.canonical_in_place = IsIdentity(lhs.canonical);
  lhs.swapped_in_place = IsIdentity(Concat(lb, lc, lf));
  OperandPlan rhs{rt, Concat(rb, rf, rc)};
  rhs.canonical_in_place = IsIdentity(rhs.canonical);
  rhs.swapped_in_place = IsIdentity(Concat(rb, rc, rf));
  // i8 x i8 -> i32 (quantized programs' lowered form): oneDNN's int8 matmul
  // where it is exact (dnnl_matmul.cc).
  if (lt.dtype() == DType::kS8 && rt.dtype() == DType::kS8 && ot.dtype() == DType::kS32 &&
      (lhs.canonical_in_place || lhs.swapped_in_place) && (rhs.canonical_in_place || rhs.swapped_in_place)) {
    LibraryOpOr int8 = CreateDnnlInt8DotOp({.batch = batch, .m = m, .n = n, .k = k,
                                            .lhs_km = !lhs.canonical_in_place, .rhs_kn = !rhs.canonical_in_place});
    if (!int8.ok() || *int8) return int8;
  }
  return std::unique_ptr<LibraryOp>(
      new DotOp(std::move(lhs), std::move(rhs), ot.dtype(), batch, m, n, k));
}

}  // namespace jitd::cpu::internal
