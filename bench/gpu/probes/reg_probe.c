// cuMemHostRegister on the kinds of host memory jitd's clients use: a memfd
// MAP_SHARED mapping (the session segment), anonymous private memory,
// with flags 0 / PORTABLE / DEVICEMAP, pages touched or not.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
typedef int CUresult; typedef int CUdevice; typedef void* CUcontext;
int main(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) { printf("no libcuda\n"); return 1; }
  CUresult (*cuInit)(unsigned) = dlsym(lib, "cuInit");
  CUresult (*cuDeviceGet)(CUdevice*, int) = dlsym(lib, "cuDeviceGet");
  CUresult (*retain)(CUcontext*, CUdevice) = dlsym(lib, "cuDevicePrimaryCtxRetain");
  CUresult (*setc)(CUcontext) = dlsym(lib, "cuCtxSetCurrent");
  CUresult (*reg)(void*, size_t, unsigned) = dlsym(lib, "cuMemHostRegister_v2");
  CUresult (*unreg)(void*) = dlsym(lib, "cuMemHostUnregister");
  CUdevice dev; CUcontext ctx;
  printf("init %d", cuInit(0)); printf(" get %d", cuDeviceGet(&dev, 0));
  printf(" retain %d", retain(&ctx, dev)); printf(" set %d\n", setc(ctx));
  const size_t n = 64u << 20;
  for (int kind = 0; kind < 2; ++kind) {
    for (int touch = 0; touch < 2; ++touch) {
      for (unsigned flags = 0; flags < 4; flags += (flags ? 2 : 1)) {
        void* p;
        if (kind == 0) {
          int fd = memfd_create("probe", MFD_CLOEXEC);
          ftruncate(fd, n);
          p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
          close(fd);
        } else {
          p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
        if (touch) memset(p, 1, n);
        CUresult r = reg(p, n, flags);
        printf("%s, pages %s, flags %u: cuMemHostRegister %d\n", kind ? "anonymous private" : "memfd shared",
               touch ? "touched" : "untouched", flags, r);
        if (r == 0) unreg(p);
        munmap(p, n);
      }
    }
  }
  return 0;
}
