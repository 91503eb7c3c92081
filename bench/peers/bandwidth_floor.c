// The memory-bandwidth floor of this machine, measured in the same run as
// cpu_peers.py's microbenchmarks (FLOORS.md's figures are from another
// machine of the fleet): STREAM-style kernels over 16M f32 arrays (64 MiB
// each, far above the caches) on T threads, each thread a contiguous slice.
//   scale  y = s * x       (one read stream, one write: the pattern of an
//                           elementwise chain y = f(x))
//   triad  a = b + s * c   (FLOORS.md's reference)
// each with ordinary stores and with non-temporal (streaming) stores, and
//   read   sum of x        (one read stream: what streaming weights through
//                           a matrix-vector product costs at least)
// Prints one line per kernel: the median over --repeats runs of the time and
// of GB/s counting bytes read + written (as FLOORS.md and cpu_bench do).
//   cc -O3 -march=native -pthread bench/peers/bandwidth_floor.c -o /tmp/bandwidth_floor
//   /tmp/bandwidth_floor THREADS [REPEATS]
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kN = 1 << 24 };

typedef struct {
  float* a;
  const float* b;
  const float* c;
  long begin, end;
  int kind;  // 0 scale, 1 scale nt, 2 triad, 3 triad nt, 4 read
  pthread_barrier_t* barrier;
  float sum;
} Task;

static void Run(Task* t) {
  const float s = 1.0001f;
  float* a = t->a;
  const float* b = t->b;
  const float* c = t->c;
  long i = t->begin;
  switch (t->kind) {
    case 0:
      for (; i < t->end; ++i) a[i] = s * b[i];
      break;
    case 1:
      for (; i + 16 <= t->end; i += 16) {
        _mm512_stream_ps(a + i, _mm512_mul_ps(_mm512_set1_ps(s), _mm512_load_ps(b + i)));
      }
      _mm_sfence();
      break;
    case 2:
      for (; i < t->end; ++i) a[i] = b[i] + s * c[i];
      break;
    case 3:
      for (; i + 16 <= t->end; i += 16) {
        _mm512_stream_ps(a + i, _mm512_fmadd_ps(_mm512_set1_ps(s), _mm512_load_ps(c + i),
                                                _mm512_load_ps(b + i)));
      }
      _mm_sfence();
      break;
    case 4: {
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
      for (; i + 64 <= t->end; i += 64) {
        for (int u = 0; u < 4; ++u) acc[u] = _mm512_add_ps(acc[u], _mm512_load_ps(b + i + 16 * u));
      }
      t->sum = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]),
                                                  _mm512_add_ps(acc[2], acc[3])));
      break;
    }
  }
}

static void* Worker(void* arg) {
  Task* t = (Task*)arg;
  pthread_barrier_wait(t->barrier);
  Run(t);
  pthread_barrier_wait(t->barrier);
  return NULL;
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int Compare(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return (a > b) - (a < b);
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  const int repeats = argc > 2 ? atoi(argv[2]) : 15;
  if (threads < 1 || threads > 256 || repeats < 1 || repeats > 1000) {
    fprintf(stderr, "usage: %s THREADS [REPEATS]\n", argv[0]);
    return 2;
  }
  float* a = aligned_alloc(64, sizeof(float) * kN);
  float* b = aligned_alloc(64, sizeof(float) * kN);
  float* c = aligned_alloc(64, sizeof(float) * kN);
  if (!a || !b || !c) return 1;
  for (long i = 0; i < kN; ++i) a[i] = 0, b[i] = (float)(i & 1023), c[i] = 1.0f;
  static const char* names[] = {"scale", "scale_nt", "triad", "triad_nt", "read"};
  static const int streams[] = {2, 2, 3, 3, 1};
  float sums = 0;
  for (int kind = 0; kind < 5; ++kind) {
    double times[1000];
    for (int r = 0; r < repeats; ++r) {
      pthread_barrier_t barrier;
      pthread_barrier_init(&barrier, NULL, (unsigned)threads);
      Task tasks[256];
      pthread_t ids[256];
      for (int t = 0; t < threads; ++t) {
        long per = (kN / threads) & ~15L;
        tasks[t] = (Task){a, b, c, t * per, t == threads - 1 ? kN : (t + 1) * per, kind, &barrier, 0};
      }
      for (int t = 1; t < threads; ++t) pthread_create(&ids[t], NULL, Worker, &tasks[t]);
      pthread_barrier_wait(&barrier);
      const double start = Now();
      Run(&tasks[0]);
      pthread_barrier_wait(&barrier);
      times[r] = Now() - start;
      for (int t = 1; t < threads; ++t) pthread_join(ids[t], NULL);
      for (int t = 0; t < threads; ++t) sums += tasks[t].sum;
      pthread_barrier_destroy(&barrier);
    }
    qsort(times, (size_t)repeats, sizeof(double), Compare);
    const double median = times[(repeats - 1) / 2];
    const double bytes = (double)streams[kind] * 4.0 * kN;
    printf("%-9s threads:%d  median %8.3f ms  %6.2f GB/s\n", names[kind], threads, median * 1e3,
           bytes / median / 1e9);
  }
  volatile float sink = a[kN / 2] + sums;
  (void)sink;
  return 0;
}
