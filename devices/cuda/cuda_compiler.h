// The cuda compiler: a StableHLO module -> CudaProgram (cuda_program.h):
// jit/passes' pipeline, fusion with codegen::NvptxFusionPolicy, one NVPTX
// kernel per jitd.fusion op (jit/codegen/nvptx; structurally equal
// kernels emitted once), the entry function's values placed in buffers
// (arguments, constants, temporaries packed by jit/passes' buffer
// assignment), PTX through LLVM and a cubin through PtxCompiler.
//
// An op the cuda device cannot run yet is refused at compile time with
// UNIMPLEMENTED naming the op and its location — never run elsewhere.
// Lowered today: elementwise ops, index maps and reductions that NVPTX
// kernels compute (jit/codegen's kernels, without host-only math),
// constants, the region and index-heavy ops with kernels of their own
// (docs/ARCHITECTURE.md 13b), while on the host, and library calls where
// the options allow them: dot_general through cuBLASLt (cublaslt_plan.h),
// fft through cuFFT (cufft_plan.h), convolution through cuDNN
// (cudnn_plan.h), each with jit's own kernel as the fallback; cholesky has
// a kernel (cholesky_kernel.h). Not yet: custom_call, host-only element
// math (some complex transcendentals, 8-bit floats).
//
// Needs no GPU and no driver: CompileCuda runs anywhere LLVM's NVPTX target
// and an assembler (nvJitLink or ptxas) are. Thread-safe (a compile uses
// its own LLVM context).
#ifndef JITD_DEVICES_CUDA_CUDA_COMPILER_H_
#define JITD_DEVICES_CUDA_CUDA_COMPILER_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "devices/cuda/cuda_program.h"
#include "devices/cuda/ptx_compiler.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/ir/module.h"

namespace jitd::devices::cuda {

struct CudaCompileOptions {
  std::string sm = "sm_90";  // --cuda-arch
  // The jit/passes pipeline before fusion (passes::AddPipeline's spec);
  // "default" folds constants. Fusion with the NVPTX policy always runs.
  std::string pipeline = "default";
  // Assemble the PTX into a cubin (needs `assembler`); false stops at PTX.
  bool assemble = true;
  // Borrowed; required when `assemble`. Its PTX ISA limit bounds the
  // version LLVM writes.
  const PtxCompiler* assembler = nullptr;
  bool verbose_assembly = false;  // the assembler's register / spill report in assembler_log
  codegen::GridLimits limits;
  std::string libdevice_path;  // empty: codegen::FindLibdevice's search
  // Library calls the compiler may plan (the device sets them from the
  // libraries that loaded, cuda_libraries.h): dot_general through
  // cuBLASLt, fft through cuFFT, convolution through cuDNN. Off, or for a
  // layout a library does not
  // take, the op gets jitd's own kernel.
  bool use_cublaslt = false;
  bool use_cufft = false;
  bool use_cudnn = false;  // convolution through cuDNN
  // Exact f32 matmuls whatever precision_config says (no TF32):
  // `jitd serve --cuda-exact-f32`.
  bool exact_f32 = false;
  // Dots and convolutions of fewer multiply-adds than this run jitd's exact
  // kernel even where a library would take them: the library call costs
  // more than the work, and the exact kernel sums in the interpreter's
  // order (cuBLASLt's order left complex results of the corpus's 4x3x6
  // dots up to 172 ULP off in a cancelling part, on an H200). 0: the
  // libraries take every problem they can.
  int64_t library_min_multiply_adds = kLibraryMinMultiplyAdds;
};

// The PTX ISA version for `sm` that both this LLVM writes and
// `assembler_max` (0 = no assembler: LLVM's) reads; INVALID_ARGUMENT when
// none does.
StatusOr<int> ChoosePtxVersion(const std::string& sm, int assembler_max);

// What besides the program decides a compile's output: sm, PTX version,
// LLVM's and the assembler's versions, the pipeline, the grid limits
// ("sm_90 ptx85 LLVM 19.1.7 nvjitlink 13.0 pipeline=default block=256
// ..."). A disk cache keys cubins by the program's fingerprint and this.
std::string CudaCompileFingerprint(const CudaCompileOptions& options);

// `module` is not changed (the compiler works on a copy).
StatusOr<CudaProgram> CompileCuda(const ir::Module& module, const CudaCompileOptions& options);

// A report line per step and a summary: "3 kernel launches (2 unique), 1
// library calls, arena 4096 bytes, ...".
std::string DescribeCudaProgram(const CudaProgram& program);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_COMPILER_H_
