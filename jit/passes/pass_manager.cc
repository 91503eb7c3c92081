#include "jit/passes/pass_manager.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/fusion.h"
#include "jit/passes/lower_quantized.h"
#include "jit/passes/passes.h"
#include "jit/passes/refine_shapes.h"

namespace jitd::passes {

void PassManager::Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }

void PassManager::SetDumpHook(DumpHook hook) { dump_hook_ = std::move(hook); }

std::vector<std::string> PassManager::PassNames() const {
  std::vector<std::string> names;
  names.reserve(passes_.size());
  for (const auto& p : passes_) names.emplace_back(p->name());
  return names;
}

Status PassManager::Run(ir::Module& module) {
  // The passes assume static shapes (sizes, folding, fusion); a program
  // with `?` dimensions is refined for concrete argument types first.
  if (!passes_.empty() && HasDynamicShapes(module)) {
    return InvalidArgument(
        "the module has dynamic shapes ('?'); the passes run on static programs: refine it "
        "for concrete argument types first (--arg-shapes)");
  }
  if (dump_hook_) JITD_RETURN_IF_ERROR(dump_hook_(0, "input", module));
  for (size_t i = 0; i < passes_.size(); ++i) {
    Pass& pass = *passes_[i];
    if (Status s = pass.Run(module); !s.ok()) {
      return Status(s.code(), "pass '" + std::string(pass.name()) + "': " + s.message());
    }
    if (verify_each_) {
      if (Status s = ir::VerifyModule(module); !s.ok()) {
        return Internal("the module does not verify after pass '" + std::string(pass.name()) +
                        "' (#" + std::to_string(i + 1) + "): " + s.message());
      }
    }
    if (dump_hook_) {
      JITD_RETURN_IF_ERROR(dump_hook_(static_cast<int>(i + 1), pass.name(), module));
    }
  }
  return Status::Ok();
}

void AddDefaultPipeline(PassManager& manager, const PipelineOptions& options) {
  manager.Add(CreateInlinePass());
  if (options.decompose_chlo) manager.Add(CreateDecomposeChloPass());
  if (options.lower_quantized) manager.Add(CreateLowerQuantizedPass());
  manager.Add(CreateCanonicalizePass());
  manager.Add(CreateFoldConstantsPass(options.max_folded_bytes));
  manager.Add(CreateCsePass());
  // Folding and CSE expose more simplifications (identities on constants,
  // merged operands); a second canonicalization picks them up, and DCE
  // removes everything the rewrites left unused.
  manager.Add(CreateCanonicalizePass());
  manager.Add(CreateDcePass());
  // Last: the kernels the device emits, visible in the dumps.
  if (options.fusion) manager.Add(CreateFusionPass(*options.fusion));
}

PassManager::DumpHook DirectoryDumpHook(std::string dir) {
  return [dir = std::move(dir)](int index, std::string_view pass_name,
                                const ir::Module& module) -> Status {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return InvalidArgument("cannot create dump directory '" + dir + "': " + ec.message());
    char prefix[16];
    std::snprintf(prefix, sizeof prefix, "%03d-", index);
    const std::string path = dir + "/" + prefix + std::string(pass_name) + ".mlir";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << ir::PrintModule(module);
    out.close();
    if (!out) return InvalidArgument("cannot write dump file '" + path + "'");
    return Status::Ok();
  };
}

std::vector<std::string> PassRegistryNames() {
  return {"inline", "decompose-chlo", "lower-quantized", "canonicalize", "fold-constants", "cse", "dce"};
}

StatusOr<std::unique_ptr<Pass>> CreatePass(std::string_view name, const PipelineOptions& options) {
  if (name == "inline") return CreateInlinePass();
  if (name == "decompose-chlo") return CreateDecomposeChloPass();
  if (name == "lower-quantized") return CreateLowerQuantizedPass();
  if (name == "canonicalize") return CreateCanonicalizePass();
  if (name == "fold-constants") return CreateFoldConstantsPass(options.max_folded_bytes);
  if (name == "cse") return CreateCsePass();
  if (name == "dce") return CreateDcePass();
  if (name == "fusion") {
    if (!options.fusion) {
      return InvalidArgument("pass 'fusion' needs a target's fusion policy (a device pipeline provides one)");
    }
    return CreateFusionPass(*options.fusion);
  }
  std::string known;
  for (const std::string& n : PassRegistryNames()) known += (known.empty() ? "" : ", ") + n;
  known += ", fusion";
  return NotFound("unknown pass '" + std::string(name) + "' (known: " + known + ", or default)");
}

Status AddPipeline(PassManager& manager, std::string_view spec, const PipelineOptions& options) {
  if (spec == "default") {
    AddDefaultPipeline(manager, options);
    return Status::Ok();
  }
  // A target that does not compute quantized types gets lower-quantized in
  // every pipeline, after the spec's leading inline / decompose-chlo.
  bool lowered = !options.lower_quantized;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view name = spec.substr(start, end - start);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name.empty()) return InvalidArgument("empty pass name in pipeline '" + std::string(spec) + "'");
    if (!lowered && name != "inline" && name != "decompose-chlo" && name != "default") {
      if (name != "lower-quantized") manager.Add(CreateLowerQuantizedPass());
      lowered = true;
    }
    if (name == "default") {
      AddDefaultPipeline(manager, options);
      lowered = true;
    } else {
      JITD_ASSIGN_OR_RETURN(std::unique_ptr<Pass> pass, CreatePass(name, options));
      manager.Add(std::move(pass));
    }
    start = end + 1;
  }
  if (!lowered) manager.Add(CreateLowerQuantizedPass());
  return Status::Ok();
}

// ---- Shared op properties ----------------------------------------------------

bool HasSideEffects(const ir::Op& op) {
  using ir::OpCode;
  switch (op.code()) {
    case OpCode::kInfeed:
    case OpCode::kOutfeed:
    case OpCode::kInterpreterPrint:
    case OpCode::kInterpreterProbe:  // reports what it sees (check.expect_serialized_eq)
    case OpCode::kInterpreterRunParallel:
    case OpCode::kSend:
    case OpCode::kRecv:
    case OpCode::kAsyncStart:
    case OpCode::kAsyncDone:
    case OpCode::kCustomCall:
    case OpCode::kRng:
    case OpCode::kRngBitGenerator:
    case OpCode::kFuncCall:  // the callee may have effects; inlining exposes them
    case OpCode::kOptimizationBarrier:
    case OpCode::kFuncReturn:
    case OpCode::kReturn:
    case OpCode::kCheckExpectEq:
    case OpCode::kCheckExpectEqConst:
    case OpCode::kCheckExpectAlmostEq:
    case OpCode::kCheckExpectAlmostEqConst:
    case OpCode::kCheckExpectClose:
    case OpCode::kCheckExpectSerializedEq:
      return true;
    default:
      break;
  }
  for (size_t r = 0; r < op.num_regions(); ++r) {
    const ir::Region& region = op.region(r);
    for (size_t b = 0; b < region.num_blocks(); ++b) {
      for (const auto& inner : region.block(b).ops()) {
        if (inner->code() == OpCode::kReturn) continue;  // a region's own terminator
        if (HasSideEffects(*inner)) return true;
      }
    }
  }
  return false;
}

int64_t CountOps(const ir::Module& module) {
  int64_t n = 0;
  for (const auto& fn : module.functions()) {
    ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const ir::Op&) { ++n; });
  }
  return n;
}

}  // namespace jitd::passes
