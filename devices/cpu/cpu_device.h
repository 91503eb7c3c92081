// The CPU device: StableHLO compiled to host machine code through LLVM ORC.
//
// An executable is a sequence of thunks over buffers (XLA:CPU's thunk
// runtime):
//  - KernelThunk: a JIT-compiled loop kernel for a fusion group
//    (jit/codegen), split over the device's thread pool when large;
//  - LibraryThunk: ops served by devices/cpu/runtime (dot_general, ...);
//  - WhileThunk / IfThunk / CaseThunk: real control flow around nested
//    thunk sequences (func.call is inlined at plan time);
//  - FallbackThunk: any op codegen does not handle yet, evaluated by the
//    interpreter's kernel for that one op (eval::EvaluateOp);
//  - CopyThunk: moves values into result buffers.
// All kernels of a program live in ONE LLVM module (one O2 compile).
// Temporaries share one arena per execution, packed by liveness.
//
// Profiles (ExecuteOptions::profile): one row per thunk label ("kernel
// jitd_k3", "library stablehlo.dot_general", "fallback stablehlo.pad", ...);
// JITD_CPU_PROFILE=1 in the environment also prints the top rows of every
// execution to stderr.
//
// Thread safety: a CpuDevice may compile from several threads; an executable
// may run from several threads at once (each run takes its own arena).
// Lifetime: executables keep their device's JIT and pool alive.
#ifndef JITD_DEVICES_CPU_CPU_DEVICE_H_
#define JITD_DEVICES_CPU_CPU_DEVICE_H_

#include <map>
#include <memory>
#include <string>

#include "devices/device.h"

namespace jitd::cpu {

struct CpuDeviceOptions {
  // Threads splitting large loops (the calling thread counts); 0 = one per
  // hardware thread, or JITD_CPU_THREADS from the environment when set.
  // OpenBLAS's pool (the GEMMs of dot_general / convolution) is set to the
  // same count unless OPENBLAS_NUM_THREADS is set (process-wide: the latest
  // device created wins).
  int num_threads = 0;
  // When non-empty (or JITD_CPU_DUMP_DIR is set): every program's LLVM IR
  // before (<id>.ll) and after (<id>.opt.ll) optimisation and its assembly
  // (<id>.s) go to this existing directory.
  std::string dump_dir;
  // Sort comparators compiled with the program's kernels (false: the
  // runtime library interprets them; for benchmarks and tests).
  bool compile_sort_comparators = true;
  // Multi-output fusion in the fusion pass this device runs (false: every
  // value read outside its consumer's kernel gets a kernel of its own; for
  // benchmarks and tests).
  bool multi_output_fusion = true;
};

// How much of a program runs as generated code. Op counts are over the ops
// of the planned functions (calls inlined), constants and terminators not
// counted.
struct CpuProgramStats {
  int64_t kernel_ops = 0;     // ops computed inside KernelThunks
  int64_t library_ops = 0;    // ops run by the runtime library
  int64_t fallback_ops = 0;   // ops run by the interpreter (FallbackThunk)
  int64_t control_ops = 0;    // while / if / case / call
  int64_t kernels = 0;        // KernelThunks
  int64_t unique_kernels = 0; // kernels emitted (equal kernels are shared)
  int64_t arena_bytes = 0;    // temporaries, after buffer reuse
  int64_t unshared_bytes = 0; // temporaries without reuse (for comparison)
  std::map<std::string, int64_t> fallback_by_op;  // op name -> count
  double codegen_seconds = 0; // plan + LLVM IR emission
  double llvm_seconds = 0;    // optimisation + machine code
  int64_t split_reductions = 0;      // KernelThunks reducing in two phases
  int64_t compiled_comparators = 0;  // sort comparators compiled (not interpreted)
};

class CpuExecutable : public devices::Executable {
 public:
  // Runs on raw buffers: args[i] holds argument i's dense bytes, results[j]
  // receives result j's (sized by result_types()); results must not overlap
  // arguments or each other. Only for programs whose arguments and results
  // are all tensors. Zero copies on the way in and out.
  Status Run(std::span<const void* const> args, std::span<void* const> results,
             const devices::ExecuteOptions& options) const override = 0;
  virtual const CpuProgramStats& stats() const = 0;
};

class CpuDevice final : public devices::Device {
 public:
  static StatusOr<std::unique_ptr<CpuDevice>> Create(const CpuDeviceOptions& options = {});
  ~CpuDevice() override;

  using devices::Device::Compile;
  std::string_view name() const override { return "cpu"; }
  // Dumps (CompileOptions::dumps): "kernels.txt" (each kernel with the ops
  // it computes), "buffers.txt" (each temporary's size, live range and arena
  // offset), "llvm.ll" (as generated), "llvm.opt.ll"
  // (after O2) and "asm.s" — none for a program without kernels.
  StatusOr<std::unique_ptr<devices::Executable>> Compile(
      std::shared_ptr<const ir::Module> module,
      const devices::CompileOptions& options) const override;
  // jit/passes' default pipeline runs in front of code generation.
  std::string_view pipeline() const override { return "default"; }
  // The default pipeline ends with jit/passes' fusion (codegen's policy).
  void ConfigurePipeline(passes::PipelineOptions& options) const override;

  // Bytes that rebuild `executable` (one this device compiled) without code
  // generation: the program text, the host's CPU features and the object
  // file of its kernels.
  StatusOr<std::string> Serialize(const devices::Executable& executable) const override;
  StatusOr<std::unique_ptr<devices::Executable>> Deserialize(
      std::string_view bytes) const override;

  int num_threads() const;

 private:
  struct Impl;
  explicit CpuDevice(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

}  // namespace jitd::cpu

#endif  // JITD_DEVICES_CPU_CPU_DEVICE_H_
