// The custom-call registry (see custom_calls.h): jaxlib's CPU LAPACK
// targets on OpenBLAS's LAPACK, jax's shape_assertion, Sharding.
#include "jit/eval/custom_calls.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "jit/ir/attribute.h"
#include "jit/ir/dtype.h"
#include "jit/ir/type.h"
#include "kissfft/kissfft.hh"

// LAPACK / BLAS as OpenBLAS exports them (Fortran calling convention; the
// single-character arguments are passed without their hidden lengths, as
// jaxlib and SciPy do).
extern "C" {
using jitd_c64 = std::complex<float>;
using jitd_c128 = std::complex<double>;
#define JITD_FOR_TYPES(M) \
  M(s, float, float) M(d, double, double) M(c, jitd_c64, float) M(z, jitd_c128, double)
#define JITD_DECLARE_COMMON(p, T, R)                                                         \
  void p##potrf_(const char*, const int*, T*, const int*, int*);                             \
  void p##getrf_(const int*, const int*, T*, const int*, int*, int*);                        \
  void p##geqrf_(const int*, const int*, T*, const int*, T*, T*, const int*, int*);          \
  void p##trsm_(const char*, const char*, const char*, const char*, const int*, const int*,  \
                const T*, const T*, const int*, T*, const int*);                             \
  void p##gehrd_(const int*, const int*, const int*, T*, const int*, T*, T*, const int*,     \
                 int*);                                                                      \
  void p##gtsv_(const int*, const int*, T*, T*, T*, T*, const int*, int*);
JITD_FOR_TYPES(JITD_DECLARE_COMMON)
#undef JITD_DECLARE_COMMON
// Real-only and complex-only routines.
#define JITD_DECLARE_REAL(p, T)                                                               \
  void p##orgqr_(const int*, const int*, const int*, T*, const int*, const T*, T*,           \
                 const int*, int*);                                                          \
  void p##syevd_(const char*, const char*, const int*, T*, const int*, T*, T*, const int*,   \
                 int*, const int*, int*);                                                    \
  void p##gesdd_(const char*, const int*, const int*, T*, const int*, T*, T*, const int*,    \
                 T*, const int*, T*, const int*, int*, int*);                                \
  void p##geev_(const char*, const char*, const int*, T*, const int*, T*, T*, T*,            \
                const int*, T*, const int*, T*, const int*, int*);                           \
  void p##gees_(const char*, const char*, void*, const int*, T*, const int*, int*, T*, T*,   \
                T*, const int*, T*, const int*, int*, int*);                                 \
  void p##sytrd_(const char*, const int*, T*, const int*, T*, T*, T*, T*, const int*, int*);    \
  void p##geqp3_(const int*, const int*, T*, const int*, int*, T*, T*, const int*, int*);      \
  void p##gesvd_(const char*, const char*, const int*, const int*, T*, const int*, T*, T*,     \
                 const int*, T*, const int*, T*, const int*, int*);                            \
  void p##ormqr_(const char*, const char*, const int*, const int*, const int*, const T*,       \
                 const int*, const T*, T*, const int*, T*, const int*, int*);
JITD_DECLARE_REAL(s, float)
JITD_DECLARE_REAL(d, double)
#undef JITD_DECLARE_REAL
#define JITD_DECLARE_COMPLEX(p, T, R)                                                         \
  void p##ungqr_(const int*, const int*, const int*, T*, const int*, const T*, T*,           \
                 const int*, int*);                                                          \
  void p##heevd_(const char*, const char*, const int*, T*, const int*, R*, T*, const int*,   \
                 R*, const int*, int*, const int*, int*);                                    \
  void p##gesdd_(const char*, const int*, const int*, T*, const int*, R*, T*, const int*,    \
                 T*, const int*, T*, const int*, R*, int*, int*);                            \
  void p##geev_(const char*, const char*, const int*, T*, const int*, T*, T*, const int*,    \
                T*, const int*, T*, const int*, R*, int*);                                   \
  void p##gees_(const char*, const char*, void*, const int*, T*, const int*, int*, T*, T*,   \
                const int*, T*, const int*, R*, int*, int*);                                 \
  void p##hetrd_(const char*, const int*, T*, const int*, R*, R*, T*, T*, const int*, int*);    \
  void p##geqp3_(const int*, const int*, T*, const int*, int*, T*, T*, const int*, R*, int*);   \
  void p##gesvd_(const char*, const char*, const int*, const int*, T*, const int*, R*, T*,     \
                 const int*, T*, const int*, T*, const int*, R*, int*);                        \
  void p##unmqr_(const char*, const char*, const int*, const int*, const int*, const T*,       \
                 const int*, const T*, T*, const int*, T*, const int*, int*);
JITD_DECLARE_COMPLEX(c, jitd_c64, float)
JITD_DECLARE_COMPLEX(z, jitd_c128, double)
#undef JITD_DECLARE_COMPLEX
}

namespace jitd::eval {
namespace {

using ir::DType;
using ir::Literal;
using ir::Type;

template <typename T>
struct IsComplexT : std::false_type {};
template <typename R>
struct IsComplexT<std::complex<R>> : std::true_type {};
template <typename T>
struct RealOf { using type = T; };
template <typename R>
struct RealOf<std::complex<R>> { using type = R; };

// The type-generic face of the LAPACK routines above.
template <typename T>
struct Lapack;

#define JITD_LAPACK_COMMON(p, T)                                                             \
  static void potrf(char uplo, int n, T* a, int lda, int* info) {                            \
    p##potrf_(&uplo, &n, a, &lda, info);                                                     \
  }                                                                                          \
  static void getrf(int m, int n, T* a, int lda, int* ipiv, int* info) {                     \
    p##getrf_(&m, &n, a, &lda, ipiv, info);                                                  \
  }                                                                                          \
  static void geqrf(int m, int n, T* a, int lda, T* tau, T* work, int lwork, int* info) {    \
    p##geqrf_(&m, &n, a, &lda, tau, work, &lwork, info);                                     \
  }                                                                                          \
  static void trsm(char side, char uplo, char trans, char diag, int m, int n, T alpha,       \
                   const T* a, int lda, T* b, int ldb) {                                     \
    p##trsm_(&side, &uplo, &trans, &diag, &m, &n, &alpha, a, &lda, b, &ldb);                 \
  }                                                                                          \
  static void gehrd(int n, int ilo, int ihi, T* a, int lda, T* tau, T* work, int lwork,      \
                    int* info) {                                                             \
    p##gehrd_(&n, &ilo, &ihi, a, &lda, tau, work, &lwork, info);                             \
  }                                                                                          \
  static void gtsv(int n, int nrhs, T* dl, T* d, T* du, T* b, int ldb, int* info) {          \
    p##gtsv_(&n, &nrhs, dl, d, du, b, &ldb, info);                                           \
  }

#define JITD_LAPACK_REAL(p, T)                                                               \
  template <>                                                                                \
  struct Lapack<T> {                                                                         \
    JITD_LAPACK_COMMON(p, T)                                                                 \
    static void orgqr(int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork,  \
                      int* info) {                                                           \
      p##orgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);                               \
    }                                                                                        \
    static void syevd(char jobz, char uplo, int n, T* a, int lda, T* w, T* work, int lwork,  \
                      T* /*rwork*/, int /*lrwork*/, int* iwork, int liwork, int* info) {     \
      p##syevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info);           \
    }                                                                                        \
    static void gesdd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt,    \
                      int ldvt, T* work, int lwork, T* /*rwork*/, int* iwork, int* info) {   \
      p##gesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info);   \
    }                                                                                        \
    static void sytrd(char uplo, int n, T* a, int lda, T* d, T* e, T* tau, T* work,          \
                      int lwork, int* info) {                                                \
      p##sytrd_(&uplo, &n, a, &lda, d, e, tau, work, &lwork, info);                          \
    }                                                                                        \
    static void geev(char jobvl, char jobvr, int n, T* a, int lda, T* wr, T* wi, T* vl,      \
                     int ldvl, T* vr, int ldvr, T* work, int lwork, int* info) {             \
      p##geev_(&jobvl, &jobvr, &n, a, &lda, wr, wi, vl, &ldvl, vr, &ldvr, work, &lwork,      \
               info);                                                                        \
    }                                                                                        \
    static void gees(char jobvs, char sort, int n, T* a, int lda, int* sdim, T* wr, T* wi,   \
                     T* vs, int ldvs, T* work, int lwork, int* info) {                       \
      p##gees_(&jobvs, &sort, nullptr, &n, a, &lda, sdim, wr, wi, vs, &ldvs, work, &lwork,   \
               nullptr, info);                                                               \
    }                                                                                        \
    static void geqp3(int m, int n, T* a, int lda, int* jpvt, T* tau, T* work, int lwork,    \
                      T* /*rwork*/, int* info) {                                             \
      p##geqp3_(&m, &n, a, &lda, jpvt, tau, work, &lwork, info);                             \
    }                                                                                        \
    static void gesvd(char jobz, int m, int n, T* a, int lda, T* s, T* u, int ldu, T* vt,    \
                      int ldvt, T* work, int lwork, T* /*rwork*/, int* info) {               \
      p##gesvd_(&jobz, &jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, info);   \
    }                                                                                        \
    static void ormqr(char side, char trans, int m, int n, int k, const T* a, int lda,       \
                      const T* tau, T* c, int ldc, T* work, int lwork, int* info) {          \
      p##ormqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info);       \
    }                                                                                        \
  };
JITD_LAPACK_REAL(s, float)
JITD_LAPACK_REAL(d, double)

#define JITD_LAPACK_COMPLEX(p, T, R)                                                         \
  template <>                                                                                \
  struct Lapack<T> {                                                                         \
    JITD_LAPACK_COMMON(p, T)                                                                 \
    static void orgqr(int m, int n, int k, T* a, int lda, const T* tau, T* work, int lwork,  \
                      int* info) {                                                           \
      p##ungqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);                               \
    }                                                                                        \
    static void syevd(char jobz, char uplo, int n, T* a, int lda, R* w, T* work, int lwork,  \
                      R* rwork, int lrwork, int* iwork, int liwork, int* info) {             \
      p##heevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork,  \
                info);                                                                       \
    }                                                                                        \
    static void gesdd(char jobz, int m, int n, T* a, int lda, R* s, T* u, int ldu, T* vt,    \
                      int ldvt, T* work, int lwork, R* rwork, int* iwork, int* info) {       \
      p##gesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork,   \
                info);                                                                       \
    }                                                                                        \
    static void sytrd(char uplo, int n, T* a, int lda, R* d, R* e, T* tau, T* work,          \
                      int lwork, int* info) {                                                \
      p##hetrd_(&uplo, &n, a, &lda, d, e, tau, work, &lwork, info);                          \
    }                                                                                        \
    static void geev(char jobvl, char jobvr, int n, T* a, int lda, T* w, T* vl, int ldvl,    \
                     T* vr, int ldvr, T* work, int lwork, R* rwork, int* info) {             \
      p##geev_(&jobvl, &jobvr, &n, a, &lda, w, vl, &ldvl, vr, &ldvr, work, &lwork, rwork,    \
               info);                                                                        \
    }                                                                                        \
    static void gees(char jobvs, char sort, int n, T* a, int lda, int* sdim, T* w, T* vs,    \
                     int ldvs, T* work, int lwork, R* rwork, int* info) {                    \
      p##gees_(&jobvs, &sort, nullptr, &n, a, &lda, sdim, w, vs, &ldvs, work, &lwork, rwork, \
               nullptr, info);                                                               \
    }                                                                                        \
    static void geqp3(int m, int n, T* a, int lda, int* jpvt, T* tau, T* work, int lwork,    \
                      R* rwork, int* info) {                                                 \
      p##geqp3_(&m, &n, a, &lda, jpvt, tau, work, &lwork, rwork, info);                      \
    }                                                                                        \
    static void gesvd(char jobz, int m, int n, T* a, int lda, R* s, T* u, int ldu, T* vt,    \
                      int ldvt, T* work, int lwork, R* rwork, int* info) {                   \
      p##gesvd_(&jobz, &jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork,   \
                info);                                                                       \
    }                                                                                        \
    static void ormqr(char side, char trans, int m, int n, int k, const T* a, int lda,       \
                      const T* tau, T* c, int ldc, T* work, int lwork, int* info) {          \
      p##unmqr_(&side, &trans, &m, &n, &k, a, &lda, tau, c, &ldc, work, &lwork, info);       \
    }                                                                                        \
  };
JITD_LAPACK_COMPLEX(c, jitd_c64, float)
JITD_LAPACK_COMPLEX(z, jitd_c128, double)
#undef JITD_LAPACK_REAL
#undef JITD_LAPACK_COMPLEX
#undef JITD_LAPACK_COMMON

// ---------------------------------------------------------------------------
// Buffers in a custom call's physical layout.

struct Buffer {
  Type type;
  std::vector<int64_t> minor_to_major;
  std::vector<uint8_t> bytes;  // elements in the physical order

  template <typename T>
  T* data() { return reinterpret_cast<T*>(bytes.data()); }
  int64_t dim(int64_t i) const { return type.dim(i); }
  int64_t rank() const { return type.rank(); }
  int64_t num_elements() const { return type.num_elements(); }
};

// Element strides, per logical dimension, of the layout `minor_to_major`.
std::vector<int64_t> PhysicalStrides(const Type& type, const std::vector<int64_t>& m2m) {
  std::vector<int64_t> strides(static_cast<size_t>(type.rank()), 0);
  int64_t stride = 1;
  for (int64_t d : m2m) {
    strides[static_cast<size_t>(d)] = stride;
    stride *= type.dim(d);
  }
  return strides;
}

// Calls f(logical_index, physical_index) for every element in row-major order.
template <typename F>
void ForEachElement(const Type& type, const std::vector<int64_t>& m2m, F f) {
  const int64_t n = type.num_elements();
  if (n == 0) return;
  const int64_t rank = type.rank();
  const std::vector<int64_t> strides = PhysicalStrides(type, m2m);
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t physical = 0;
  for (int64_t logical = 0; logical < n; ++logical) {
    f(logical, physical);
    for (int64_t d = rank - 1; d >= 0; --d) {
      const size_t ud = static_cast<size_t>(d);
      if (++idx[ud] < type.dim(d)) {
        physical += strides[ud];
        break;
      }
      physical -= strides[ud] * (idx[ud] - 1);
      idx[ud] = 0;
    }
  }
}

// Moves elements between row-major order and the physical order of
// `m2m`: dst[physical] = src[logical] when `to_physical`, the reverse
// otherwise. Row-major layouts are one memcpy; others walk the innermost
// logical dimension with its physical stride, elements of `es` bytes moved
// as one word.
template <size_t kBytes>
void RelayoutLoop(const Type& type, const std::vector<int64_t>& strides, const uint8_t* src,
                  uint8_t* dst, bool to_physical) {
  const int64_t rank = type.rank();
  const int64_t inner = type.dim(rank - 1);
  const int64_t step = strides[static_cast<size_t>(rank - 1)];
  const int64_t outer = inner ? type.num_elements() / inner : 0;
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t base = 0;  // physical offset of the current row's first element
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t logical = o * inner;
    for (int64_t k = 0; k < inner; ++k) {
      const int64_t p = base + k * step;
      if (to_physical) {
        std::memcpy(dst + static_cast<size_t>(p) * kBytes, src + static_cast<size_t>(logical + k) * kBytes, kBytes);
      } else {
        std::memcpy(dst + static_cast<size_t>(logical + k) * kBytes, src + static_cast<size_t>(p) * kBytes, kBytes);
      }
    }
    for (int64_t d = rank - 2; d >= 0; --d) {
      const size_t ud = static_cast<size_t>(d);
      if (++idx[ud] < type.dim(d)) {
        base += strides[ud];
        break;
      }
      base -= strides[ud] * (idx[ud] - 1);
      idx[ud] = 0;
    }
  }
}

// The same when the physically fastest dimension `fast` is not the logical
// innermost one (column-major matrices): the two are walked in 32 x 32
// tiles so that neither side strides through memory a row at a time.
template <size_t kBytes>
void RelayoutTiled(const Type& type, const std::vector<int64_t>& pstrides, int64_t fast,
                   const uint8_t* src, uint8_t* dst, bool to_physical) {
  constexpr int64_t kTile = 32;
  const int64_t rank = type.rank();
  const int64_t a = rank - 1;  // logically contiguous
  std::vector<int64_t> lstrides(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    lstrides[static_cast<size_t>(d)] = lstrides[static_cast<size_t>(d + 1)] * type.dim(d + 1);
  }
  std::vector<int64_t> others;
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != a && d != fast) {
      others.push_back(d);
      count *= type.dim(d);
    }
  }
  const int64_t na = type.dim(a), nb = type.dim(fast);
  const int64_t lb = lstrides[static_cast<size_t>(fast)], pa = pstrides[static_cast<size_t>(a)];
  std::vector<int64_t> idx(others.size(), 0);
  int64_t lbase = 0, pbase = 0;
  for (int64_t c = 0; c < count; ++c) {
    for (int64_t i0 = 0; i0 < na; i0 += kTile) {
      const int64_t i1 = std::min(na, i0 + kTile);
      for (int64_t j0 = 0; j0 < nb; j0 += kTile) {
        const int64_t j1 = std::min(nb, j0 + kTile);
        const size_t pstep = static_cast<size_t>(pa) * kBytes;
        for (int64_t j = j0; j < j1; ++j) {
          const uint8_t* l = (to_physical ? src : dst) + static_cast<size_t>(lbase + j * lb + i0) * kBytes;
          const uint8_t* p = (to_physical ? dst : src) + static_cast<size_t>(pbase + i0 * pa + j) * kBytes;
          if (to_physical) {
            uint8_t* d = const_cast<uint8_t*>(p);
            for (int64_t i = i0; i < i1; ++i, l += kBytes, d += pstep) std::memcpy(d, l, kBytes);
          } else {
            uint8_t* d = const_cast<uint8_t*>(l);
            for (int64_t i = i0; i < i1; ++i, d += kBytes, p += pstep) std::memcpy(d, p, kBytes);
          }
        }
      }
    }
    for (size_t k = others.size(); k-- > 0;) {
      const int64_t d = others[k];
      const size_t ud = static_cast<size_t>(d);
      if (++idx[k] < type.dim(d)) {
        lbase += lstrides[ud];
        pbase += pstrides[ud];
        break;
      }
      lbase -= lstrides[ud] * (idx[k] - 1);
      pbase -= pstrides[ud] * (idx[k] - 1);
      idx[k] = 0;
    }
  }
}

void Relayout(const Type& type, const std::vector<int64_t>& m2m, const uint8_t* src, uint8_t* dst,
              bool to_physical) {
  const size_t es = static_cast<size_t>(ir::StorageBytes(type.dtype()));
  const int64_t n = type.num_elements();
  if (n == 0) return;
  bool row_major = true;
  for (size_t k = 0; k < m2m.size(); ++k) {
    row_major &= m2m[k] == static_cast<int64_t>(m2m.size() - 1 - k);
  }
  if (row_major || type.rank() == 0) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
    return;
  }
  const std::vector<int64_t> strides = PhysicalStrides(type, m2m);
  const int64_t fast = m2m.empty() ? 0 : m2m[0];
  if (fast != type.rank() - 1) {
    switch (es) {
      case 1: return RelayoutTiled<1>(type, strides, fast, src, dst, to_physical);
      case 2: return RelayoutTiled<2>(type, strides, fast, src, dst, to_physical);
      case 4: return RelayoutTiled<4>(type, strides, fast, src, dst, to_physical);
      case 8: return RelayoutTiled<8>(type, strides, fast, src, dst, to_physical);
      case 16: return RelayoutTiled<16>(type, strides, fast, src, dst, to_physical);
      default: break;
    }
  }
  switch (es) {
    case 1: return RelayoutLoop<1>(type, strides, src, dst, to_physical);
    case 2: return RelayoutLoop<2>(type, strides, src, dst, to_physical);
    case 4: return RelayoutLoop<4>(type, strides, src, dst, to_physical);
    case 8: return RelayoutLoop<8>(type, strides, src, dst, to_physical);
    case 16: return RelayoutLoop<16>(type, strides, src, dst, to_physical);
    default:
      ForEachElement(type, m2m, [&](int64_t l, int64_t p) {
        if (to_physical) {
          std::memcpy(dst + static_cast<size_t>(p) * es, src + static_cast<size_t>(l) * es, es);
        } else {
          std::memcpy(dst + static_cast<size_t>(l) * es, src + static_cast<size_t>(p) * es, es);
        }
      });
  }
}

Buffer ToPhysical(const Literal& lit, std::vector<int64_t> m2m) {
  Buffer b{lit.type(), std::move(m2m), {}};
  b.bytes.resize(lit.bytes().size());
  Relayout(b.type, b.minor_to_major, lit.bytes().data(), b.bytes.data(), /*to_physical=*/true);
  return b;
}

StatusOr<Literal> ToLogical(const Buffer& b) {
  std::vector<uint8_t> bytes(b.bytes.size());
  Relayout(b.type, b.minor_to_major, b.bytes.data(), bytes.data(), /*to_physical=*/false);
  return Literal::FromBytes(b.type, std::move(bytes));
}

// Starts result `out` with the value of operand `in` (same type; the
// results jaxlib's kernels compute in place), in `out`'s own layout.
// The kernels seed each result from an operand they do not read again, so
// with one layout the operand's bytes move over (XLA's in-place alias).
void Seed(Buffer& out, Buffer& in) {
  if (out.minor_to_major == in.minor_to_major) {
    out.bytes = std::move(in.bytes);
    in.bytes.clear();
    return;
  }
  const size_t es = static_cast<size_t>(ir::StorageBytes(in.type.dtype()));
  std::vector<int64_t> logical_to_in(static_cast<size_t>(in.num_elements()));
  ForEachElement(in.type, in.minor_to_major,
                 [&](int64_t l, int64_t p) { logical_to_in[static_cast<size_t>(l)] = p; });
  ForEachElement(out.type, out.minor_to_major, [&](int64_t l, int64_t p) {
    std::memcpy(out.bytes.data() + static_cast<size_t>(p) * es,
                in.bytes.data() + static_cast<size_t>(logical_to_in[static_cast<size_t>(l)]) * es, es);
  });
}

std::vector<int64_t> DefaultLayout(int64_t rank) {
  std::vector<int64_t> m2m;
  for (int64_t d = rank - 1; d >= 0; --d) m2m.push_back(d);
  return m2m;
}

// ---------------------------------------------------------------------------
// One call: its buffers, attributes and the errors that name it.

struct Call {
  std::string target;
  const ir::Op* op = nullptr;
  std::vector<Buffer> in;
  std::vector<Buffer> out;
  const ir::DictionaryAttr* config = nullptr;

  Status Fail(const std::string& message) const {
    return InvalidArgument("custom_call @" + target + ": " + message);
  }
  Status Unsupported(const std::string& message) const {
    return Unimplemented("custom_call @" + target + ": " + message);
  }

  const ir::Attribute* Attr(std::string_view name) const {
    if (!config) return nullptr;
    for (const auto& e : config->entries) {
      if (e.name == name) return &e.value;
    }
    return nullptr;
  }
  // A ui8 character attribute (`uplo = 76 : ui8`), one of `allowed`.
  StatusOr<char> Char(std::string_view name, std::string_view allowed) const {
    const ir::Attribute* a = Attr(name);
    if (!a) return Fail("needs the attribute '" + std::string(name) + "' in mhlo.backend_config");
    const auto* i = a->get_if<ir::IntegerAttr>();
    if (!i) return Fail("attribute '" + std::string(name) + "' must be an integer (a character code)");
    const int64_t v = i->value;
    if (v <= 0 || v > 127 || allowed.find(static_cast<char>(v)) == std::string_view::npos) {
      std::string list;
      for (char c : allowed) list += std::string(list.empty() ? "" : ", ") + "'" + c + "'";
      return Fail("attribute '" + std::string(name) + "' is " + std::to_string(v) +
                  ", expected the code of one of " + list);
    }
    return static_cast<char>(v);
  }
  StatusOr<int> Int(std::string_view name) const {
    const ir::Attribute* a = Attr(name);
    if (!a) return Fail("needs the attribute '" + std::string(name) + "' in mhlo.backend_config");
    const auto* i = a->get_if<ir::IntegerAttr>();
    if (!i || i->value < INT32_MIN || i->value > INT32_MAX) {
      return Fail("attribute '" + std::string(name) + "' must be a 32-bit integer");
    }
    return static_cast<int>(i->value);
  }

  // A boolean attribute (`left = true`), `def` when absent.
  StatusOr<bool> Bool(std::string_view name, std::optional<bool> def = std::nullopt) const {
    const ir::Attribute* a = Attr(name);
    if (!a) {
      if (def) return *def;
      return Fail("needs the attribute '" + std::string(name) + "' in mhlo.backend_config");
    }
    if (const bool* b = a->get_if<bool>()) return *b;
    if (const auto* i = a->get_if<ir::IntegerAttr>(); i && (i->value == 0 || i->value == 1)) {
      return i->value != 0;
    }
    return Fail("attribute '" + std::string(name) + "' must be a boolean");
  }

  Status Arity(size_t operands, size_t results) const {
    if (in.size() != operands || out.size() != results) {
      return Fail("takes " + std::to_string(operands) + " operand(s) and returns " +
                  std::to_string(results) + " result(s), got " + std::to_string(in.size()) +
                  " and " + std::to_string(out.size()));
    }
    return Status::Ok();
  }
};

// Which buffer of a call, for messages.
std::string Name(bool result, size_t i) {
  return (result ? "result " : "operand ") + std::to_string(i);
}

// Leading batch dimensions and the two matrix dimensions of a buffer.
struct Batched {
  int64_t batch = 1;
  int rows = 0;
  int cols = 0;
};

StatusOr<Batched> SplitMatrix(const Call& c, const Buffer& b, const std::string& what) {
  if (b.rank() < 2) {
    return c.Fail(what + " must have rank >= 2 (batch dimensions, then a matrix), got " +
                  b.type.ToString());
  }
  Batched s;
  for (int64_t d = 0; d + 2 < b.rank(); ++d) s.batch *= b.dim(d);
  const int64_t r = b.dim(b.rank() - 2), k = b.dim(b.rank() - 1);
  if (r > INT32_MAX || k > INT32_MAX) return c.Fail(what + " is too large for 32-bit LAPACK");
  s.rows = static_cast<int>(r);
  s.cols = static_cast<int>(k);
  return s;
}

// Checks a buffer's element type and element count (batch * per_batch).
Status Expect(const Call& c, bool result, size_t i, DType dtype, int64_t count) {
  const Buffer& b = result ? c.out[i] : c.in[i];
  if (b.type.dtype() != dtype) {
    return c.Fail(Name(result, i) + " must have element type " + std::string(ir::DTypeName(dtype)) +
                  ", got " + b.type.ToString());
  }
  if (b.num_elements() != count) {
    return c.Fail(Name(result, i) + " must have " + std::to_string(count) + " elements, got " +
                  b.type.ToString());
  }
  return Status::Ok();
}

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::kF32;
  if constexpr (std::is_same_v<T, double>) return DType::kF64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kC64;
  return DType::kC128;
}

int Ld(int n) { return std::max(n, 1); }

template <typename T>
int QueryToInt(T v) {
  return std::max(1, static_cast<int>(std::real(v)));
}

// ---------------------------------------------------------------------------
// The kernels, each over the physical buffers of jaxlib's binding.

template <typename T>
Status Potrf(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(1, 2));
  JITD_ASSIGN_OR_RETURN(char uplo, c.Char("uplo", "LU"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (s.rows != s.cols) return c.Fail("needs square matrices, got " + c.in[0].type.ToString());
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DType::kS32, s.batch));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  int* info = c.out[1].data<int>();
  const int64_t step = int64_t{s.rows} * s.cols;
  for (int64_t i = 0; i < s.batch; ++i) Lapack<T>::potrf(uplo, s.cols, a + i * step, Ld(s.cols), info + i);
  return Status::Ok();
}

template <typename T>
Status Getrf(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(1, 3));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  const int k = std::min(s.rows, s.cols);
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DType::kS32, s.batch * k));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DType::kS32, s.batch));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  int* ipiv = c.out[1].data<int>();
  int* info = c.out[2].data<int>();
  const int64_t step = int64_t{s.rows} * s.cols;
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::getrf(s.rows, s.cols, a + i * step, Ld(s.rows), ipiv + i * k, info + i);
  }
  return Status::Ok();
}

template <typename T>
Status Geqrf(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(1, 2));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  const int k = std::min(s.rows, s.cols);
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<T>(), s.batch * k));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  T* tau = c.out[1].data<T>();
  T query{};
  int info = 0;
  Lapack<T>::geqrf(s.rows, s.cols, nullptr, Ld(s.rows), nullptr, &query, -1, &info);
  std::vector<T> work(static_cast<size_t>(QueryToInt(query)));
  const int64_t step = int64_t{s.rows} * s.cols;
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::geqrf(s.rows, s.cols, a + i * step, Ld(s.rows), tau + i * k, work.data(),
                     static_cast<int>(work.size()), &info);
  }
  return Status::Ok();
}

template <typename T>
Status Orgqr(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(2, 1));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (c.in[1].rank() < 1) return c.Fail("operand 1 (tau) must have rank >= 1");
  const int64_t k64 = c.in[1].dim(c.in[1].rank() - 1);
  if (k64 > s.cols || s.cols > s.rows) {
    return c.Fail("needs m >= n >= k, got a " + c.in[0].type.ToString() + " and tau " +
                  c.in[1].type.ToString());
  }
  const int k = static_cast<int>(k64);
  JITD_RETURN_IF_ERROR(Expect(c, false, 1, DTypeOf<T>(), s.batch * k));
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  const T* tau = c.in[1].data<T>();
  T query{};
  int info = 0;
  Lapack<T>::orgqr(s.rows, s.cols, k, nullptr, Ld(s.rows), nullptr, &query, -1, &info);
  std::vector<T> work(static_cast<size_t>(QueryToInt(query)));
  const int64_t step = int64_t{s.rows} * s.cols;
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::orgqr(s.rows, s.cols, k, a + i * step, Ld(s.rows), tau + i * k, work.data(),
                     static_cast<int>(work.size()), &info);
  }
  return Status::Ok();
}

// trsm: (a, b) -> x, jaxlib's form since late 2025, or (a, b, alpha) -> x,
// its form before (alpha a scalar operand; 1 when absent).
template <typename T>
Status Trsm(Call& c) {
  if (c.in.size() != 2) JITD_RETURN_IF_ERROR(c.Arity(3, 1));
  JITD_RETURN_IF_ERROR(c.Arity(c.in.size(), 1));
  JITD_ASSIGN_OR_RETURN(char side, c.Char("side", "LR"));
  JITD_ASSIGN_OR_RETURN(char uplo, c.Char("uplo", "LU"));
  JITD_ASSIGN_OR_RETURN(char trans, c.Char("trans_x", "NTC"));
  JITD_ASSIGN_OR_RETURN(char diag, c.Char("diag", "NU"));
  JITD_ASSIGN_OR_RETURN(Batched a, SplitMatrix(c, c.in[0], "operand 0 (a)"));
  JITD_ASSIGN_OR_RETURN(Batched b, SplitMatrix(c, c.in[1], "operand 1 (b)"));
  const int order = side == 'L' ? b.rows : b.cols;
  if (a.rows != order || a.cols != order || a.batch != b.batch) {
    return c.Fail("a " + c.in[0].type.ToString() + " does not match b " + c.in[1].type.ToString() +
                  " for side '" + std::string(1, side) + "'");
  }
  if (c.in.size() == 3) JITD_RETURN_IF_ERROR(Expect(c, false, 2, DTypeOf<T>(), 1));
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[1].num_elements()));
  Seed(c.out[0], c.in[1]);
  const T alpha = c.in.size() == 3 ? *c.in[2].data<T>() : T(1);
  const T* am = c.in[0].data<T>();
  T* bm = c.out[0].data<T>();
  for (int64_t i = 0; i < b.batch; ++i) {
    Lapack<T>::trsm(side, uplo, trans, diag, b.rows, b.cols, alpha, am + i * int64_t{order} * order,
                    Ld(order), bm + i * int64_t{b.rows} * b.cols, Ld(b.rows));
  }
  return Status::Ok();
}

template <typename T>
Status Syevd(Call& c) {
  using R = typename RealOf<T>::type;
  JITD_RETURN_IF_ERROR(c.Arity(1, 3));
  JITD_ASSIGN_OR_RETURN(char uplo, c.Char("uplo", "LU"));
  JITD_ASSIGN_OR_RETURN(char mode, c.Char("mode", "NV"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (s.rows != s.cols) return c.Fail("needs square matrices, got " + c.in[0].type.ToString());
  const int n = s.cols;
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<R>(), s.batch * n));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DType::kS32, s.batch));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  R* w = c.out[1].data<R>();
  int* info = c.out[2].data<int>();
  // Workspace sizes from a query (jaxlib uses LAPACK's documented minimums).
  T wq{};
  R rq{};
  int iq = 0, qinfo = 0;
  Lapack<T>::syevd(mode, uplo, n, nullptr, Ld(n), nullptr, &wq, -1, &rq, -1, &iq, -1, &qinfo);
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  std::vector<R> rwork(static_cast<size_t>(IsComplexT<T>::value ? QueryToInt(rq) : 1));
  std::vector<int> iwork(static_cast<size_t>(std::max(iq, 1)));
  const int64_t step = int64_t{n} * n;
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::syevd(mode, uplo, n, a + i * step, Ld(n), w + i * n, work.data(),
                     static_cast<int>(work.size()), rwork.data(), static_cast<int>(rwork.size()),
                     iwork.data(), static_cast<int>(iwork.size()), info + i);
  }
  return Status::Ok();
}

// gesdd (divide and conquer) and gesvd (QR iteration, jax's
// SvdAlgorithm.QR) take one binding: (a) -> (a, s, u, vt, info), mode
// 'A' / 'S' / 'N'.
template <typename T, bool kQr = false>
Status Gesdd(Call& c) {
  using R = typename RealOf<T>::type;
  JITD_RETURN_IF_ERROR(c.Arity(1, 5));
  JITD_ASSIGN_OR_RETURN(char mode, c.Char("mode", "ASNO"));
  if (mode == 'O') return c.Unsupported("mode 'O' (overwrite a with U or V^T) is not supported, as in jaxlib");
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  const int m = s.rows, n = s.cols, k = std::min(m, n);
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<R>(), s.batch * k));
  JITD_RETURN_IF_ERROR(Expect(c, true, 4, DType::kS32, s.batch));
  // U and V^T as the program shapes them: (m x m, n x n) for 'A',
  // (m x k, k x n) for 'S'; for 'N' LAPACK leaves them alone.
  int ucols = 0, vtrows = 0;
  if (mode == 'A') {
    ucols = m;
    vtrows = n;
  } else if (mode == 'S') {
    ucols = k;
    vtrows = k;
  }
  if (mode != 'N') {
    JITD_RETURN_IF_ERROR(Expect(c, true, 2, DTypeOf<T>(), s.batch * m * ucols));
    JITD_RETURN_IF_ERROR(Expect(c, true, 3, DTypeOf<T>(), s.batch * vtrows * n));
  } else {
    JITD_RETURN_IF_ERROR(Expect(c, true, 2, DTypeOf<T>(), c.out[2].num_elements()));
    JITD_RETURN_IF_ERROR(Expect(c, true, 3, DTypeOf<T>(), c.out[3].num_elements()));
  }
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  R* sv = c.out[1].data<R>();
  T* u = c.out[2].data<T>();
  T* vt = c.out[3].data<T>();
  int* info = c.out[4].data<int>();
  const int ldu = Ld(m), ldvt = Ld(vtrows);
  T wq{};
  int qinfo = 0;
  std::vector<int> iwork(static_cast<size_t>(std::max(8 * k, 1)));
  std::vector<R> rwork;
  if constexpr (IsComplexT<T>::value) {
    const int64_t mx = std::max(m, n);
    const int64_t need = kQr ? 5 * int64_t{k}
                         : mode == 'N' ? 7 * int64_t{k}
                                       : std::max(5 * int64_t{k} * k + 5 * int64_t{k},
                                                  2 * mx * k + 2 * int64_t{k} * k + k);
    rwork.resize(static_cast<size_t>(std::max<int64_t>(need, 1)));
  }
  // gesvd references U and V^T even for 'N' (with leading dimension 1).
  T scratch[1];
  auto u_at = [&](int64_t i) { return mode == 'N' ? (kQr ? scratch : nullptr) : u + i * int64_t{m} * ucols; };
  auto vt_at = [&](int64_t i) { return mode == 'N' ? (kQr ? scratch : nullptr) : vt + i * int64_t{vtrows} * n; };
  if constexpr (kQr) {
    Lapack<T>::gesvd(mode, m, n, nullptr, Ld(m), nullptr, scratch, ldu, scratch, ldvt, &wq, -1,
                     rwork.data(), &qinfo);
  } else {
    Lapack<T>::gesdd(mode, m, n, nullptr, Ld(m), nullptr, nullptr, ldu, nullptr, ldvt, &wq, -1,
                     nullptr, iwork.data(), &qinfo);
  }
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  for (int64_t i = 0; i < s.batch; ++i) {
    if constexpr (kQr) {
      Lapack<T>::gesvd(mode, m, n, a + i * int64_t{m} * n, Ld(m), sv + i * k, u_at(i), ldu, vt_at(i),
                       ldvt, work.data(), static_cast<int>(work.size()), rwork.data(), info + i);
    } else {
      Lapack<T>::gesdd(mode, m, n, a + i * int64_t{m} * n, Ld(m), sv + i * k, u_at(i), ldu, vt_at(i),
                       ldvt, work.data(), static_cast<int>(work.size()), rwork.data(), iwork.data(),
                       info + i);
    }
  }
  return Status::Ok();
}

template <typename T>
Status Gesvd(Call& c) {
  return Gesdd<T, true>(c);
}

// geqp3 (QR with column pivoting): (a, jpvt) -> (a, jpvt, tau); jpvt's
// nonzero entries (1-based) pin columns to the front, as in LAPACK, and
// come back as the permutation.
template <typename T>
Status Geqp3(Call& c) {
  using R = typename RealOf<T>::type;
  JITD_RETURN_IF_ERROR(c.Arity(2, 3));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  const int k = std::min(s.rows, s.cols);
  if (c.in[0].type.dtype() != DTypeOf<T>()) {
    return c.Fail("operand 0 must have element type " + std::string(ir::DTypeName(DTypeOf<T>())) + ", got " +
                  c.in[0].type.ToString());
  }
  if (c.in[1].type.dtype() != DType::kS32 || c.in[1].num_elements() != s.batch * s.cols) {
    return c.Fail("operand 1 (jpvt) must be i32 with " + std::to_string(s.batch * s.cols) +
                  " elements, got " + c.in[1].type.ToString());
  }
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DType::kS32, s.batch * s.cols));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DTypeOf<T>(), s.batch * k));
  Seed(c.out[0], c.in[0]);
  Seed(c.out[1], c.in[1]);
  T* a = c.out[0].data<T>();
  int* jpvt = c.out[1].data<int>();
  T* tau = c.out[2].data<T>();
  std::vector<R> rwork(static_cast<size_t>(std::max(2 * s.cols, 1)));
  T wq{};
  int info = 0;
  Lapack<T>::geqp3(s.rows, s.cols, nullptr, Ld(s.rows), nullptr, nullptr, &wq, -1, rwork.data(), &info);
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  const int64_t step = int64_t{s.rows} * s.cols;
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::geqp3(s.rows, s.cols, a + i * step, Ld(s.rows), jpvt + i * s.cols, tau + i * k,
                     work.data(), static_cast<int>(work.size()), rwork.data(), &info);
  }
  return Status::Ok();
}

// ormqr / unmqr: (a, tau, c) -> c_out = op(Q) c (left) or c op(Q) (right),
// Q the product of the k reflectors in a's columns (geqrf's output), op
// the (conjugate) transpose when `transpose`.
template <typename T>
Status Ormqr(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(3, 1));
  JITD_ASSIGN_OR_RETURN(bool left, c.Bool("left", true));
  JITD_ASSIGN_OR_RETURN(bool transpose, c.Bool("transpose", false));
  JITD_ASSIGN_OR_RETURN(Batched h, SplitMatrix(c, c.in[0], "operand 0 (a)"));
  JITD_ASSIGN_OR_RETURN(Batched x, SplitMatrix(c, c.in[2], "operand 2 (c)"));
  if (c.in[1].rank() < 1) return c.Fail("operand 1 (tau) must have rank >= 1");
  const int64_t k64 = c.in[1].dim(c.in[1].rank() - 1);
  const int order = left ? x.rows : x.cols;
  if (h.batch != x.batch || h.rows != order || k64 > std::min(h.rows, h.cols) || k64 > order) {
    return c.Fail("a " + c.in[0].type.ToString() + ", tau " + c.in[1].type.ToString() + " and c " +
                  c.in[2].type.ToString() + " do not fit together (left = " + (left ? "true" : "false") + ")");
  }
  const int k = static_cast<int>(k64);
  JITD_RETURN_IF_ERROR(Expect(c, false, 1, DTypeOf<T>(), h.batch * k));
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[2].num_elements()));
  Seed(c.out[0], c.in[2]);
  const char side = left ? 'L' : 'R';
  const char trans = !transpose ? 'N' : (IsComplexT<T>::value ? 'C' : 'T');
  T* cm = c.out[0].data<T>();
  const T* am = c.in[0].data<T>();
  const T* tau = c.in[1].data<T>();
  T wq{};
  int info = 0;
  Lapack<T>::ormqr(side, trans, x.rows, x.cols, k, nullptr, Ld(h.rows), nullptr, nullptr, Ld(x.rows), &wq,
                   -1, &info);
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  for (int64_t i = 0; i < x.batch; ++i) {
    Lapack<T>::ormqr(side, trans, x.rows, x.cols, k, am + i * int64_t{h.rows} * h.cols, Ld(h.rows),
                     tau + i * k, cm + i * int64_t{x.rows} * x.cols, Ld(x.rows), work.data(),
                     static_cast<int>(work.size()), &info);
  }
  return Status::Ok();
}

template <typename R>
bool AllFinite(const R* a, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(std::real(a[i])) || !std::isfinite(std::imag(a[i]))) return false;
  }
  return true;
}

// LAPACK's real eigenvectors pack a conjugate pair's real and imaginary
// parts in two adjacent columns; spread them into complex columns.
template <typename R>
void UnpackEigenvectors(int n, const R* wi, const R* packed, std::complex<R>* out) {
  for (int j = 0; j < n;) {
    const int64_t cj = int64_t{j} * n;
    if (wi[j] == R(0) || std::isnan(wi[j]) || j + 1 == n) {
      for (int i = 0; i < n; ++i) out[cj + i] = {packed[cj + i], R(0)};
      ++j;
    } else {
      const int64_t cn = cj + n;
      for (int i = 0; i < n; ++i) {
        out[cj + i] = {packed[cj + i], packed[cn + i]};
        out[cn + i] = {packed[cj + i], -packed[cn + i]};
      }
      j += 2;
    }
  }
}

template <typename T>
Status Geev(Call& c) {
  using R = typename RealOf<T>::type;
  using C = std::complex<R>;
  constexpr bool kComplex = IsComplexT<T>::value;
  JITD_RETURN_IF_ERROR(c.Arity(1, kComplex ? 4 : 5));
  JITD_ASSIGN_OR_RETURN(char jobvl, c.Char("compute_left", "NV"));
  JITD_ASSIGN_OR_RETURN(char jobvr, c.Char("compute_right", "NV"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (s.rows != s.cols) return c.Fail("needs square matrices, got " + c.in[0].type.ToString());
  const int n = s.cols;
  const int64_t nn = int64_t{n} * n;
  const size_t first_vec = kComplex ? 1 : 2;
  if (kComplex) {
    JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), s.batch * n));
  } else {
    JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), s.batch * n));
    JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<T>(), s.batch * n));
  }
  JITD_RETURN_IF_ERROR(Expect(c, true, first_vec, DTypeOf<C>(), s.batch * nn));
  JITD_RETURN_IF_ERROR(Expect(c, true, first_vec + 1, DTypeOf<C>(), s.batch * nn));
  JITD_RETURN_IF_ERROR(Expect(c, true, first_vec + 2, DType::kS32, s.batch));
  std::vector<T> a(static_cast<size_t>(nn));
  std::vector<T> vl(static_cast<size_t>(nn)), vr(static_cast<size_t>(nn));
  const T* in = c.in[0].data<T>();
  C* vl_out = c.out[first_vec].data<C>();
  C* vr_out = c.out[first_vec + 1].data<C>();
  int* info = c.out[first_vec + 2].data<int>();
  T wq{};
  int qinfo = 0;
  std::vector<R> rwork(static_cast<size_t>(std::max(2 * n, 1)));
  if constexpr (kComplex) {
    Lapack<T>::geev(jobvl, jobvr, n, a.data(), Ld(n), nullptr, vl.data(), Ld(n), vr.data(), Ld(n),
                    &wq, -1, rwork.data(), &qinfo);
  } else {
    Lapack<T>::geev(jobvl, jobvr, n, a.data(), Ld(n), nullptr, nullptr, vl.data(), Ld(n),
                    vr.data(), Ld(n), &wq, -1, &qinfo);
  }
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  for (int64_t i = 0; i < s.batch; ++i) {
    std::copy_n(in + i * nn, nn, a.data());
    if (!AllFinite(a.data(), nn)) {
      info[i] = -4;  // jaxlib's mark for a matrix with NaN or infinity
      continue;
    }
    if constexpr (kComplex) {
      T* w = c.out[0].data<T>() + i * n;
      Lapack<T>::geev(jobvl, jobvr, n, a.data(), Ld(n), w, vl.data(), Ld(n), vr.data(), Ld(n),
                      work.data(), static_cast<int>(work.size()), rwork.data(), info + i);
      if (info[i] == 0) {
        if (jobvl == 'V') std::copy_n(vl.data(), nn, vl_out + i * nn);
        if (jobvr == 'V') std::copy_n(vr.data(), nn, vr_out + i * nn);
      }
    } else {
      T* wr = c.out[0].data<T>() + i * n;
      T* wi = c.out[1].data<T>() + i * n;
      Lapack<T>::geev(jobvl, jobvr, n, a.data(), Ld(n), wr, wi, vl.data(), Ld(n), vr.data(), Ld(n),
                      work.data(), static_cast<int>(work.size()), info + i);
      if (info[i] == 0) {
        if (jobvl == 'V') UnpackEigenvectors(n, wi, vl.data(), vl_out + i * nn);
        if (jobvr == 'V') UnpackEigenvectors(n, wi, vr.data(), vr_out + i * nn);
      }
    }
  }
  return Status::Ok();
}

template <typename T>
Status Gees(Call& c) {
  using R = typename RealOf<T>::type;
  constexpr bool kComplex = IsComplexT<T>::value;
  JITD_RETURN_IF_ERROR(c.Arity(1, kComplex ? 5 : 6));
  JITD_ASSIGN_OR_RETURN(char mode, c.Char("mode", "NV"));
  JITD_ASSIGN_OR_RETURN(char sort, c.Char("sort", "NS"));
  if (sort != 'N') {
    return c.Unsupported("sort 'S' (ordering eigenvalues by a select function) is not supported, as in jaxlib");
  }
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (s.rows != s.cols) return c.Fail("needs square matrices, got " + c.in[0].type.ToString());
  const int n = s.cols;
  const int64_t nn = int64_t{n} * n;
  const size_t sdim_index = kComplex ? 3 : 4;
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<T>(), s.batch * nn));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DTypeOf<T>(), s.batch * n));
  if (!kComplex) JITD_RETURN_IF_ERROR(Expect(c, true, 3, DTypeOf<T>(), s.batch * n));
  JITD_RETURN_IF_ERROR(Expect(c, true, sdim_index, DType::kS32, s.batch));
  JITD_RETURN_IF_ERROR(Expect(c, true, sdim_index + 1, DType::kS32, s.batch));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  T* vs = c.out[1].data<T>();
  int* sdim = c.out[sdim_index].data<int>();
  int* info = c.out[sdim_index + 1].data<int>();
  T wq{};
  int qinfo = 0, qsdim = 0;
  std::vector<R> rwork(static_cast<size_t>(std::max(n, 1)));
  if constexpr (kComplex) {
    Lapack<T>::gees(mode, sort, n, nullptr, Ld(n), &qsdim, nullptr, nullptr, Ld(n), &wq, -1,
                    rwork.data(), &qinfo);
  } else {
    Lapack<T>::gees(mode, sort, n, nullptr, Ld(n), &qsdim, nullptr, nullptr, nullptr, Ld(n), &wq,
                    -1, &qinfo);
  }
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  for (int64_t i = 0; i < s.batch; ++i) {
    if constexpr (kComplex) {
      Lapack<T>::gees(mode, sort, n, a + i * nn, Ld(n), sdim + i, c.out[2].data<T>() + i * n,
                      vs + i * nn, Ld(n), work.data(), static_cast<int>(work.size()),
                      rwork.data(), info + i);
    } else {
      Lapack<T>::gees(mode, sort, n, a + i * nn, Ld(n), sdim + i, c.out[2].data<T>() + i * n,
                      c.out[3].data<T>() + i * n, vs + i * nn, Ld(n), work.data(),
                      static_cast<int>(work.size()), info + i);
    }
  }
  return Status::Ok();
}

template <typename T>
Status Gehrd(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(1, 3));
  JITD_ASSIGN_OR_RETURN(int low, c.Int("low"));
  JITD_ASSIGN_OR_RETURN(int high, c.Int("high"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (s.rows != s.cols) return c.Fail("needs square matrices, got " + c.in[0].type.ToString());
  const int n = s.cols;
  if (n > 0 && (low < 1 || high < std::min(low, n) || high > n)) {
    return c.Fail("needs 1 <= low <= high <= n = " + std::to_string(n) + ", got low = " +
                  std::to_string(low) + ", high = " + std::to_string(high));
  }
  const int tau_n = std::max(n - 1, 0);
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<T>(), s.batch * tau_n));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DType::kS32, s.batch));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  T* tau = c.out[1].data<T>();
  int* info = c.out[2].data<int>();
  T wq{};
  int qinfo = 0;
  Lapack<T>::gehrd(n, low, high, nullptr, Ld(n), nullptr, &wq, -1, &qinfo);
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::gehrd(n, low, high, a + i * int64_t{n} * n, Ld(n), tau + i * tau_n, work.data(),
                     static_cast<int>(work.size()), info + i);
  }
  return Status::Ok();
}

template <typename T>
Status Sytrd(Call& c) {
  using R = typename RealOf<T>::type;
  JITD_RETURN_IF_ERROR(c.Arity(1, 5));
  JITD_ASSIGN_OR_RETURN(char uplo, c.Char("uplo", "LU"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[0], "operand 0"));
  if (s.rows != s.cols) return c.Fail("needs square matrices, got " + c.in[0].type.ToString());
  const int n = s.cols;
  const int off = std::max(n - 1, 0);
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[0].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DTypeOf<R>(), s.batch * n));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DTypeOf<R>(), s.batch * off));
  JITD_RETURN_IF_ERROR(Expect(c, true, 3, DTypeOf<T>(), s.batch * off));
  JITD_RETURN_IF_ERROR(Expect(c, true, 4, DType::kS32, s.batch));
  Seed(c.out[0], c.in[0]);
  T* a = c.out[0].data<T>();
  R* d = c.out[1].data<R>();
  R* e = c.out[2].data<R>();
  T* tau = c.out[3].data<T>();
  int* info = c.out[4].data<int>();
  T wq{};
  int qinfo = 0;
  Lapack<T>::sytrd(uplo, n, nullptr, Ld(n), nullptr, nullptr, nullptr, &wq, -1, &qinfo);
  std::vector<T> work(static_cast<size_t>(QueryToInt(wq)));
  for (int64_t i = 0; i < s.batch; ++i) {
    Lapack<T>::sytrd(uplo, n, a + i * int64_t{n} * n, Ld(n), d + i * n, e + i * off,
                     tau + i * off, work.data(), static_cast<int>(work.size()), info + i);
  }
  return Status::Ok();
}

template <typename T>
Status Gtsv(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(4, 5));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[3], "operand 3 (b)"));
  const int n = s.rows, nrhs = s.cols;
  for (size_t i = 0; i < 3; ++i) {
    JITD_RETURN_IF_ERROR(Expect(c, false, i, DTypeOf<T>(), s.batch * n));
    JITD_RETURN_IF_ERROR(Expect(c, true, i, DTypeOf<T>(), s.batch * n));
  }
  JITD_RETURN_IF_ERROR(Expect(c, true, 3, DTypeOf<T>(), c.in[3].num_elements()));
  JITD_RETURN_IF_ERROR(Expect(c, true, 4, DType::kS32, s.batch));
  for (size_t i = 0; i < 4; ++i) Seed(c.out[i], c.in[i]);
  T* dl = c.out[0].data<T>();
  T* d = c.out[1].data<T>();
  T* du = c.out[2].data<T>();
  T* b = c.out[3].data<T>();
  int* info = c.out[4].data<int>();
  for (int64_t i = 0; i < s.batch; ++i) {
    // dl[0] and du[n-1] lie outside the matrix (jax's convention); LAPACK
    // takes the n-1 elements of each off-diagonal.
    Lapack<T>::gtsv(n, nrhs, dl + i * n + (n > 0 ? 1 : 0), d + i * n, du + i * n,
                    b + i * int64_t{n} * nrhs, Ld(n), info + i);
  }
  return Status::Ok();
}

// tridiagonal_solve_perturbed_ffi (jax's tridiagonal_solve with
// perturb_singular = True): (dl, d, du, b) -> x for one element type of
// the four, the vectors as gtsv's (dl[0] and du[n-1] outside the matrix).
// Gaussian elimination with partial pivoting as LAPACK's ?lagtf chooses
// pivots (the larger of |a(k,k)| / row_scale and |a(k+1,k)| / row_scale,
// each row's scale the sum of its entries' magnitudes), the forward solve
// done as the rows are eliminated; then back substitution where a pivot
// too small for its row of the right-hand sides is perturbed as ?lagts
// with JOB = -1 does it: by eps * max |U| (signed as the pivot's real part,
// doubled until the quotient cannot overflow), or the row scaled up when
// the pivot is merely below the underflow threshold. A singular matrix
// gives a finite, large solution (what inverse iteration wants).
template <typename T>
void SolvePerturbed(int n, int nrhs, const T* dl, const T* d, const T* du, const T* b, T* x) {
  using R = typename RealOf<T>::type;
  if (n == 0) return;
  const R eps = std::numeric_limits<R>::epsilon();
  const R tiny = std::numeric_limits<R>::min();
  const R small = R(1) / std::numeric_limits<R>::max();
  const R safe_min = small < tiny ? tiny : small * (R(1) + eps);
  const R big = R(1) / safe_min;
  // Column-major: element (i, j) at i + j * n.
  auto at = [&](T* m, int i, int j) -> T& { return m[i + static_cast<int64_t>(j) * n]; };
  std::vector<T> u0(static_cast<size_t>(n)), u1(static_cast<size_t>(n)), u2(static_cast<size_t>(n));
  for (int j = 0; j < nrhs; ++j) at(x, 0, j) = b[static_cast<int64_t>(j) * n];
  u0[0] = d[0];
  u1[0] = n > 1 ? du[0] : T(0);
  R scale_top = std::abs(u0[0]) + std::abs(u1[0]);
  for (int k = 0; k + 1 < n; ++k) {
    const T below = dl[k + 1];
    const T next_diag = d[k + 1];
    const T next_super = k + 2 < n ? du[k + 1] : T(0);
    const R scale_next = std::abs(below) + std::abs(next_diag) + std::abs(next_super);
    u2[k] = T(0);
    if (below == T(0)) {
      u0[k + 1] = next_diag;
      u1[k + 1] = next_super;
      for (int j = 0; j < nrhs; ++j) at(x, k + 1, j) = b[k + 1 + static_cast<int64_t>(j) * n];
      scale_top = scale_next;
      continue;
    }
    const R top_ratio = u0[k] == T(0) ? R(0) : std::abs(u0[k]) / scale_top;
    const R below_ratio = std::abs(below) / scale_next;
    if (below_ratio <= top_ratio) {
      // Row k pivots: subtract its multiple from row k + 1.
      const T m = below / u0[k];
      u0[k + 1] = next_diag - m * u1[k];
      u1[k + 1] = next_super;
      for (int j = 0; j < nrhs; ++j) {
        at(x, k + 1, j) = b[k + 1 + static_cast<int64_t>(j) * n] - m * at(x, k, j);
      }
      scale_top = scale_next;
    } else {
      // Row k + 1 pivots: it becomes row k of U; the old row k, less its
      // multiple, goes on as row k + 1.
      const T m = u0[k] / below;
      const T old_super = u1[k];
      u0[k] = below;
      u1[k] = next_diag;
      u2[k] = next_super;
      u0[k + 1] = old_super - m * next_diag;
      u1[k + 1] = -m * next_super;
      for (int j = 0; j < nrhs; ++j) {
        const T rhs_next = b[k + 1 + static_cast<int64_t>(j) * n];
        at(x, k + 1, j) = at(x, k, j) - m * rhs_next;
        at(x, k, j) = rhs_next;
      }
      scale_top = std::abs(u0[k + 1]) + std::abs(u1[k + 1]);
    }
  }
  R max_u = 0;
  for (int k = 0; k < n; ++k) max_u = std::max({max_u, std::abs(u0[k]), std::abs(u1[k]), std::abs(u2[k])});
  const R perturbation = n == 1 ? eps * std::abs(u0[0]) : eps * max_u;
  std::vector<T> r(static_cast<size_t>(nrhs));
  for (int k = n - 1; k >= 0; --k) {
    R largest = 0;
    for (int j = 0; j < nrhs; ++j) {
      T v = at(x, k, j);
      if (k + 1 < n) v -= u1[k] * at(x, k + 1, j);
      if (k + 2 < n) v -= u2[k] * at(x, k + 2, j);
      r[static_cast<size_t>(j)] = v;
      largest = std::max(largest, std::abs(v));
    }
    T p = u0[k];
    R step = std::copysign(std::max(perturbation, safe_min), std::real(p));
    for (R mag = std::abs(p); mag < R(1);) {
      if (mag < safe_min) {
        if (mag == R(0) || largest * safe_min > mag) {
          p += step;
          step *= 2;
        } else {
          p *= big;
          for (T& v : r) v *= big;
          break;
        }
      } else if (largest > mag * big) {
        p += step;
        step *= 2;
      } else {
        break;
      }
      mag = std::abs(p);
    }
    const T inverse = T(1) / p;
    for (int j = 0; j < nrhs; ++j) at(x, k, j) = r[static_cast<size_t>(j)] * inverse;
  }
}

template <typename T>
Status TridiagonalPerturbedTyped(Call& c) {
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[3], "operand 3 (b)"));
  const int n = s.rows, nrhs = s.cols;
  for (size_t i = 0; i < 3; ++i) JITD_RETURN_IF_ERROR(Expect(c, false, i, DTypeOf<T>(), s.batch * n));
  JITD_RETURN_IF_ERROR(Expect(c, true, 0, DTypeOf<T>(), c.in[3].num_elements()));
  const T* dl = c.in[0].data<T>();
  const T* d = c.in[1].data<T>();
  const T* du = c.in[2].data<T>();
  const T* b = c.in[3].data<T>();
  T* x = c.out[0].data<T>();
  const int64_t step = int64_t{n} * nrhs;
  for (int64_t i = 0; i < s.batch; ++i) {
    SolvePerturbed<T>(n, nrhs, dl + i * n, d + i * n, du + i * n, b + i * step, x + i * step);
  }
  return Status::Ok();
}

Status TridiagonalPerturbed(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(4, 1));
  switch (c.in[3].type.dtype()) {
    case DType::kF32: return TridiagonalPerturbedTyped<float>(c);
    case DType::kF64: return TridiagonalPerturbedTyped<double>(c);
    case DType::kC64: return TridiagonalPerturbedTyped<jitd_c64>(c);
    case DType::kC128: return TridiagonalPerturbedTyped<jitd_c128>(c);
    default:
      return c.Fail("operand 3 (b) must be f32, f64, complex<f32> or complex<f64>, got " + c.in[3].type.ToString());
  }
}

// ---------------------------------------------------------------------------
// `ducc_fft`: jaxlib's CPU FFT before jax lowered jnp.fft to stablehlo.fft.
// Operands (descriptor, x): the descriptor a u8 vector holding a
// DuccFftDescriptor flatbuffer (jaxlib/cpu/ducc_fft.fbs: dtype, fft_type,
// shape, strides_in, strides_out, axes, forward, scale; read here by hand,
// bounds-checked), x row-major.

class FlatTable {
 public:
  // The root table of `bytes`, or an error naming what is malformed.
  static StatusOr<FlatTable> Root(std::span<const uint8_t> bytes) {
    FlatTable t{bytes, 0, 0, 0};
    JITD_ASSIGN_OR_RETURN(uint32_t root, t.U32(0));
    t.table_ = root;
    JITD_ASSIGN_OR_RETURN(uint32_t soff, t.U32(root));
    const int64_t vt = static_cast<int64_t>(root) - static_cast<int32_t>(soff);
    if (vt < 0 || static_cast<size_t>(vt) + 4 > bytes.size()) return Bad("vtable out of range");
    t.vtable_ = static_cast<size_t>(vt);
    JITD_ASSIGN_OR_RETURN(uint16_t vsize, t.U16(t.vtable_));
    t.vsize_ = vsize;
    return t;
  }
  // The byte position of field `i`, or 0 when absent (its default).
  StatusOr<size_t> Field(int i) const {
    const size_t slot = 4 + 2 * static_cast<size_t>(i);
    if (slot + 2 > vsize_) return size_t{0};
    JITD_ASSIGN_OR_RETURN(uint16_t off, U16(vtable_ + slot));
    if (off == 0) return size_t{0};
    if (table_ + off >= bytes_.size()) return Bad("field out of range");
    return table_ + off;
  }
  StatusOr<int64_t> Int8(int i, int64_t def) const {
    JITD_ASSIGN_OR_RETURN(size_t at, Field(i));
    if (!at) return def;
    return static_cast<int8_t>(bytes_[at]);
  }
  StatusOr<double> Double(int i, double def) const {
    JITD_ASSIGN_OR_RETURN(size_t at, Field(i));
    if (!at) return def;
    if (at + 8 > bytes_.size()) return Bad("double out of range");
    double v;
    std::memcpy(&v, bytes_.data() + at, 8);
    return v;
  }
  // A vector of unsigned integers of `width` bytes.
  StatusOr<std::vector<uint64_t>> Vector(int i, size_t width) const {
    JITD_ASSIGN_OR_RETURN(size_t at, Field(i));
    std::vector<uint64_t> out;
    if (!at) return out;
    JITD_ASSIGN_OR_RETURN(uint32_t rel, U32(at));
    const size_t vec = at + rel;
    JITD_ASSIGN_OR_RETURN(uint32_t n, U32(vec));
    if (n > 64 || vec + 4 + static_cast<size_t>(n) * width > bytes_.size()) return Bad("vector out of range");
    for (uint32_t k = 0; k < n; ++k) {
      uint64_t v = 0;
      std::memcpy(&v, bytes_.data() + vec + 4 + k * width, width);  // little-endian
      out.push_back(v);
    }
    return out;
  }

 private:
  FlatTable(std::span<const uint8_t> b, size_t t, size_t v, size_t s)
      : bytes_(b), table_(t), vtable_(v), vsize_(s) {}
  static Status Bad(const char* what) {
    return InvalidArgument(std::string("custom_call @ducc_fft: malformed descriptor (") + what + ")");
  }
  StatusOr<uint32_t> U32(size_t at) const {
    if (at + 4 > bytes_.size()) return Bad("offset out of range");
    uint32_t v;
    std::memcpy(&v, bytes_.data() + at, 4);
    return v;
  }
  StatusOr<uint16_t> U16(size_t at) const {
    if (at + 2 > bytes_.size()) return Bad("offset out of range");
    uint16_t v;
    std::memcpy(&v, bytes_.data() + at, 2);
    return v;
  }
  std::span<const uint8_t> bytes_;
  size_t table_, vtable_, vsize_;
};

// One complex transform of every line along `axis` of `data` (row-major
// `dims`), unscaled.
template <typename R>
void FftAxis(std::vector<std::complex<R>>& data, const std::vector<int64_t>& dims, size_t axis,
             bool inverse) {
  const int64_t n = dims[axis];
  if (n <= 1) return;
  kissfft<R> plan(static_cast<size_t>(n), inverse);
  int64_t inner = 1;
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t outer = static_cast<int64_t>(data.size()) / (n * inner);
  std::vector<std::complex<R>> line(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * n * inner + i;
      for (int64_t k = 0; k < n; ++k) line[static_cast<size_t>(k)] = data[static_cast<size_t>(base + k * inner)];
      plan.transform(line.data(), out.data());
      for (int64_t k = 0; k < n; ++k) data[static_cast<size_t>(base + k * inner)] = out[static_cast<size_t>(k)];
    }
  }
}

template <typename R>
Status DuccFftTyped(Call& c, int64_t fft_type, bool forward, double scale, const std::vector<size_t>& axes) {
  using C = std::complex<R>;
  const Buffer& x = c.in[1];
  Buffer& y = c.out[0];
  const bool r2c = fft_type == 2, c2r = fft_type == 1;
  const std::vector<int64_t>& cdims = r2c ? y.type.dims() : x.type.dims();  // the complex side
  std::vector<C> data(static_cast<size_t>(r2c ? y.num_elements() : x.num_elements()));
  const size_t last = static_cast<size_t>(x.rank() - 1);
  if (r2c) {
    const int64_t n = x.dim(static_cast<int64_t>(last)), half = cdims[last];
    const int64_t lines = n ? x.num_elements() / n : 0;
    const R* in = reinterpret_cast<const R*>(x.bytes.data());
    std::vector<C> line(static_cast<size_t>(n));
    for (int64_t b = 0; b < lines; ++b) {
      for (int64_t k = 0; k < n; ++k) line[static_cast<size_t>(k)] = C(in[b * n + k], 0);
      std::vector<int64_t> one = {n};
      FftAxis(line, one, 0, false);
      for (int64_t k = 0; k < half; ++k) data[static_cast<size_t>(b * half + k)] = line[static_cast<size_t>(k)];
    }
  } else {
    std::memcpy(data.data(), x.bytes.data(), data.size() * sizeof(C));
  }
  for (size_t axis : axes) {
    if ((r2c || c2r) && axis == last) continue;
    FftAxis(data, cdims, axis, !forward);
  }
  if (c2r) {
    const int64_t n = y.dim(static_cast<int64_t>(last)), half = cdims[last];
    const int64_t lines = n ? y.num_elements() / n : 0;
    R* out = reinterpret_cast<R*>(y.bytes.data());
    std::vector<C> line(static_cast<size_t>(n));
    for (int64_t b = 0; b < lines; ++b) {
      for (int64_t k = 0; k < n; ++k) {
        line[static_cast<size_t>(k)] = k < half ? data[static_cast<size_t>(b * half + k)]
                                                : std::conj(data[static_cast<size_t>(b * half + (n - k))]);
      }
      std::vector<int64_t> one = {n};
      FftAxis(line, one, 0, true);
      for (int64_t k = 0; k < n; ++k) out[b * n + k] = static_cast<R>(line[static_cast<size_t>(k)].real() * scale);
    }
    return Status::Ok();
  }
  C* out = reinterpret_cast<C*>(y.bytes.data());
  for (size_t i = 0; i < data.size(); ++i) out[i] = data[i] * static_cast<R>(scale);
  return Status::Ok();
}

Status DuccFft(Call& c) {
  JITD_RETURN_IF_ERROR(c.Arity(2, 1));
  const Buffer& d = c.in[0];
  if (d.type.dtype() != DType::kU8 || d.rank() != 1) {
    return c.Fail("operand 0 must be the descriptor, a 1-d ui8 tensor, got " + d.type.ToString());
  }
  JITD_ASSIGN_OR_RETURN(FlatTable t, FlatTable::Root(d.bytes));
  JITD_ASSIGN_OR_RETURN(int64_t dtype, t.Int8(0, 0));
  JITD_ASSIGN_OR_RETURN(int64_t fft_type, t.Int8(1, 0));
  JITD_ASSIGN_OR_RETURN(std::vector<uint64_t> shape, t.Vector(2, 8));
  JITD_ASSIGN_OR_RETURN(std::vector<uint64_t> axes64, t.Vector(5, 4));
  JITD_ASSIGN_OR_RETURN(int64_t forward, t.Int8(6, 0));
  JITD_ASSIGN_OR_RETURN(double scale, t.Double(7, 0.0));
  if (dtype != 0 && dtype != 1) return c.Fail("descriptor dtype " + std::to_string(dtype) + " is not COMPLEX64 or COMPLEX128");
  if (fft_type < 0 || fft_type > 2) return c.Fail("descriptor fft_type " + std::to_string(fft_type) + " is not C2C, C2R or R2C");
  const Buffer& x = c.in[1];
  const Buffer& y = c.out[0];
  const DType complex = dtype == 1 ? DType::kC128 : DType::kC64;
  const DType real = dtype == 1 ? DType::kF64 : DType::kF32;
  const DType want_in = fft_type == 2 ? real : complex, want_out = fft_type == 1 ? real : complex;
  if (x.type.dtype() != want_in || y.type.dtype() != want_out) {
    return c.Fail("descriptor says " + std::string(ir::DTypeName(want_in)) + " -> " +
                  std::string(ir::DTypeName(want_out)) + ", the call is " + x.type.ToString() + " -> " +
                  y.type.ToString());
  }
  // The descriptor's shape is the real side's for C2R, the operand's otherwise.
  const Type& full = fft_type == 1 ? y.type : x.type;
  bool shape_ok = static_cast<int64_t>(shape.size()) == full.rank() && x.rank() == y.rank();
  for (size_t i = 0; shape_ok && i < shape.size(); ++i) shape_ok = static_cast<int64_t>(shape[i]) == full.dim(static_cast<int64_t>(i));
  if (!shape_ok) return c.Fail("descriptor shape does not match " + full.ToString());
  const int64_t rank = x.rank();
  const size_t last = static_cast<size_t>(rank - 1);
  for (int64_t dim = 0; dim < rank; ++dim) {
    const bool halved = fft_type != 0 && dim == rank - 1;
    const int64_t cin = fft_type == 2 ? x.dim(dim) / 2 + 1 : x.dim(dim);
    if (!halved && x.dim(dim) != y.dim(dim)) return c.Fail("operand and result shapes differ");
    if (halved && (fft_type == 2 ? y.dim(dim) != cin : x.dim(dim) != y.dim(dim) / 2 + 1)) {
      return c.Fail("the last dimension does not match an R2C / C2R transform");
    }
  }
  // jaxlib wrote row-major strides (in elements); other strides are refused.
  JITD_ASSIGN_OR_RETURN(std::vector<uint64_t> strides_in, t.Vector(3, 8));
  JITD_ASSIGN_OR_RETURN(std::vector<uint64_t> strides_out, t.Vector(4, 8));
  auto row_major = [](const Type& type) {
    std::vector<uint64_t> st(static_cast<size_t>(type.rank()));
    uint64_t stride = 1;
    for (int64_t dim = type.rank() - 1; dim >= 0; --dim) {
      st[static_cast<size_t>(dim)] = stride;
      stride *= static_cast<uint64_t>(type.dim(dim));
    }
    return st;
  };
  if (strides_in != row_major(x.type) || strides_out != row_major(y.type)) {
    return c.Unsupported("descriptor strides are not row-major (jitd's buffers are)");
  }
  std::vector<size_t> axes;
  for (uint64_t a : axes64) {
    if (a >= static_cast<uint64_t>(rank)) return c.Fail("descriptor axis " + std::to_string(a) + " is out of range");
    axes.push_back(static_cast<size_t>(a));
  }
  if (axes.empty()) return c.Fail("descriptor has no axes");
  if (fft_type != 0 && axes.back() != last) {
    return c.Fail("an R2C / C2R transform must end with the last axis");
  }
  for (size_t k = 1; k < axes.size(); ++k) {
    if (axes[k] <= axes[k - 1]) return c.Fail("descriptor axes must increase");
  }
  if (fft_type == 2 && !forward) return c.Fail("R2C must be forward");
  if (fft_type == 1 && forward) return c.Fail("C2R must be backward");
  return dtype == 1 ? DuccFftTyped<double>(c, fft_type, forward != 0, scale, axes)
                    : DuccFftTyped<float>(c, fft_type, forward != 0, scale, axes);
}

// ---------------------------------------------------------------------------
// jaxlib's legacy targets (api_version 2, before the typed FFI: `lapack_spotrf`,
// `blas_strsm`, ...). Their flags and sizes travel as scalar operands ahead
// of the matrices and their results include LAPACK workspaces; each runs as
// the FFI kernel above on the matrix operands, the flags turned into that
// kernel's attributes. Workspace results are left zero (jax never reads
// them); the sizes must agree with the shapes.

using KernelFn = Status (*)(Call&);

StatusOr<int64_t> Scalar(const Call& c, size_t i, const char* what) {
  const Buffer& b = c.in[i];
  if (b.num_elements() != 1 || !(ir::IsInteger(b.type.dtype()) || ir::IsPred(b.type.dtype()))) {
    return c.Fail(std::string("operand ") + std::to_string(i) + " (" + what +
                  ") must be an integer scalar, got " + b.type.ToString());
  }
  Literal lit = *Literal::FromBytes(Type::Scalar(b.type.dtype()), b.bytes);
  return lit.GetInt(0);
}

struct LegacyAttr {
  const char* name;
  int64_t value;
  DType dtype;
};

// Runs `fn` on operands `ins` and results `outs` of `c` with `attrs` as its
// backend config.
Status RunAs(Call& c, KernelFn fn, std::vector<LegacyAttr> attrs, std::vector<size_t> ins,
             std::vector<size_t> outs) {
  ir::DictionaryAttr config;
  for (const LegacyAttr& a : attrs) config.entries.push_back({a.name, ir::IntegerAttr{a.value, a.dtype}});
  Call sub;
  sub.target = c.target;
  sub.op = c.op;
  sub.config = &config;
  for (size_t i : ins) sub.in.push_back(std::move(c.in[i]));
  for (size_t i : outs) sub.out.push_back(std::move(c.out[i]));
  Status s = fn(sub);
  for (size_t k = 0; k < ins.size(); ++k) c.in[ins[k]] = std::move(sub.in[k]);
  for (size_t k = 0; k < outs.size(); ++k) c.out[outs[k]] = std::move(sub.out[k]);
  return s;
}

Status SizeIs(const Call& c, size_t operand, const char* what, int64_t want) {
  JITD_ASSIGN_OR_RETURN(int64_t v, Scalar(c, operand, what));
  if (v != want) {
    return c.Fail(std::string("operand ") + std::to_string(operand) + " (" + what + ") is " +
                  std::to_string(v) + " but the shapes say " + std::to_string(want));
  }
  return Status::Ok();
}

constexpr DType kU8 = DType::kU8;

template <typename T>
Status LegacyPotrf(Call& c) {  // (lower, b, n, a) -> (a, info)
  JITD_RETURN_IF_ERROR(c.Arity(4, 2));
  JITD_ASSIGN_OR_RETURN(int64_t lower, Scalar(c, 0, "lower"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[3], "operand 3"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "n", s.cols));
  return RunAs(c, &Potrf<T>, {{"uplo", lower ? 'L' : 'U', kU8}}, {3}, {0, 1});
}

template <typename T>
Status LegacyGetrf(Call& c) {  // (b, m, n, a) -> (a, ipiv, info)
  JITD_RETURN_IF_ERROR(c.Arity(4, 3));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[3], "operand 3"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "m", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "n", s.cols));
  return RunAs(c, &Getrf<T>, {}, {3}, {0, 1, 2});
}

template <typename T>
Status LegacyGeqrf(Call& c) {  // (b, m, n, lwork, a) -> (a, tau, info, work)
  JITD_RETURN_IF_ERROR(c.Arity(5, 4));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[4], "operand 4"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "m", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "n", s.cols));
  JITD_RETURN_IF_ERROR(Expect(c, true, 2, DType::kS32, s.batch));
  return RunAs(c, &Geqrf<T>, {}, {4}, {0, 1});
}

template <typename T>
Status LegacyOrgqr(Call& c) {  // (b, m, n, k, lwork, a, tau) -> (a, info, work)
  JITD_RETURN_IF_ERROR(c.Arity(7, 3));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[5], "operand 5"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "m", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "n", s.cols));
  if (c.in[6].rank() < 1) return c.Fail("operand 6 (tau) must have rank >= 1");
  JITD_RETURN_IF_ERROR(SizeIs(c, 3, "k", c.in[6].dim(c.in[6].rank() - 1)));
  JITD_RETURN_IF_ERROR(Expect(c, true, 1, DType::kS32, s.batch));
  return RunAs(c, &Orgqr<T>, {}, {5, 6}, {0});
}

template <typename T>
Status LegacySyevd(Call& c) {  // (lower, b, n, a) -> (a, w, info, work..)
  JITD_RETURN_IF_ERROR(c.Arity(4, IsComplexT<T>::value ? 6 : 5));
  JITD_ASSIGN_OR_RETURN(int64_t lower, Scalar(c, 0, "lower"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[3], "operand 3"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "n", s.cols));
  return RunAs(c, &Syevd<T>, {{"mode", 'V', kU8}, {"uplo", lower ? 'L' : 'U', kU8}}, {3}, {0, 1, 2});
}

template <typename T>
Status LegacyGesdd(Call& c) {  // (full_matrices, compute_uv, b, m, n, lwork, a) -> (a, s, u, vt, info, ...)
  JITD_RETURN_IF_ERROR(c.Arity(7, IsComplexT<T>::value ? 8 : 7));
  JITD_ASSIGN_OR_RETURN(int64_t full, Scalar(c, 0, "full_matrices"));
  JITD_ASSIGN_OR_RETURN(int64_t uv, Scalar(c, 1, "compute_uv"));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[6], "operand 6"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 3, "m", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 4, "n", s.cols));
  const char mode = !uv ? 'N' : (full ? 'A' : 'S');
  return RunAs(c, &Gesdd<T>, {{"mode", mode, kU8}}, {6}, {0, 1, 2, 3, 4});
}

template <typename T>
Status LegacyGehrd(Call& c) {  // (n, ilo, ihi, lda, batch, lwork, a) -> (a, tau, info, work)
  JITD_RETURN_IF_ERROR(c.Arity(7, 4));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[6], "operand 6"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "n", s.cols));
  JITD_RETURN_IF_ERROR(SizeIs(c, 3, "lda", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 4, "batch", s.batch));
  JITD_ASSIGN_OR_RETURN(int64_t ilo, Scalar(c, 1, "ilo"));
  JITD_ASSIGN_OR_RETURN(int64_t ihi, Scalar(c, 2, "ihi"));
  return RunAs(c, &Gehrd<T>, {{"high", ihi, DType::kS32}, {"low", ilo, DType::kS32}}, {6}, {0, 1, 2});
}

template <typename T>
Status LegacySytrd(Call& c) {  // (n, lower, lda, batch, lwork, a) -> (a, d, e, tau, info, work)
  JITD_RETURN_IF_ERROR(c.Arity(6, 6));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[5], "operand 5"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "n", s.cols));
  JITD_RETURN_IF_ERROR(SizeIs(c, 2, "lda", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 3, "batch", s.batch));
  JITD_ASSIGN_OR_RETURN(int64_t lower, Scalar(c, 1, "lower"));
  return RunAs(c, &Sytrd<T>, {{"uplo", lower ? 'L' : 'U', kU8}}, {5}, {0, 1, 2, 3, 4});
}

template <typename T>
Status LegacyTrsm(Call& c) {  // (left_side, lower, trans_a, diag, m, n, batch, alpha, a, b) -> x
  JITD_RETURN_IF_ERROR(c.Arity(10, 1));
  JITD_ASSIGN_OR_RETURN(int64_t left, Scalar(c, 0, "left_side"));
  JITD_ASSIGN_OR_RETURN(int64_t lower, Scalar(c, 1, "lower"));
  JITD_ASSIGN_OR_RETURN(int64_t trans, Scalar(c, 2, "trans_a"));
  JITD_ASSIGN_OR_RETURN(int64_t unit, Scalar(c, 3, "diag"));
  if (trans < 0 || trans > 2) return c.Fail("operand 2 (trans_a) must be 0, 1 or 2, got " + std::to_string(trans));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[9], "operand 9 (b)"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 4, "m", s.rows));
  JITD_RETURN_IF_ERROR(SizeIs(c, 5, "n", s.cols));
  JITD_RETURN_IF_ERROR(SizeIs(c, 6, "batch", s.batch));
  return RunAs(c, &Trsm<T>,
               {{"diag", unit ? 'U' : 'N', kU8},
                {"side", left ? 'L' : 'R', kU8},
                {"trans_x", trans == 0 ? 'N' : (trans == 1 ? 'T' : 'C'), kU8},
                {"uplo", lower ? 'L' : 'U', kU8}},
               {8, 9, 7}, {0});
}

template <typename T>
Status LegacyGeev(Call& c) {
  // real: (b, n, jobvl, jobvr, a) -> (a_work, vl_work, vr_work, wr, wi, vl, vr, info)
  // complex: (b, n, jobvl, jobvr, a) -> (a_work, rwork, w, vl, vr, info)
  constexpr bool kComplex = IsComplexT<T>::value;
  JITD_RETURN_IF_ERROR(c.Arity(5, kComplex ? 6 : 8));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[4], "operand 4"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "n", s.cols));
  JITD_ASSIGN_OR_RETURN(int64_t jobvl, Scalar(c, 2, "jobvl"));
  JITD_ASSIGN_OR_RETURN(int64_t jobvr, Scalar(c, 3, "jobvr"));
  std::vector<LegacyAttr> attrs = {{"compute_left", jobvl, kU8}, {"compute_right", jobvr, kU8}};
  if constexpr (kComplex) return RunAs(c, &Geev<T>, attrs, {4}, {2, 3, 4, 5});
  return RunAs(c, &Geev<T>, attrs, {4}, {3, 4, 5, 6, 7});
}

template <typename T>
Status LegacyGees(Call& c) {
  // real: (b, n, jobvs, sort, a) -> (a, wr, wi, vs, sdim, info)
  // complex: (b, n, jobvs, sort, a) -> (a, rwork, w, vs, sdim, info)
  constexpr bool kComplex = IsComplexT<T>::value;
  JITD_RETURN_IF_ERROR(c.Arity(5, 6));
  JITD_ASSIGN_OR_RETURN(Batched s, SplitMatrix(c, c.in[4], "operand 4"));
  JITD_RETURN_IF_ERROR(SizeIs(c, 0, "batch", s.batch));
  JITD_RETURN_IF_ERROR(SizeIs(c, 1, "n", s.cols));
  JITD_ASSIGN_OR_RETURN(int64_t jobvs, Scalar(c, 2, "jobvs"));
  JITD_ASSIGN_OR_RETURN(int64_t sort, Scalar(c, 3, "sort"));
  std::vector<LegacyAttr> attrs = {{"mode", jobvs, kU8}, {"sort", sort, kU8}};
  if constexpr (kComplex) return RunAs(c, &Gees<T>, attrs, {4}, {0, 3, 2, 4, 5});
  return RunAs(c, &Gees<T>, attrs, {4}, {0, 3, 1, 2, 4, 5});
}

// ---------------------------------------------------------------------------
// The registry.

struct Entry {
  KernelFn fn;
  DType dtype;  // the element type the name's type letter stands for
  bool legacy = false;  // takes integer scalar operands (flags, sizes)
  bool own_types = false;  // the kernel checks its operands' types itself
};

const std::map<std::string, Entry, std::less<>>& Registry() {
  static const auto* registry = [] {
    auto* r = new std::map<std::string, Entry, std::less<>>();
    auto add4 = [&](const std::string& routine, const std::string& complex_routine,
                    KernelFn s, KernelFn d, KernelFn cc, KernelFn z) {
      r->emplace("lapack_s" + routine + "_ffi", Entry{s, DType::kF32});
      r->emplace("lapack_d" + routine + "_ffi", Entry{d, DType::kF64});
      r->emplace("lapack_c" + complex_routine + "_ffi", Entry{cc, DType::kC64});
      r->emplace("lapack_z" + complex_routine + "_ffi", Entry{z, DType::kC128});
    };
#define JITD_ADD(routine, complex_routine, Fn) \
  add4(routine, complex_routine, &Fn<float>, &Fn<double>, &Fn<jitd_c64>, &Fn<jitd_c128>)
    JITD_ADD("potrf", "potrf", Potrf);
    JITD_ADD("getrf", "getrf", Getrf);
    JITD_ADD("geqrf", "geqrf", Geqrf);
    JITD_ADD("orgqr", "ungqr", Orgqr);
    JITD_ADD("trsm", "trsm", Trsm);
    JITD_ADD("syevd", "heevd", Syevd);
    JITD_ADD("gesdd", "gesdd", Gesdd);
    JITD_ADD("geev", "geev", Geev);
    JITD_ADD("gees", "gees", Gees);
    JITD_ADD("gehrd", "gehrd", Gehrd);
    JITD_ADD("sytrd", "hetrd", Sytrd);
    JITD_ADD("gtsv", "gtsv", Gtsv);
    JITD_ADD("gesvd", "gesvd", Gesvd);
    JITD_ADD("ormqr", "unmqr", Ormqr);
#undef JITD_ADD
    // The legacy targets.
    auto legacy4 = [&](const std::string& routine, const std::string& complex_routine, KernelFn s,
                       KernelFn d, KernelFn cc, KernelFn z, const std::string& prefix) {
      r->emplace(prefix + "s" + routine, Entry{s, DType::kF32, true});
      r->emplace(prefix + "d" + routine, Entry{d, DType::kF64, true});
      r->emplace(prefix + "c" + complex_routine, Entry{cc, DType::kC64, true});
      r->emplace(prefix + "z" + complex_routine, Entry{z, DType::kC128, true});
    };
#define JITD_ADD_LEGACY(routine, complex_routine, Fn, prefix)                             \
  legacy4(routine, complex_routine, &Fn<float>, &Fn<double>, &Fn<jitd_c64>, &Fn<jitd_c128>, \
          prefix)
    JITD_ADD_LEGACY("potrf", "potrf", LegacyPotrf, "lapack_");
    JITD_ADD_LEGACY("getrf", "getrf", LegacyGetrf, "lapack_");
    JITD_ADD_LEGACY("geqrf", "geqrf", LegacyGeqrf, "lapack_");
    JITD_ADD_LEGACY("orgqr", "ungqr", LegacyOrgqr, "lapack_");
    JITD_ADD_LEGACY("syevd", "heevd", LegacySyevd, "lapack_");
    JITD_ADD_LEGACY("gesdd", "gesdd", LegacyGesdd, "lapack_");
    JITD_ADD_LEGACY("gehrd", "gehrd", LegacyGehrd, "lapack_");
    JITD_ADD_LEGACY("sytrd", "hetrd", LegacySytrd, "lapack_");
    JITD_ADD_LEGACY("geev", "geev", LegacyGeev, "lapack_");
    JITD_ADD_LEGACY("gees", "gees", LegacyGees, "lapack_");
    JITD_ADD_LEGACY("trsm", "trsm", LegacyTrsm, "blas_");
#undef JITD_ADD_LEGACY
    r->emplace("ducc_fft", Entry{&DuccFft, DType::kU8, false, true});
    r->emplace("tridiagonal_solve_perturbed_ffi", Entry{&TridiagonalPerturbed, DType::kF32, false, true});
    // geqp3's jpvt operand is i32: the kernel checks its operands itself.
    r->emplace("lapack_sgeqp3_ffi", Entry{&Geqp3<float>, DType::kF32, false, true});
    r->emplace("lapack_dgeqp3_ffi", Entry{&Geqp3<double>, DType::kF64, false, true});
    r->emplace("lapack_cgeqp3_ffi", Entry{&Geqp3<jitd_c64>, DType::kC64, false, true});
    r->emplace("lapack_zgeqp3_ffi", Entry{&Geqp3<jitd_c128>, DType::kC128, false, true});
    // trsm's name before jaxlib moved it from blas_ to lapack_.
    r->emplace("blas_strsm_ffi", Entry{&Trsm<float>, DType::kF32});
    r->emplace("blas_dtrsm_ffi", Entry{&Trsm<double>, DType::kF64});
    r->emplace("blas_ctrsm_ffi", Entry{&Trsm<jitd_c64>, DType::kC64});
    r->emplace("blas_ztrsm_ffi", Entry{&Trsm<jitd_c128>, DType::kC128});
    return r;
  }();
  return *registry;
}

// `shape_assertion(%pred, %dim...) {error_message = "... {0} ..."}`: jax's
// check of shape-polymorphic dimensions, a no-op when %pred holds.
StatusOr<std::vector<Literal>> ShapeAssertion(const ir::Op& op,
                                              std::span<const Literal* const> operands) {
  if (operands.empty() || operands[0]->dtype() != DType::kPred || operands[0]->num_elements() != 1) {
    return InvalidArgument("custom_call @shape_assertion needs a tensor<i1> first operand");
  }
  if (op.num_results() != 0) {
    return InvalidArgument("custom_call @shape_assertion has no results, got " +
                           std::to_string(op.num_results()));
  }
  if (operands[0]->GetPred(0)) return std::vector<Literal>{};
  std::string message = "shape assertion failed";
  if (const ir::Attribute* a = op.attr("error_message")) {
    if (const auto* s = a->get_if<ir::StringAttr>()) message = s->value;
  }
  // Fill `{i}` with the i-th dimension operand (operand i + 1).
  std::string filled;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '{') {
      const size_t close = message.find('}', i);
      if (close != std::string::npos && close > i + 1 && close - i <= 4) {
        const std::string digits = message.substr(i + 1, close - i - 1);
        if (std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
          const size_t k = static_cast<size_t>(std::stoi(digits)) + 1;
          if (k < operands.size() && operands[k]->num_elements() == 1 &&
              ir::IsInteger(operands[k]->dtype())) {
            filled += std::to_string(operands[k]->GetInt(0));
            i = close;
            continue;
          }
        }
      }
    }
    filled += message[i];
  }
  return InvalidArgument("custom_call @shape_assertion: " + filled);
}

// Reads the layouts attribute `name` (operand_layouts / result_layouts) for
// `types`; default (row-major) layouts when it is absent.
StatusOr<std::vector<std::vector<int64_t>>> Layouts(const ir::Op& op, std::string_view name,
                                                    const std::vector<Type>& types,
                                                    const std::string& target) {
  std::vector<std::vector<int64_t>> layouts;
  const ir::Attribute* attr = op.attr(name);
  if (!attr) {
    for (const Type& t : types) layouts.push_back(DefaultLayout(t.is_tensor() ? t.rank() : 0));
    return layouts;
  }
  const auto* array = attr->get_if<ir::ArrayAttr>();
  if (!array || array->elements.size() != types.size()) {
    return InvalidArgument("custom_call @" + target + ": " + std::string(name) + " must hold " +
                           std::to_string(types.size()) + " layouts, one per value");
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const auto* dense = array->elements[i].get_if<ir::DenseElementsAttr>();
    auto lit = dense ? ir::DenseElementsToLiteral(*dense) : StatusOr<Literal>(InvalidArgument(""));
    if (!dense || !lit.ok() || !ir::IsInteger(lit->dtype()) || lit->type().rank() != 1) {
      return InvalidArgument("custom_call @" + target + ": " + std::string(name) + "[" +
                             std::to_string(i) + "] must be a dense 1-d integer (index) tensor");
    }
    std::vector<int64_t> m2m;
    for (int64_t k = 0; k < lit->num_elements(); ++k) m2m.push_back(lit->GetInt(k));
    const int64_t rank = types[i].rank();
    std::vector<int64_t> sorted = m2m;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int64_t>(m2m.size()) == rank;
    for (int64_t k = 0; ok && k < rank; ++k) ok = sorted[static_cast<size_t>(k)] == k;
    if (!ok) {
      std::string text;
      for (int64_t v : m2m) text += (text.empty() ? "" : ", ") + std::to_string(v);
      return InvalidArgument("custom_call @" + target + ": " + std::string(name) + "[" +
                             std::to_string(i) + "] = [" + text + "] is not a permutation of the " +
                             std::to_string(rank) + " dimensions of " + types[i].ToString());
    }
    layouts.push_back(std::move(m2m));
  }
  return layouts;
}

}  // namespace

StatusOr<std::vector<int64_t>> ShapeOperandIndices(const ir::Op& op) {
  std::vector<int64_t> out;
  const ir::Attribute* a = op.attr("indices_of_shape_operands");
  if (!a) return out;
  const auto* dense = a->get_if<ir::DenseElementsAttr>();
  auto lit = dense ? ir::DenseElementsToLiteral(*dense) : StatusOr<Literal>(InvalidArgument(""));
  if (!dense || !lit.ok() || !ir::IsInteger(lit->dtype()) || lit->type().rank() != 1) {
    return InvalidArgument("custom_call: indices_of_shape_operands must be a dense 1-d integer tensor");
  }
  for (int64_t k = 0; k < lit->num_elements(); ++k) {
    const int64_t v = lit->GetInt(k);
    if (v < 0 || v >= static_cast<int64_t>(op.num_operands())) {
      return InvalidArgument("custom_call: indices_of_shape_operands names operand " + std::to_string(v) +
                             " of " + std::to_string(op.num_operands()));
    }
    out.push_back(v);
  }
  return out;
}

namespace {

// Annotations XLA's partitioner and memory-space passes consume; on one
// device with one memory each is its operand.
constexpr std::string_view kIdentityTargets[] = {
    "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape", "annotate_device_placement",
    "MoveToHost", "MoveToDevice"};

bool IsIdentityTarget(std::string_view target) {
  return std::find(std::begin(kIdentityTargets), std::end(kIdentityTargets), target) !=
         std::end(kIdentityTargets);
}

}  // namespace

bool IsRegisteredCustomCall(std::string_view target) {
  return target == "shape_assertion" || IsIdentityTarget(target) || Registry().count(target) != 0;
}

std::vector<std::string> RegisteredCustomCalls() {
  std::vector<std::string> names = {"shape_assertion"};
  for (std::string_view t : kIdentityTargets) names.emplace_back(t);
  for (const auto& [name, entry] : Registry()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

Status CheckCustomCallTarget(std::string_view target_view) {
  const std::string target(target_view);
  if (target == "xla_python_cpu_callback" || target == "xla_ffi_python_cpu_callback" ||
      target == "xla_python_gpu_callback" || target == "xla_ffi_python_gpu_callback") {
    return Unimplemented("custom_call target '" + target +
                         "' calls back into the Python process that traced the program "
                         "(jax.pure_callback, io_callback, jax.debug.print); jitd cannot run it");
  }
  if (IsRegisteredCustomCall(target)) return Status::Ok();
  std::string hint;
  if (target.rfind("lapack_", 0) == 0 || target.rfind("blas_", 0) == 0) {
    hint = " (jitd implements jaxlib's typed-FFI LAPACK targets lapack_{s,d,c,z}{potrf,getrf,"
           "geqrf,geqp3,orgqr/ungqr,ormqr/unmqr,trsm,syevd/heevd,gesdd,gesvd,geev,gees,gehrd,"
           "sytrd/hetrd,gtsv}_ffi and "
           "the legacy lapack_?{potrf,getrf,geqrf,orgqr/ungqr,syevd/heevd,gesdd,geev,gees,gehrd,"
           "sytrd/hetrd}, "
           "blas_?trsm)";
  } else if (target == "dynamic_ducc_fft") {
    hint = " (jaxlib's shape-polymorphic CPU FFT of jax 0.4.13 .. 0.4.2x; jitd reads ducc_fft, "
           "and current jax lowers jnp.fft to stablehlo.fft)";
  }
  return Unimplemented("custom_call target '" + target + "' is not supported" + hint);
}

StatusOr<std::vector<Literal>> RunCustomCall(const ir::Op& op,
                                             std::span<const Literal* const> operands) {
  std::string target;
  if (const ir::Attribute* a = op.attr("call_target_name")) {
    if (const auto* s = a->get_if<ir::StringAttr>()) target = s->value;
  }
  if (operands.size() != op.num_operands()) {
    return Internal("custom_call @" + target + ": operand count mismatch");
  }
  // A shape-polymorphic export appends the result shapes as operands
  // (`indices_of_shape_operands`); once shapes are concrete the kernels need
  // only the data operands.
  std::vector<size_t> data_operands;
  JITD_ASSIGN_OR_RETURN(std::vector<int64_t> shape_operands, ShapeOperandIndices(op));
  for (size_t i = 0; i < operands.size(); ++i) {
    if (std::find(shape_operands.begin(), shape_operands.end(), static_cast<int64_t>(i)) ==
        shape_operands.end()) {
      data_operands.push_back(i);
    }
  }
  const std::span<const Literal* const> all_operands = operands;
  std::vector<const Literal*> kept;
  for (size_t i : data_operands) kept.push_back(operands[i]);
  if (kept.size() != operands.size()) {
    for (size_t k = 0; k < shape_operands.size(); ++k) {
      const Literal* shape = operands[static_cast<size_t>(shape_operands[k])];
      if (k >= op.num_results() || !ir::IsInteger(shape->dtype()) ||
          shape->num_elements() != op.result(k)->type().rank()) {
        return InvalidArgument("custom_call @" + target + ": shape operand " +
                               std::to_string(shape_operands[k]) + " does not describe result " +
                               std::to_string(k));
      }
      for (int64_t d = 0; d < shape->num_elements(); ++d) {
        if (shape->GetInt(d) != op.result(k)->type().dim(d)) {
          return InvalidArgument("custom_call @" + target + ": shape operand " +
                                 std::to_string(shape_operands[k]) + " gives result " + std::to_string(k) +
                                 " size " + std::to_string(shape->GetInt(d)) + " in dimension " +
                                 std::to_string(d) + ", its type " + op.result(k)->type().ToString());
        }
      }
    }
    operands = kept;
  }
  if (target == "shape_assertion") return ShapeAssertion(op, operands);
  if (IsIdentityTarget(target)) {
    // A sharding or memory-space annotation: on one device the value itself.
    if (operands.size() != 1 || op.num_results() != 1 ||
        op.result(0)->type() != operands[0]->type()) {
      return InvalidArgument("custom_call @" + target +
                             " takes one value and returns it (one device: the shapes are equal)");
    }
    return std::vector<Literal>{*operands[0]};
  }
  JITD_RETURN_IF_ERROR(CheckCustomCallTarget(target));
  const auto& registry = Registry();
  auto it = registry.find(target);
  Call call;
  call.target = target;
  call.op = &op;
  if (const ir::Attribute* cfg = op.attr("mhlo.backend_config")) {
    call.config = cfg->get_if<ir::DictionaryAttr>();
    if (!call.config) {
      return InvalidArgument("custom_call @" + target +
                             ": mhlo.backend_config must be a dictionary of attributes (api_version = 4)");
    }
  } else if (const ir::Attribute* cfg2 = op.attr("backend_config")) {
    call.config = cfg2->get_if<ir::DictionaryAttr>();
  }
  std::vector<Type> out_types;
  for (size_t i = 0; i < op.num_results(); ++i) {
    const Type& t = op.result(i)->type();
    if (!t.is_tensor()) {
      return InvalidArgument("custom_call @" + target + ": result " + std::to_string(i) +
                             " must be a tensor, got " + t.ToString());
    }
    out_types.push_back(t);
  }
  std::vector<Type> all_in_types;
  for (const Literal* l : all_operands) all_in_types.push_back(l->type());
  JITD_ASSIGN_OR_RETURN(auto all_in_layouts, Layouts(op, "operand_layouts", all_in_types, target));
  std::vector<std::vector<int64_t>> in_layouts;
  for (size_t i : data_operands) in_layouts.push_back(all_in_layouts[i]);
  JITD_ASSIGN_OR_RETURN(auto out_layouts, Layouts(op, "result_layouts", out_types, target));
  for (size_t i = 0; i < operands.size(); ++i) {
    // Every operand has the type the name's letter gives (the legacy
    // targets' integer scalar flags and sizes aside).
    const DType dt = operands[i]->dtype();
    const bool flag = it->second.legacy && operands[i]->num_elements() == 1 &&
                      (ir::IsInteger(dt) || ir::IsPred(dt));
    if (dt != it->second.dtype && !flag && !it->second.own_types) {
      return InvalidArgument("custom_call @" + target + ": operand " + std::to_string(i) +
                             " must have element type " + std::string(ir::DTypeName(it->second.dtype)) +
                             (it->second.legacy ? " (or be an integer scalar)" : "") + ", got " +
                             operands[i]->type().ToString());
    }
    call.in.push_back(ToPhysical(*operands[i], in_layouts[i]));
  }
  for (size_t i = 0; i < out_types.size(); ++i) {
    Buffer b{out_types[i], out_layouts[i], {}};
    b.bytes.assign(static_cast<size_t>(out_types[i].num_elements()) *
                       static_cast<size_t>(ir::StorageBytes(out_types[i].dtype())),
                   0);
    call.out.push_back(std::move(b));
  }
  JITD_RETURN_IF_ERROR(it->second.fn(call));
  std::vector<Literal> results;
  for (const Buffer& b : call.out) {
    JITD_ASSIGN_OR_RETURN(Literal lit, ToLogical(b));
    results.push_back(std::move(lit));
  }
  return results;
}

}  // namespace jitd::eval
