// jit/passes: target-independent rewrites of a verified ir::Module, run in a
// named order by a PassManager with a dump hook (the seeds' per-pass dumps).
//
// A Pass mutates the module in place and must leave it verifiable (the
// manager re-verifies after every pass when asked). Passes are stateless
// between runs; a PassManager is not thread-safe, but distinct managers may
// run on distinct modules concurrently.
#ifndef JITD_JIT_PASSES_PASS_MANAGER_H_
#define JITD_JIT_PASSES_PASS_MANAGER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  // Short, file-name safe: "inline", "canonicalize", "cse", ...
  virtual std::string_view name() const = 0;
  virtual Status Run(ir::Module& module) = 0;
};

class PassManager {
 public:
  // Called with index 0 and name "input" before the first pass, then with
  // index i (1-based) and the pass name after pass i. An error stops the run.
  using DumpHook =
      std::function<Status(int index, std::string_view pass_name, const ir::Module& module)>;

  void Add(std::unique_ptr<Pass> pass);
  void SetDumpHook(DumpHook hook);
  // Re-verify (ir::VerifyModule) after every pass; a failure names the pass.
  void set_verify_each(bool verify) { verify_each_ = verify; }
  // Names of the passes in order.
  std::vector<std::string> PassNames() const;

  Status Run(ir::Module& module);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
  DumpHook dump_hook_;
  bool verify_each_ = false;
};

struct FusionPolicy;  // fusion.h

struct PipelineOptions {
  // Rewrite CHLO ops into StableHLO ones (codegen wants this; the
  // interpreter does not need it).
  bool decompose_chlo = true;
  // Fold ops whose operands are all constants through jit/eval, up to this
  // many result bytes per op (bigger constants stay computed at run time).
  int64_t max_folded_bytes = int64_t{1} << 16;
  // What the target fuses (fusion.h). When set, the default pipeline ends
  // with the "fusion" pass; the pass "fusion" requires it.
  std::shared_ptr<const FusionPolicy> fusion;
  // The target computes no quantized element types: every pipeline
  // (default or spelled out, unless empty) runs lower-quantized
  // (lower_quantized.h) after its leading inline / decompose-chlo passes.
  bool lower_quantized = false;
};

// The standard pipeline: inline, [chlo decomposition], [lower-quantized],
// canonicalize, constant folding, CSE, DCE (canonicalize/fold/CSE/DCE may repeat), then
// fusion when the options carry a fusion policy.
void AddDefaultPipeline(PassManager& manager, const PipelineOptions& options = {});

// A hook that writes "<dir>/<index padded to 3>-<pass>.mlir" in StableHLO
// text for every call (the directory is created).
PassManager::DumpHook DirectoryDumpHook(std::string dir);

// The passes by name ("inline", "decompose-chlo", "lower-quantized", "canonicalize",
// "fold-constants", "cse", "dce", "fusion"); NOT_FOUND for another name,
// INVALID_ARGUMENT for "fusion" without options.fusion.
StatusOr<std::unique_ptr<Pass>> CreatePass(std::string_view name,
                                           const PipelineOptions& options = {});
// Every target-independent name CreatePass knows, in the default pipeline's
// order ("fusion", which needs a target's policy, is not listed).
std::vector<std::string> PassRegistryNames();
// Adds the passes of `spec` to `manager`: "default" (AddDefaultPipeline), or
// pass names separated by commas ("inline,cse,dce").
Status AddPipeline(PassManager& manager, std::string_view spec,
                   const PipelineOptions& options = {});

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_PASS_MANAGER_H_
