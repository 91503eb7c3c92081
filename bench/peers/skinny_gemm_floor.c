// What a matrix product with few rows costs when the weight is streamed
// once, against OpenBLAS's cblas_sgemm on the same operands (what jitd's
// dot_general calls today): C[M, N] = X[M, K] * W[N, K]^T, W in torch's
// [out, in] layout (BERT-base's projections at sequence 7: M = 7). The
// streaming kernel keeps the M rows of X in L1/L2 and reads each row of W
// once, computing 2 rows of W against all M rows of X per step (2 x M
// 16-lane accumulators), no packing. Several weights (--weights) so that
// together they exceed the caches, as BERT's 340 MB do; each timed pass
// multiplies X by every weight once. Prints the median per pass of the
// thread's CPU time and wall time over --repeats passes, and GB/s of weight
// bytes read; checks that both kernels agree.
//   cc -O3 -march=native bench/peers/skinny_gemm_floor.c -o /tmp/skinny -lopenblas
//   OPENBLAS_NUM_THREADS=1 taskset -c 1 /tmp/skinny [M K N WEIGHTS REPEATS]
#include <cblas.h>
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double Seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int Compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// C[m, n] = sum_k X[m, k] * W[n, k]; K a multiple of 16, M <= 16.
static void Streaming(int m_rows, int k_len, int n_cols, const float* x, const float* w, float* c) {
  int n = 0;
  for (; n + 2 <= n_cols; n += 2) {
    __m512 acc0[16], acc1[16];
    for (int m = 0; m < m_rows; ++m) acc0[m] = acc1[m] = _mm512_setzero_ps();
    const float* w0 = w + (size_t)n * k_len;
    const float* w1 = w0 + k_len;
    for (int k = 0; k < k_len; k += 16) {
      const __m512 a = _mm512_loadu_ps(w0 + k), b = _mm512_loadu_ps(w1 + k);
      for (int m = 0; m < m_rows; ++m) {
        const __m512 xv = _mm512_loadu_ps(x + (size_t)m * k_len + k);
        acc0[m] = _mm512_fmadd_ps(xv, a, acc0[m]);
        acc1[m] = _mm512_fmadd_ps(xv, b, acc1[m]);
      }
    }
    for (int m = 0; m < m_rows; ++m) {
      c[(size_t)m * n_cols + n] = _mm512_reduce_add_ps(acc0[m]);
      c[(size_t)m * n_cols + n + 1] = _mm512_reduce_add_ps(acc1[m]);
    }
  }
  for (; n < n_cols; ++n) {
    for (int m = 0; m < m_rows; ++m) {
      float s = 0;
      for (int k = 0; k < k_len; ++k) s += x[(size_t)m * k_len + k] * w[(size_t)n * k_len + k];
      c[(size_t)m * n_cols + n] = s;
    }
  }
}

// The same with 4 rows of W per step (4 x M accumulators, M <= 7: 28 of
// the 32 zmm registers), 4 concurrent read streams.
static void Streaming4(int m_rows, int k_len, int n_cols, const float* x, const float* w, float* c) {
  int n = 0;
  for (; n + 4 <= n_cols; n += 4) {
    __m512 acc[4][7];
    for (int r = 0; r < 4; ++r)
      for (int m = 0; m < m_rows; ++m) acc[r][m] = _mm512_setzero_ps();
    const float* wr = w + (size_t)n * k_len;
    for (int k = 0; k < k_len; k += 16) {
      __m512 wv[4];
      for (int r = 0; r < 4; ++r) wv[r] = _mm512_loadu_ps(wr + (size_t)r * k_len + k);
      for (int m = 0; m < m_rows; ++m) {
        const __m512 xv = _mm512_loadu_ps(x + (size_t)m * k_len + k);
        for (int r = 0; r < 4; ++r) acc[r][m] = _mm512_fmadd_ps(xv, wv[r], acc[r][m]);
      }
    }
    for (int r = 0; r < 4; ++r)
      for (int m = 0; m < m_rows; ++m) c[(size_t)m * n_cols + n + r] = _mm512_reduce_add_ps(acc[r][m]);
  }
  if (n < n_cols) Streaming(m_rows, k_len, n_cols - n, x, w + (size_t)n * k_len, c + n);
}

// C = X * V for a weight stored [K, N] (V = W^T, JAX's [in, out]): rank-1
// updates of M x 32-column blocks (2 x M accumulators), V streamed row by
// row once per 32-column block... so V is walked in column blocks; fine for
// N*4 bytes of a row fitting in L1 per block of rows (the whole V is read
// once, 32 columns at a time: strided, 128 B per row).
static void StreamingKN(int m_rows, int k_len, int n_cols, const float* x, const float* v, float* c) {
  for (int n = 0; n + 32 <= n_cols; n += 32) {
    __m512 acc0[7], acc1[7];
    for (int m = 0; m < m_rows; ++m) acc0[m] = acc1[m] = _mm512_setzero_ps();
    for (int k = 0; k < k_len; ++k) {
      const __m512 a = _mm512_loadu_ps(v + (size_t)k * n_cols + n);
      const __m512 b = _mm512_loadu_ps(v + (size_t)k * n_cols + n + 16);
      for (int m = 0; m < m_rows; ++m) {
        const __m512 xv = _mm512_set1_ps(x[(size_t)m * k_len + k]);
        acc0[m] = _mm512_fmadd_ps(xv, a, acc0[m]);
        acc1[m] = _mm512_fmadd_ps(xv, b, acc1[m]);
      }
    }
    for (int m = 0; m < m_rows; ++m) {
      _mm512_storeu_ps(c + (size_t)m * n_cols + n, acc0[m]);
      _mm512_storeu_ps(c + (size_t)m * n_cols + n + 16, acc1[m]);
    }
  }
}

int main(int argc, char** argv) {
  const int m = argc > 1 ? atoi(argv[1]) : 7;
  const int k = argc > 2 ? atoi(argv[2]) : 768;
  const int n = argc > 3 ? atoi(argv[3]) : 3072;
  const int weights = argc > 4 ? atoi(argv[4]) : 24;
  const int repeats = argc > 5 ? atoi(argv[5]) : 11;
  if (m < 1 || m > 7 || k < 16 || k % 16 || n < 32 || n % 32 || weights < 1 || repeats < 1 ||
      repeats > 1000) {
    fprintf(stderr, "usage: %s [M<=7 K(multiple of 16) N(multiple of 32) WEIGHTS REPEATS]\n", argv[0]);
    return 2;
  }
  const size_t wsize = (size_t)n * k;
  float* x = aligned_alloc(64, sizeof(float) * (size_t)m * k);
  float* w = aligned_alloc(64, sizeof(float) * wsize * weights);
  float* c0 = aligned_alloc(64, sizeof(float) * (size_t)m * n * weights);
  float* c1 = aligned_alloc(64, sizeof(float) * (size_t)m * n * weights);
  float* v = aligned_alloc(64, sizeof(float) * wsize * weights);  // each W transposed: [K, N]
  if (!x || !w || !c0 || !c1 || !v) return 1;
  unsigned s = 1;
  for (size_t i = 0; i < (size_t)m * k; ++i) x[i] = (float)((s = s * 1103515245 + 12345) >> 9) / 8388608.0f - 1;
  for (size_t i = 0; i < wsize * weights; ++i) w[i] = (float)((s = s * 1103515245 + 12345) >> 9) / 8388608.0f - 1;
  for (int j = 0; j < weights; ++j)
    for (int nn = 0; nn < n; ++nn)
      for (int kk = 0; kk < k; ++kk) v[wsize * j + (size_t)kk * n + nn] = w[wsize * j + (size_t)nn * k + kk];
  memset(c0, 0, sizeof(float) * (size_t)m * n * weights);
  memset(c1, 0, sizeof(float) * (size_t)m * n * weights);
  const char* names[4] = {"cblas_sgemm", "streaming", "streaming4", "stream[K,N]"};
  double worst = 0;
  for (int kind = 0; kind < 4; ++kind) {
    double cpu[1000], wall[1000];
    for (int r = 0; r < repeats + 1; ++r) {  // the first pass is a warm-up
      const double c_start = Seconds(CLOCK_THREAD_CPUTIME_ID), w_start = Seconds(CLOCK_MONOTONIC);
      for (int j = 0; j < weights; ++j) {
        const float* wj = w + wsize * j;
        float* cj = (kind ? c1 : c0) + (size_t)m * n * j;
        if (kind == 0) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x, k, wj, k, 0.0f, cj, n);
        } else if (kind == 1) {
          Streaming(m, k, n, x, wj, cj);
        } else if (kind == 2) {
          Streaming4(m, k, n, x, wj, cj);
        } else {
          StreamingKN(m, k, n, x, v + wsize * j, cj);
        }
      }
      if (r > 0) {
        cpu[r - 1] = Seconds(CLOCK_THREAD_CPUTIME_ID) - c_start;
        wall[r - 1] = Seconds(CLOCK_MONOTONIC) - w_start;
      }
    }
    qsort(cpu, (size_t)repeats, sizeof(double), Compare);
    qsort(wall, (size_t)repeats, sizeof(double), Compare);
    const double bytes = 4.0 * (double)wsize * weights;
    printf("%-12s M=%d K=%d N=%d x%d weights (%.0f MB): cpu %8.2f ms (%5.1f GB/s), wall %8.2f ms\n",
           names[kind], m, k, n, weights, bytes / 1e6, cpu[(repeats - 1) / 2] * 1e3,
           bytes / cpu[(repeats - 1) / 2] / 1e9, wall[(repeats - 1) / 2] * 1e3);
    if (kind > 0) {
      for (size_t i = 0; i < (size_t)m * n * weights; ++i) {
        const double d = fabs((double)c0[i] - (double)c1[i]) / (1 + fabs((double)c0[i]));
        if (d > worst) worst = d;
      }
      memset(c1, 0, sizeof(float) * (size_t)m * n * weights);
    }
  }
  printf("largest relative difference %.2g\n", worst);
  return worst < 1e-3 ? 0 : 1;
}
