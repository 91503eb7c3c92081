// The GPU's floors through the driver API alone, for issue 19 item 2 (what
// jitd's own figures are measured against, in the same run): an empty
// kernel's launch + stream sync, launches back to back, a 4-byte copy each
// way + sync, device-to-device copy bandwidth, and host<->device bandwidth
// from pinned (cuMemHostAlloc) and pageable (malloc) memory.
//
//   cc -O2 -o floors bench/gpu/probes/floors.c -ldl && ./floors
//
// Latencies: the median of 5,000 (after 200 untimed); bandwidths: the
// median of 10 copies of 256 MiB (events for device-to-device, wall clock
// around copy + sync for host copies).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUevent;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(CUdevice*, int);
static CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
static CUresult (*cuCtxSetCurrent)(CUcontext);
static CUresult (*cuModuleLoadData)(CUmodule*, const void*);
static CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
static CUresult (*cuStreamCreate)(CUstream*, unsigned);
static CUresult (*cuStreamSynchronize)(CUstream);
static CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);
static CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
static CUresult (*cuMemHostAlloc)(void**, size_t, unsigned);
static CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
static CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
static CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*cuEventCreate)(CUevent*, unsigned);
static CUresult (*cuEventRecord)(CUevent, CUstream);
static CUresult (*cuEventSynchronize)(CUevent);
static CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);

static const char kPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry empty()\n{\n  ret;\n}\n";

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, n, sizeof *v, cmp);
  return v[n / 2];
}

#define CHECK(call)                                                    \
  do {                                                                 \
    CUresult r_ = (call);                                              \
    if (r_ != 0) {                                                     \
      fprintf(stderr, "floors: %s failed: %d (line %d)\n", #call, r_, __LINE__); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

#define LOAD(name)                                            \
  do {                                                        \
    *(void**)&name = dlsym(lib, #name);                       \
    if (!name) {                                              \
      fprintf(stderr, "floors: libcuda has no %s\n", #name);  \
      return 1;                                               \
    }                                                         \
  } while (0)
#define LOAD_AS(name, symbol)                                 \
  do {                                                        \
    *(void**)&name = dlsym(lib, symbol);                      \
    if (!name) {                                              \
      fprintf(stderr, "floors: libcuda has no %s\n", symbol); \
      return 1;                                               \
    }                                                         \
  } while (0)

enum { kLatencyRuns = 5000, kWarm = 200, kBandwidthRuns = 10 };

int main(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "floors: no libcuda.so.1: %s\n", dlerror());
    return 1;
  }
  LOAD(cuInit); LOAD(cuDeviceGet); LOAD(cuDevicePrimaryCtxRetain); LOAD(cuCtxSetCurrent);
  LOAD(cuModuleLoadData); LOAD(cuModuleGetFunction); LOAD(cuStreamCreate); LOAD(cuStreamSynchronize);
  LOAD(cuLaunchKernel); LOAD_AS(cuMemAlloc, "cuMemAlloc_v2"); LOAD(cuMemHostAlloc);
  LOAD_AS(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"); LOAD_AS(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  LOAD_AS(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"); LOAD(cuEventCreate); LOAD(cuEventRecord);
  LOAD(cuEventSynchronize); LOAD(cuEventElapsedTime);

  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  CUfunction empty;
  CUstream stream;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&module, kPtx));
  CHECK(cuModuleGetFunction(&empty, module, "empty"));
  CHECK(cuStreamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */));
  static double t[kLatencyRuns];

  // An empty kernel, launched and waited for.
  for (int i = 0; i < kWarm + kLatencyRuns; ++i) {
    double s = now();
    CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
    CHECK(cuStreamSynchronize(stream));
    if (i >= kWarm) t[i - kWarm] = now() - s;
  }
  printf("floor: empty kernel launch + cuStreamSynchronize: p50 %.2f us\n", median(t, kLatencyRuns) * 1e6);
  // Launches back to back, one sync at the end.
  double s = now();
  for (int i = 0; i < kLatencyRuns; ++i) CHECK(cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
  CHECK(cuStreamSynchronize(stream));
  printf("floor: empty kernel launches back to back: %.2f us each\n", (now() - s) / kLatencyRuns * 1e6);

  // 4 bytes each way from pinned memory, with a sync.
  CUdeviceptr small;
  void* pinned_small;
  CHECK(cuMemAlloc(&small, 4));
  CHECK(cuMemHostAlloc(&pinned_small, 4, 0));
  for (int dir = 0; dir < 2; ++dir) {
    for (int i = 0; i < kWarm + kLatencyRuns; ++i) {
      double s0 = now();
      if (dir == 0) {
        CHECK(cuMemcpyHtoDAsync(small, pinned_small, 4, stream));
      } else {
        CHECK(cuMemcpyDtoHAsync(pinned_small, small, 4, stream));
      }
      CHECK(cuStreamSynchronize(stream));
      if (i >= kWarm) t[i - kWarm] = now() - s0;
    }
    printf("floor: 4-byte cuMemcpy%sAsync (pinned) + sync: p50 %.2f us\n", dir == 0 ? "HtoD" : "DtoH",
           median(t, kLatencyRuns) * 1e6);
  }

  // Bandwidths over 256 MiB.
  const size_t n = (size_t)256 << 20;
  CUdeviceptr a, b;
  CHECK(cuMemAlloc(&a, n));
  CHECK(cuMemAlloc(&b, n));
  CUevent e0, e1;
  CHECK(cuEventCreate(&e0, 0));
  CHECK(cuEventCreate(&e1, 0));
  double bw[kBandwidthRuns];
  for (int i = 0; i < kBandwidthRuns + 2; ++i) {
    CHECK(cuEventRecord(e0, stream));
    CHECK(cuMemcpyDtoDAsync(b, a, n, stream));
    CHECK(cuEventRecord(e1, stream));
    CHECK(cuEventSynchronize(e1));
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, e0, e1));
    if (i >= 2) bw[i - 2] = n / (ms * 1e-3) / 1e9;
  }
  double copy = median(bw, kBandwidthRuns);
  printf("floor: device-to-device copy, 256 MiB: %.0f GB/s copied (%.0f GB/s read + written)\n", copy, 2 * copy);
  void* pinned;
  CHECK(cuMemHostAlloc(&pinned, n, 0));
  memset(pinned, 1, n);
  void* pageable = malloc(n);
  memset(pageable, 1, n);
  for (int host = 0; host < 2; ++host) {
    void* h = host == 0 ? pinned : pageable;
    for (int dir = 0; dir < 2; ++dir) {
      for (int i = 0; i < kBandwidthRuns + 1; ++i) {
        double s0 = now();
        if (dir == 0) {
          CHECK(cuMemcpyHtoDAsync(a, h, n, stream));
        } else {
          CHECK(cuMemcpyDtoHAsync(h, a, n, stream));
        }
        CHECK(cuStreamSynchronize(stream));
        if (i >= 1) bw[i - 1] = n / (now() - s0) / 1e9;
      }
      printf("floor: %s host memory, %s, 256 MiB: %.1f GB/s\n", host == 0 ? "pinned" : "pageable",
             dir == 0 ? "host to device" : "device to host", median(bw, kBandwidthRuns));
    }
  }
  return 0;
}
