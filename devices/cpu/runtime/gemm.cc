// Matrix products: OpenBLAS for large float ones, jit/eval's exact
// summation order for everything else.
#include "devices/cpu/runtime/internal/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <complex>
#include <type_traits>

#include "devices/cpu/runtime/internal/elements.h"

namespace jitd::cpu::internal {
namespace {

// acc + a * b with each operation rounded in T (never fused): the
// interpreter's MultiplyAdd, operation for operation.
template <typename T>
inline T MultiplyAdd(T acc, T a, T b) {
  if constexpr (std::is_same_v<T, uint64_t>) {
    return acc + a * b;  // wraps
  } else if constexpr (std::is_floating_point_v<T>) {
    const T product = a * b;
    return acc + product;
  } else {
    using R = typename T::value_type;
    const R real_real = a.real() * b.real(), imag_imag = a.imag() * b.imag();
    const R real_imag = a.real() * b.imag(), imag_real = a.imag() * b.real();
    const R re = real_real - imag_imag, im = real_imag + imag_real;
    return T(acc.real() + re, acc.imag() + im);
  }
}

constexpr int kLanes = 4;

template <typename T>
void ExactRows(int64_t row_begin, int64_t row_end, int64_t n, int64_t k, const T* a, int64_t lda,
               bool a_trans, const T* b, int64_t ldb, bool b_trans, T* c, int64_t ldc) {
  const int64_t a_step = a_trans ? lda : 1;  // along k
  const int64_t b_step = b_trans ? 1 : ldb;  // along k
  for (int64_t i = row_begin; i < row_end; ++i) {
    const T* ai = a_trans ? a + i : a + i * lda;
    for (int64_t j = 0; j < n; j += kLanes) {
      const int64_t lanes = std::min<int64_t>(kLanes, n - j);
      std::array<const T*, kLanes> bj;
      for (int l = 0; l < kLanes; ++l) {
        const int64_t col = j + (l < lanes ? l : 0);
        bj[l] = b_trans ? b + col * ldb : b + col;
      }
      // Independent chains, each in ascending k.
      std::array<T, kLanes> acc{};
      for (int64_t p = 0; p < k; ++p) {
        const T av = ai[p * a_step];
        for (int l = 0; l < kLanes; ++l) acc[l] = MultiplyAdd(acc[l], av, bj[l][p * b_step]);
      }
      for (int l = 0; l < lanes; ++l) c[i * ldc + j + l] = acc[l];
    }
  }
}

template <typename T>
constexpr bool kBlasType = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                           std::is_same_v<T, std::complex<float>> ||
                           std::is_same_v<T, std::complex<double>>;

}  // namespace

template <typename T>
bool UsesBlas(int64_t m, int64_t n, int64_t k) {
  if constexpr (!kBlasType<T>) {
    return false;
  } else {
    // OpenBLAS takes int dimensions.
    constexpr int64_t kIntMax = 0x7fffffff;
    if (m > kIntMax || n > kIntMax || k > kIntMax) return false;
    return m * n * k >= kBlasMinMultiplyAdds;
  }
}

template <typename T>
void Gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool a_trans, const T* b,
          int64_t ldb, bool b_trans, T* c, int64_t ldc, const RunContext& context) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // empty sums (a and b may be null)
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T{});
    return;
  }
  if constexpr (kBlasType<T>) {
    if (UsesBlas<T>(m, n, k)) {
      const CBLAS_TRANSPOSE ta = a_trans ? CblasTrans : CblasNoTrans;
      const CBLAS_TRANSPOSE tb = b_trans ? CblasTrans : CblasNoTrans;
      const int in = static_cast<int>(n), ik = static_cast<int>(k);
      const int ia = static_cast<int>(std::max<int64_t>(lda, 1));
      const int ib = static_cast<int>(std::max<int64_t>(ldb, 1));
      const int ic = static_cast<int>(ldc);
      // Rows [i, i + rows) of the product.
      auto blas = [&](int64_t i, int64_t rows) {
        const int im = static_cast<int>(rows);
        const T* ai = a_trans ? a + i : a + i * lda;
        T* ci = c + i * ldc;
        if constexpr (std::is_same_v<T, float>) {
          cblas_sgemm(CblasRowMajor, ta, tb, im, in, ik, 1.0f, ai, ia, b, ib, 0.0f, ci, ic);
        } else if constexpr (std::is_same_v<T, double>) {
          cblas_dgemm(CblasRowMajor, ta, tb, im, in, ik, 1.0, ai, ia, b, ib, 0.0, ci, ic);
        } else {
          const T one(1), zero(0);
          if constexpr (std::is_same_v<T, std::complex<float>>) {
            cblas_cgemm(CblasRowMajor, ta, tb, im, in, ik, &one, ai, ia, b, ib, &zero, ci, ic);
          } else {
            cblas_zgemm(CblasRowMajor, ta, tb, im, in, ik, &one, ai, ia, b, ib, &zero, ci, ic);
          }
        }
      };
      // A BLAS call cannot be interrupted: with a deadline or cancel flag to
      // honour (and a `stopped` flag to report through), a big product runs
      // as blocks of rows of ~2^30 multiply-adds (tens of ms), at least 256
      // rows each so that BLAS keeps its speed, checking before each.
      constexpr int64_t kStopBlock = int64_t{1} << 30;
      constexpr int64_t kMinBlockRows = 256;
      if (context.stopped == nullptr || (!context.deadline && !context.cancel) || m * n * k <= kStopBlock) {
        blas(0, m);
        return;
      }
      const int64_t rows = std::max<int64_t>(kMinBlockRows, kStopBlock / (n * k));
      for (int64_t i = 0; i < m; i += rows) {
        if (PastDeadline(context)) {
          context.stopped->store(true, std::memory_order_relaxed);
          return;
        }
        blas(i, std::min(rows, m - i));
      }
      return;
    }
  }
  ParallelRange(context, m, n * std::max<int64_t>(k, 1), [&](int64_t begin, int64_t end) {
    ExactRows(begin, end, n, k, a, lda, a_trans, b, ldb, b_trans, c, ldc);
  });
}

#define JITD_INSTANTIATE(T)                                                                    \
  template bool UsesBlas<T>(int64_t, int64_t, int64_t);                                        \
  template void Gemm<T>(int64_t, int64_t, int64_t, const T*, int64_t, bool, const T*, int64_t, \
                        bool, T*, int64_t, const RunContext&);
JITD_INSTANTIATE(uint64_t)
JITD_INSTANTIATE(float)
JITD_INSTANTIATE(double)
JITD_INSTANTIATE(std::complex<float>)
JITD_INSTANTIATE(std::complex<double>)
#undef JITD_INSTANTIATE

}  // namespace jitd::cpu::internal
