// The matrix-multiply core of dot_general and convolution (internal to
// devices/cpu/runtime).
#ifndef JITD_DEVICES_CPU_RUNTIME_INTERNAL_GEMM_H_
#define JITD_DEVICES_CPU_RUNTIME_INTERNAL_GEMM_H_

#include <cstdint>

#include "devices/cpu/runtime/library_op.h"

namespace jitd::cpu::internal {

// Products with fewer multiply-adds than this run in jit/eval's exact order
// (bit-identical to the interpreter); larger float products go to OpenBLAS,
// whose blocked summation differs from the interpreter's by rounding only.
inline constexpr int64_t kBlasMinMultiplyAdds = int64_t{1} << 15;

// Whether a product of this size in domain T runs through OpenBLAS.
template <typename T>
bool UsesBlas(int64_t m, int64_t n, int64_t k);

// One matrix product: C (m x n, row-major, leading dimension ldc) = A * B,
// where A is m x k (a_trans: stored k x m) with leading dimension lda and B
// is k x n (b_trans: stored n x k) with leading dimension ldb; C is
// overwritten. T is a domain type of internal/elements.h. The exact path
// adds the products of each element in ascending k, each multiply and add
// rounded in T (complex: component-wise, never fused), from T{}.
template <typename T>
void Gemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, bool a_trans, const T* b,
          int64_t ldb, bool b_trans, T* c, int64_t ldc, const RunContext& context);

}  // namespace jitd::cpu::internal

#endif  // JITD_DEVICES_CPU_RUNTIME_INTERNAL_GEMM_H_
