// NVPTX: LLVM module -> PTX text. The target machine (triple
// nvptx64-nvidia-cuda, its data layout, an sm and a PTX ISA version), the
// link of libdevice (only the functions the kernels call, internalized),
// the optimization pipeline (with NVVMReflect, __nvvm_reflect("__CUDA_FTZ")
// answered 0: no flush to zero) and the PTX printer. IEEE f32 division and
// square root (LLVM's NVPTX defaults: div.rn / sqrt.rn), no fast-math.
// Free of CUDA: the caller (devices/cuda) assembles the PTX.
#ifndef JITD_JIT_CODEGEN_NVPTX_NVPTX_BACKEND_H_
#define JITD_JIT_CODEGEN_NVPTX_NVPTX_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace jitd::codegen {

inline constexpr char kNvptxTriple[] = "nvptx64-nvidia-cuda";

// What this LLVM's NVPTX target offers: its sm names (sm_90, sm_90a, ...)
// and the highest PTX ISA version it can write (85 = PTX 8.5).
struct NvptxTargetInfo {
  std::vector<std::string> sms;
  int max_ptx_version = 0;
};
const NvptxTargetInfo& NvptxInfo();

// The PTX ISA version an sm needs at least (sm_90: 78), 0 for an unknown sm.
int MinPtxVersionForSm(const std::string& sm);

struct NvptxOptions {
  std::string sm = "sm_90";
  int ptx_version = 0;  // 0: the highest LLVM writes
  // libdevice.10.bc; empty: $JITD_LIBDEVICE, CUDA_HOME / CUDA_PATH's, one
  // shipped beside the binary (../lib/libdevice.10.bc or
  // ../share/jitd/libdevice.10.bc from the executable), then the CUDA
  // toolkit's (/usr/local/cuda, /usr/lib/cuda).
  std::string libdevice_path;
  int opt_level = 3;
};

// A target machine for `options` (INVALID_ARGUMENT for an sm or PTX version
// this LLVM does not know). Thread-safe; the result is the caller's.
StatusOr<std::unique_ptr<llvm::TargetMachine>> CreateNvptxTargetMachine(const NvptxOptions& options);

// Where libdevice is for `options` (NOT_FOUND naming the places tried).
StatusOr<std::string> FindLibdevice(const NvptxOptions& options);

// Sets `module`'s triple and data layout for `machine`. Kernels are emitted
// into a module prepared this way.
void PrepareNvptxModule(llvm::Module& module, const llvm::TargetMachine& machine);

// Links libdevice's functions the module calls (only those, internalized,
// then dropped when inlined), runs the O3 pipeline with NVVMReflect, and
// prints PTX. Fails naming any __nv_ function libdevice does not define and
// any other external function a kernel calls (a kernel can call nothing).
StatusOr<std::string> CompileNvptxModule(llvm::Module& module, llvm::TargetMachine& machine,
                                         const NvptxOptions& options);

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_NVPTX_BACKEND_H_
