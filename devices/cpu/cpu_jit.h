// CpuJit: the CPU device's LLVM ORC LLJIT, configured through LLJITBuilder
// for the host (CPU name + feature string). AddModule optimizes a program's
// module at O2 (new pass manager, libmvec as the vector library) and
// compiles it to object code itself — cut into up to `compile_threads`
// parts (llvm::SplitModule) that compile concurrently when the program is
// big enough — then links the objects into the JIT; the object files are
// kept, so executables can be serialized and loaded back (AddObjects)
// without code generation.
//
// Thread safety: AddModule / AddObjects may be called concurrently; each
// program lives in its own JITDylib, removed when its JitCode is destroyed.
// A CpuJit must outlive every JitCode it returned.
#ifndef JITD_DEVICES_CPU_CPU_JIT_H_
#define JITD_DEVICES_CPU_CPU_JIT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace llvm {
class LLVMContext;
class Module;
class DataLayout;
namespace orc {
class LLJIT;
class ResourceTracker;
}  // namespace orc
}  // namespace llvm

namespace jitd::cpu {

class CpuJit;

// One program's machine code: the addresses of its kernels and the object
// files they came from (one per compiled part). Destruction removes the
// program's JITDylib from the JIT, which frees its code and data pages, its
// symbols and the JIT's bookkeeping for it.
class JitCode {
 public:
  ~JitCode();
  const std::vector<void*>& addresses() const { return addresses_; }
  const std::vector<std::string>& objects() const { return objects_; }
  // Memory the linked code and data occupy (whole pages per protection),
  // 0 when the JIT cannot tell (a RuntimeDyld linking layer).
  uint64_t code_bytes() const { return code_bytes_; }

 private:
  friend class CpuJit;
  std::function<void()> release_;  // removes the code from the JIT
  std::vector<void*> addresses_;
  std::vector<std::string> objects_;
  uint64_t code_bytes_ = 0;
};

// One program's LLVM texts, collected by AddModule when asked: the module as
// generated, after optimisation, and the assembly the JIT compiled it to.
struct LlvmDumps {
  std::string ir;
  std::string optimized_ir;
  std::string assembly;
};

struct CpuJitOptions {
  // Written after optimisation when non-empty (the compile option dumps).
  std::string dump_dir;
  // Threads one program's compile may use (its parts compile concurrently).
  int compile_threads = 1;
};

class CpuJit {
 public:
  static StatusOr<std::unique_ptr<CpuJit>> Create(const CpuJitOptions& options = {});
  ~CpuJit();

  // "rocketlake", and "+avx2,+avx512f,...": the host the code is built for.
  const std::string& cpu_name() const { return cpu_name_; }
  const std::string& cpu_features() const { return cpu_features_; }

  // A fresh module with the host's triple and data layout, for codegen.
  std::unique_ptr<llvm::Module> NewModule(const std::string& name, llvm::LLVMContext& context) const;

  // Optimizes and compiles `module` (which owns nothing but its context's
  // use) and resolves `symbols` in order; fills `dumps` when given.
  StatusOr<std::unique_ptr<JitCode>> AddModule(std::unique_ptr<llvm::Module> module,
                                               std::unique_ptr<llvm::LLVMContext> context,
                                               const std::vector<std::string>& symbols,
                                               LlvmDumps* dumps = nullptr);
  // Links the object files produced by AddModule (JitCode::objects) and
  // resolves `symbols`.
  StatusOr<std::unique_ptr<JitCode>> AddObjects(const std::vector<std::string>& objects,
                                                const std::vector<std::string>& symbols);

 private:
  CpuJit() = default;
  StatusOr<std::unique_ptr<JitCode>> Resolve(std::function<void()> release, void* dylib,
                                             const std::vector<std::string>& symbols);

  struct State;
  std::unique_ptr<State> state_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::string cpu_name_;
  std::string cpu_features_;
};

}  // namespace jitd::cpu

#endif  // JITD_DEVICES_CPU_CPU_JIT_H_
