// stablehlo.triangular_solve through cblas_?trsm and stablehlo.cholesky
// through LAPACK ?potrf (OpenBLAS provides both). Real types are solved in
// double and complex ones in complex<double>, then rounded once: f32 and
// narrower results match the interpreter (long double, rounded once) to
// rounding; f64 ones to a few ulps.
#include <cblas.h>

#include <complex>
#include <limits>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/ops.h"

// LAPACK's Cholesky factorization (Fortran interface; OpenBLAS implements
// it natively). The trailing argument is the hidden length of `uplo`.
extern "C" {
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info, size_t);
void zpotrf_(const char* uplo, const int* n, void* a, const int* lda, int* info, size_t);
}

namespace jitd::cpu::internal {
namespace {

using ir::DType;

bool SupportedLinalgType(DType t) { return ir::IsFloat(t) || ir::IsComplex(t); }

// Matrices of the trailing two dimensions of `type`.
struct MatrixStack {
  int64_t rows = 0, cols = 0, batch = 0;
};

MatrixStack StackOf(const ir::Type& type) {
  MatrixStack s;
  s.rows = type.dim(type.rank() - 2);
  s.cols = type.dim(type.rank() - 1);
  s.batch = s.rows * s.cols == 0 ? 0 : type.num_elements() / (s.rows * s.cols);
  return s;
}

// ---- triangular_solve -------------------------------------------------------

class TriangularSolveOp final : public LibraryOp {
 public:
  TriangularSolveOp(ir::Type a, ir::Type b, bool left, bool lower, bool unit, int transpose)
      : a_(std::move(a)), b_(std::move(b)), left_(left), lower_(lower), unit_(unit),
        transpose_(transpose) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    if (ir::IsComplex(b_.dtype())) {
      return RunIn<std::complex<double>>(operands[0], operands[1], results[0]);
    }
    return RunIn<double>(operands[0], operands[1], results[0]);
  }

 private:
  template <typename T>
  Status RunIn(const void* a_data, const void* b_data, void* result) const {
    const int64_t count = b_.num_elements();
    std::vector<T> a(static_cast<size_t>(a_.num_elements())), x(static_cast<size_t>(count));
    LoadDomain<T>(a_data, a_.dtype(), a_.dtype(), a_.num_elements(), a.data());
    LoadDomain<T>(b_data, b_.dtype(), b_.dtype(), count, x.data());
    const MatrixStack bs = StackOf(b_), as = StackOf(a_);
    const int64_t n = as.rows;
    if (bs.batch > 0 && n > 0) {
      const CBLAS_SIDE side = left_ ? CblasLeft : CblasRight;
      const CBLAS_UPLO uplo = lower_ ? CblasLower : CblasUpper;
      const CBLAS_TRANSPOSE trans =
          transpose_ == 0 ? CblasNoTrans : (transpose_ == 1 ? CblasTrans : CblasConjTrans);
      const CBLAS_DIAG diag = unit_ ? CblasUnit : CblasNonUnit;
      const int m = static_cast<int>(bs.rows), k = static_cast<int>(bs.cols);
      const int lda = static_cast<int>(n), ldb = static_cast<int>(bs.cols);
      for (int64_t i = 0; i < bs.batch; ++i) {
        T* xb = x.data() + i * bs.rows * bs.cols;
        const T* ab = a.data() + i * n * n;
        if constexpr (std::is_same_v<T, double>) {
          cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, m, k, 1.0, ab, lda, xb, ldb);
        } else {
          const T one(1);
          cblas_ztrsm(CblasRowMajor, side, uplo, trans, diag, m, k, &one, ab, lda, xb, ldb);
        }
      }
    }
    StoreDomain<T>(x.data(), count, b_.dtype(), result);
    return Status::Ok();
  }

  ir::Type a_, b_;
  bool left_, lower_, unit_;
  int transpose_;  // 0 no, 1 transpose, 2 adjoint
};

// ---- cholesky ---------------------------------------------------------------

// The interpreter's algorithm on one n x n matrix in long double, for
// matrices LAPACK reports as not positive definite (the interpreter then
// yields NaNs from the failing column on, where LAPACK stops).
template <typename T>
void CholeskyFallback(const T* a, T* l, int64_t n, bool lower) {
  using Cx = std::complex<long double>;
  std::vector<Cx> f(static_cast<size_t>(n * n), Cx(0));
  auto in = [&](int64_t i, int64_t j) {
    const std::complex<double> v = lower ? std::complex<double>(a[i * n + j])
                                         : std::conj(std::complex<double>(a[j * n + i]));
    return Cx(v.real(), v.imag());
  };
  auto out = [&](int64_t i, int64_t j) -> Cx& { return f[static_cast<size_t>(i * n + j)]; };
  for (int64_t j = 0; j < n; ++j) {
    long double d = in(j, j).real();
    for (int64_t k = 0; k < j; ++k) d -= std::norm(out(j, k));
    const long double ljj = d >= 0 ? std::sqrt(d) : std::numeric_limits<long double>::quiet_NaN();
    out(j, j) = ljj;
    for (int64_t i = j + 1; i < n; ++i) {
      Cx s = in(i, j);
      for (int64_t k = 0; k < j; ++k) s -= out(i, k) * std::conj(out(j, k));
      out(i, j) = s / ljj;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      // Lower: l[i][j] = f[i][j]; upper: u = f^H.
      const Cx v = lower ? (j <= i ? f[i * n + j] : Cx(0))
                         : (j >= i ? std::conj(f[j * n + i]) : Cx(0));
      if constexpr (std::is_same_v<T, double>) {
        l[i * n + j] = static_cast<double>(v.real());
      } else {
        l[i * n + j] = T(static_cast<double>(v.real()), static_cast<double>(v.imag()));
      }
    }
  }
}

class CholeskyOp final : public LibraryOp {
 public:
  CholeskyOp(ir::Type type, bool lower) : type_(std::move(type)), lower_(lower) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    if (ir::IsComplex(type_.dtype())) return RunIn<std::complex<double>>(operands[0], results[0]);
    return RunIn<double>(operands[0], results[0]);
  }

 private:
  template <typename T>
  Status RunIn(const void* data, void* result) const {
    const int64_t count = type_.num_elements();
    std::vector<T> a(static_cast<size_t>(count)), l(static_cast<size_t>(count));
    LoadDomain<T>(data, type_.dtype(), type_.dtype(), count, a.data());
    const MatrixStack s = StackOf(type_);
    const int64_t n = s.rows;
    // Row-major lower (a = l l^H) is column-major upper of conj(a) and vice
    // versa, so LAPACK's triangle letter is the other one.
    const char uplo = lower_ ? 'U' : 'L';
    const int in = static_cast<int>(n), lda = static_cast<int>(std::max<int64_t>(n, 1));
    for (int64_t b = 0; b < s.batch; ++b) {
      const T* ab = a.data() + b * n * n;
      T* lb = l.data() + b * n * n;
      std::copy(ab, ab + n * n, lb);
      int info = 0;
      if constexpr (std::is_same_v<T, double>) {
        dpotrf_(&uplo, &in, lb, &lda, &info, 1);
      } else {
        zpotrf_(&uplo, &in, lb, &lda, &info, 1);
      }
      if (info != 0) {
        CholeskyFallback(ab, lb, n, lower_);
        continue;
      }
      for (int64_t i = 0; i < n; ++i) {  // zero the other triangle
        for (int64_t j = 0; j < n; ++j) {
          if (lower_ ? j > i : j < i) lb[i * n + j] = T(0);
        }
      }
    }
    StoreDomain<T>(l.data(), count, type_.dtype(), result);
    return Status::Ok();
  }

  ir::Type type_;
  bool lower_;
};

}  // namespace

LibraryOpOr CreateTriangularSolveOp(const ir::Op& op) {
  if (op.num_operands() != 2 || op.num_results() != 1) return Declined();
  const ir::Type& a = op.operand(0)->type();
  const ir::Type& b = op.operand(1)->type();
  if (!a.is_tensor() || !b.is_tensor() || a.rank() < 2 || b.rank() < 2) return Declined();
  if (!SupportedLinalgType(b.dtype()) || a.dtype() != b.dtype()) return Declined();
  const bool left = op.GetBool("left_side").value_or(false);
  const ir::EnumAttr* t = op.GetEnum("transpose_a");
  const std::string transpose = t ? t->value : "NO_TRANSPOSE";
  int mode = 0;
  if (transpose == "TRANSPOSE") {
    mode = 1;
  } else if (transpose == "ADJOINT") {
    mode = 2;
  } else if (transpose != "NO_TRANSPOSE") {
    return OpError(op, "has an unknown transpose_a '" + transpose + "'");
  }
  const int64_t n = a.dim(a.rank() - 1);
  if (a.dim(a.rank() - 2) != n || b.dim(b.rank() - (left ? 2 : 1)) != n ||
      StackOf(a).batch != StackOf(b).batch || n > 0x7fffffff ||
      b.dim(b.rank() - 1) > 0x7fffffff || b.dim(b.rank() - 2) > 0x7fffffff) {
    return OpError(op, "has operand shapes that do not match");
  }
  return std::unique_ptr<LibraryOp>(new TriangularSolveOp(
      a, b, left, op.GetBool("lower").value_or(false),
      op.GetBool("unit_diagonal").value_or(false), mode));
}

LibraryOpOr CreateCholeskyOp(const ir::Op& op) {
  if (op.num_operands() != 1 || op.num_results() != 1) return Declined();
  const ir::Type& a = op.operand(0)->type();
  if (!a.is_tensor() || a.rank() < 2 || !SupportedLinalgType(a.dtype())) return Declined();
  if (a.dim(a.rank() - 1) != a.dim(a.rank() - 2) || a.dim(a.rank() - 1) > 0x7fffffff) {
    return OpError(op, "operand is not a stack of square matrices");
  }
  return std::unique_ptr<LibraryOp>(new CholeskyOp(a, op.GetBool("lower").value_or(false)));
}

}  // namespace jitd::cpu::internal
