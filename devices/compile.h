// CompileProgram: what every compile-cache miss runs — shape refinement for
// programs with dynamic shapes, verify, the device's
// jit/passes pipeline (Device::pipeline, or one the caller names), then the
// device's code generation — collecting the compile's dumps on request.
//
// Dumps, in order: "000-input.mlir" (the program as given; with a flattened
// signature when ProgramCompileOptions::flatten_signature asks), one
// "NNN-<pass>.mlir" per pass (the program after pass NNN; none when no
// pipeline runs), "optimized.mlir" (what the device compiles), then the
// device's own (the cpu device: "kernels.txt", "buffers.txt", "llvm.ll", "llvm.opt.ll",
// "asm.s").
#ifndef JITD_DEVICES_COMPILE_H_
#define JITD_DEVICES_COMPILE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "devices/device.h"
#include "jit/ir/module.h"

namespace jitd::devices {

// One step of a compile, for a timeline (`jitd run --trace`): "verify",
// each pass of the pipeline by name, "device compile". Plain value.
struct CompileStep {
  std::string name;
  int64_t start_nanos;  // std::chrono::steady_clock time since its epoch
  int64_t duration_nanos;
};

struct ProgramCompileOptions {
  // The pipeline (passes::AddPipeline's spec: "default", "inline,cse", or ""
  // for none); unset = the device's.
  std::optional<std::string> pipeline;
  // Re-verify after every pass (a failure names the pass).
  bool verify_each = false;
  // Where the dumps go; none when null.
  std::vector<CompileDump>* dumps = nullptr;
  // When set, each step is appended as it ends (the time of writing dumps
  // left out). Two clock reads per pass.
  std::vector<CompileStep>* steps = nullptr;
  // The concrete argument types of this compile (jitd run --arg-shapes, the
  // compile request's argument_shapes). A program with dynamic shapes (`?`)
  // needs them: it is refined for them first (jit/passes/refine_shapes.h,
  // step "refine-shapes"); a static program must declare exactly these.
  // Empty = the program's own (a dynamic program is then refused).
  std::vector<ir::Type> argument_types{};
  // Rewrite the entry function to take and return tensors only (jit/passes/
  // flatten_signature.h, step "flatten-signature", after verify and before
  // the pipeline): what callers that pass raw buffers (the daemon) need
  // when the signature holds tuples or tokens. No-op for tensor signatures.
  bool flatten_signature = false;
};

// `module` is rewritten in place by the passes (the executable keeps it).
StatusOr<std::unique_ptr<Executable>> CompileProgram(const Device& device,
                                                     std::shared_ptr<ir::Module> module,
                                                     const ProgramCompileOptions& options = {});

// The pipeline CompileProgram runs for `options` on `device`.
std::string EffectivePipeline(const Device& device, const ProgramCompileOptions& options);

// Whether `pipeline` (an AddPipeline spec; "" = none) names passes `device`
// can run: INVALID_ARGUMENT naming the bad pass otherwise. Target passes
// such as the cpu device's `fusion` are known only with their device.
Status CheckPipeline(const Device& device, const std::string& pipeline);

}  // namespace jitd::devices

#endif  // JITD_DEVICES_COMPILE_H_
