// PtxCompiler: PTX text -> cubin for one sm, offline (no GPU, no driver).
// In process through nvJitLink where libnvJitLink loads (dlopen, its plain
// C symbols; never linked), else a `ptxas` subprocess. Either way the PTX
// is assembled and checked by NVIDIA's assembler, so a cubin that comes
// back loads on a GPU of that sm. (The driver's own JIT is the last resort
// of the runtime, not of this class.)
//
// Thread-safe after Create: nvJitLink handles are per call, ptxas runs in a
// fresh temporary directory per call.
#ifndef JITD_DEVICES_CUDA_PTX_COMPILER_H_
#define JITD_DEVICES_CUDA_PTX_COMPILER_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jitd::devices::cuda {

struct PtxCompilerOptions {
  // Which assembler: "auto" (nvJitLink, else ptxas), "nvjitlink", "ptxas".
  std::string assembler = "auto";
  // ptxas to run; empty: $JITD_PTXAS, then CUDA_HOME / CUDA_PATH / /usr/local/cuda's bin/, then PATH.
  std::string ptxas_path;
  int opt_level = 3;
};

// What assembles, and the highest PTX ISA version it reads (90 = 9.0).
struct PtxToolchain {
  std::string assembler;   // "nvjitlink" or "ptxas"
  std::string version;     // "13.0"
  std::string path;        // the library or the ptxas binary
  int max_ptx_version = 0;
  // For cache keys: "nvjitlink 13.0" / "ptxas 13.0 /usr/local/cuda/bin/ptxas".
  std::string Describe() const;
};

// The PTX ISA version a CUDA release's assembler reads at most (12.4 -> 84,
// 13.0 -> 90); releases after the table's last: its last.
int MaxPtxVersionOfCudaRelease(int major, int minor);

struct PtxAssembly {
  std::string cubin;
  std::string log;  // the assembler's info log (registers, spills with -v)
};

class PtxCompiler {
 public:
  // NOT_FOUND naming what was looked for when neither assembler is found
  // (or the one asked for).
  static StatusOr<std::unique_ptr<PtxCompiler>> Create(const PtxCompilerOptions& options = {});
  ~PtxCompiler();

  const PtxToolchain& toolchain() const;

  // Assembles `ptx` for `sm` ("sm_90"). INVALID_ARGUMENT with the
  // assembler's log when it refuses the PTX. `verbose` asks for the
  // per-kernel register / spill report in the log.
  StatusOr<PtxAssembly> Assemble(std::string_view ptx, std::string_view sm, bool verbose = false) const;

 private:
  struct Impl;
  explicit PtxCompiler(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_PTX_COMPILER_H_
