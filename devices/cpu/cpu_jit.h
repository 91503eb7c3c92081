// CpuJit: the CPU device's LLVM ORC LLJIT, configured through LLJITBuilder
// for the host (CPU name + feature string), with O2 optimisation (new pass
// manager, libmvec as the vector library) in the IRTransformLayer and an
// object cache hook that keeps each program's object file, so executables
// can be serialized and loaded back without code generation.
//
// Thread safety: AddModule / AddObject may be called concurrently; each
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
// file they came from. Removes the code from the JIT on destruction.
class JitCode {
 public:
  ~JitCode();
  const std::vector<void*>& addresses() const { return addresses_; }
  const std::string& object() const { return object_; }

 private:
  friend class CpuJit;
  std::function<void()> release_;  // removes the code from the JIT
  std::vector<void*> addresses_;
  std::string object_;
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
  // Links an object file produced by AddModule (JitCode::object) and
  // resolves `symbols`.
  StatusOr<std::unique_ptr<JitCode>> AddObject(const std::string& object,
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
