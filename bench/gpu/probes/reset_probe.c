// What recovers a process's CUDA use after a kernel's illegal address?
// Modes: primary (release+reset+retain the primary context), create (a new
// context with cuCtxCreate_v2), both (primary, then create).
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
typedef int CUresult; typedef int CUdevice; typedef void* CUcontext; typedef void* CUmodule;
typedef void* CUfunction; typedef unsigned long long CUdeviceptr;
static void* lib;
#define F(name, ...) CUresult (*name)(__VA_ARGS__) = (CUresult (*)(__VA_ARGS__))dlsym(lib, #name)
static const char* ptx =
".version 8.0\n.target sm_90\n.address_size 64\n"
".visible .entry add_one(.param .u64 p)\n{\n .reg .b64 %rd<3>;\n .reg .f32 %f<3>;\n"
" ld.param.u64 %rd1, [p];\n cvta.to.global.u64 %rd2, %rd1;\n ld.global.f32 %f1, [%rd2];\n"
" add.f32 %f2, %f1, 0f3F800000;\n st.global.f32 [%rd2], %f2;\n ret;\n}\n"
".visible .entry fault()\n{\n .reg .b64 %rd<2>;\n .reg .b32 %r<2>;\n mov.u64 %rd1, 8;\n"
" mov.u32 %r1, 1;\n st.global.u32 [%rd1], %r1;\n ret;\n}\n";
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "both";
  lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) { printf("no libcuda\n"); return 1; }
  F(cuInit, unsigned); F(cuDeviceGet, CUdevice*, int); F(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice);
  F(cuDevicePrimaryCtxRelease_v2, CUdevice); F(cuDevicePrimaryCtxReset_v2, CUdevice);
  F(cuCtxSetCurrent, CUcontext); F(cuCtxSynchronize, void); F(cuModuleLoadData, CUmodule*, const void*);
  F(cuModuleGetFunction, CUfunction*, CUmodule, const char*);
  F(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**, void**);
  F(cuCtxCreate_v2, CUcontext*, unsigned, CUdevice); F(cuCtxDestroy_v2, CUcontext);
  F(cuMemAlloc_v2, CUdeviceptr*, size_t); F(cuMemcpyHtoD_v2, CUdeviceptr, const void*, size_t);
  F(cuMemcpyDtoH_v2, void*, CUdeviceptr, size_t); F(cuDevicePrimaryCtxGetState, CUdevice, unsigned*, int*);
  CUdevice dev; CUcontext ctx; CUmodule mod; CUfunction add, fault;
  printf("init %d", cuInit(0)); printf(" get %d\n", cuDeviceGet(&dev, 0));
  printf("retain %d", cuDevicePrimaryCtxRetain(&ctx, dev)); printf(" set %d\n", cuCtxSetCurrent(ctx));
  printf("load %d", cuModuleLoadData(&mod, ptx)); printf(" fn %d", cuModuleGetFunction(&add, mod, "add_one"));
  printf(" %d\n", cuModuleGetFunction(&fault, mod, "fault"));
  printf("launch fault %d", cuLaunchKernel(fault, 1,1,1, 1,1,1, 0, 0, 0, 0));
  printf(", sync %d", cuCtxSynchronize()); printf(", sync again %d\n", cuCtxSynchronize());
  CUcontext use = 0;
  if (!strcmp(mode, "primary") || !strcmp(mode, "both")) {
    unsigned flags; int active;
    printf("primary: release %d", cuDevicePrimaryCtxRelease_v2(dev));
    printf(" state %d (active %d)", cuDevicePrimaryCtxGetState(dev, &flags, &active), active);
    printf(" reset %d", cuDevicePrimaryCtxReset_v2(dev));
    printf(" state %d (active %d)", cuDevicePrimaryCtxGetState(dev, &flags, &active), active);
    CUcontext c2 = 0; CUresult r = cuDevicePrimaryCtxRetain(&c2, dev);
    printf(" retain %d (same %d)\n", r, c2 == ctx);
    if (r == 0) use = c2;
  }
  if (!use && (!strcmp(mode, "create") || !strcmp(mode, "both"))) {
    CUcontext c3 = 0; CUresult r = cuCtxCreate_v2(&c3, 0, dev);
    printf("create: %d\n", r);
    if (r == 0) use = c3;
  }
  if (!use) { printf("RESULT %s: no usable context\n", mode); return 0; }
  printf("set %d", cuCtxSetCurrent(use));
  CUresult r = cuModuleLoadData(&mod, ptx); printf(" load %d", r);
  r |= cuModuleGetFunction(&add, mod, "add_one");
  CUdeviceptr p = 0; float v = 41.0f; r |= cuMemAlloc_v2(&p, 4); r |= cuMemcpyHtoD_v2(p, &v, 4);
  void* args[] = {&p};
  printf(" alloc+copy %d", r);
  CUresult l = cuLaunchKernel(add, 1,1,1, 1,1,1, 0, 0, args, 0); CUresult y = cuCtxSynchronize();
  CUresult d = cuMemcpyDtoH_v2(&v, p, 4); printf(" launch %d sync %d copy %d", l, y, d); r |= l | y | d;
  printf(" work %d value %g\nRESULT %s: %s\n", r, v, mode, r == 0 && v == 42.0f ? "recovered" : "not recovered");
  return 0;
}
