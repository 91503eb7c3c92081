#include "devices/compile.h"

#include <chrono>
#include <cstdio>

#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/flatten_signature.h"
#include "jit/passes/pass_manager.h"
#include "jit/passes/refine_shapes.h"

namespace jitd::devices {

std::string EffectivePipeline(const Device& device, const ProgramCompileOptions& options) {
  return options.pipeline ? *options.pipeline : std::string(device.pipeline());
}

namespace {

Status AddDevicePipeline(const Device& device, const std::string& pipeline, passes::PassManager& manager) {
  passes::PipelineOptions pipeline_options;
  device.ConfigurePipeline(pipeline_options);
  return passes::AddPipeline(manager, pipeline, pipeline_options);
}

}  // namespace

Status CheckPipeline(const Device& device, const std::string& pipeline) {
  if (pipeline.empty()) return Status::Ok();
  passes::PassManager probe;
  return AddDevicePipeline(device, pipeline, probe);
}

StatusOr<std::unique_ptr<Executable>> CompileProgram(const Device& device,
                                                     std::shared_ptr<ir::Module> module,
                                                     const ProgramCompileOptions& options) {
  std::vector<CompileStep>* steps = options.steps;
  auto now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  int64_t step_start = steps ? now() : 0;
  auto end_step = [&](std::string name) {
    if (!steps) return;
    const int64_t end = now();
    steps->push_back({std::move(name), step_start, end - step_start});
    step_start = end;
  };
  if (!options.argument_types.empty() || passes::HasDynamicShapes(*module)) {
    std::vector<ir::Type> types = options.argument_types;
    if (types.empty()) {
      // The entry's own argument types when they are static (dynamism
      // inside a program of static arguments); else say which one is not.
      const ir::Function* entry = module->EntryFunction();
      if (entry) types = entry->arg_types();
      for (size_t i = 0; i < types.size(); ++i) {
        if (types[i].is_dynamic()) {
          return InvalidArgument("the program has dynamic shapes (argument #" + std::to_string(i) +
                                 " of @" + entry->name() + " is " + types[i].ToString() +
                                 "): compiling it needs the concrete argument shapes (jitd run "
                                 "--arg-shapes or --input files, the compile request's "
                                 "argument_shapes)");
        }
      }
    }
    JITD_RETURN_IF_ERROR(passes::RefineShapes(*module, types));
    end_step("refine-shapes");
  }
  JITD_RETURN_IF_ERROR(passes::LowerApproxTopK(*module));
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*module));
  // Futures live inside a program: no caller can pass or take one.
  if (const ir::Function* entry = module->EntryFunction()) {
    for (const auto* types : {&entry->arg_types(), &entry->result_types()}) {
      for (const ir::Type& t : *types) {
        if (t.is_future()) {
          return InvalidArgument("@" + entry->name() + " " +
                                 (types == &entry->arg_types() ? "takes" : "returns") + " a " +
                                 t.ToString() +
                                 ": futures exist only inside a program (async_done it first)");
        }
      }
    }
  }
  end_step("verify");
  if (options.flatten_signature) {
    if (const ir::Function* entry = module->EntryFunction();
        entry && !(passes::AllTensorTypes(entry->arg_types()) &&
                   passes::AllTensorTypes(entry->result_types()))) {
      JITD_RETURN_IF_ERROR(passes::FlattenEntrySignature(*module));
      end_step("flatten-signature");
    }
  }
  const std::string pipeline = EffectivePipeline(device, options);
  std::vector<CompileDump>* dumps = options.dumps;
  if (pipeline.empty()) {
    if (dumps) dumps->push_back({"000-input.mlir", ir::PrintModule(*module)});
  } else {
    passes::PassManager manager;
    manager.set_verify_each(options.verify_each);
    JITD_RETURN_IF_ERROR(AddDevicePipeline(device, pipeline, manager));
    if (dumps || steps) {
      // Called before the first pass (index 0) and after each.
      manager.SetDumpHook([&](int index, std::string_view pass_name, const ir::Module& m) {
        if (index > 0) end_step(std::string(pass_name));
        if (dumps) {
          char prefix[16];
          std::snprintf(prefix, sizeof prefix, "%03d-", index);
          dumps->push_back({prefix + std::string(pass_name) + ".mlir", ir::PrintModule(m)});
        }
        if (steps) step_start = now();  // the dump's time is no pass's
        return Status::Ok();
      });
    }
    if (Status s = manager.Run(*module); !s.ok()) {
      return Status(s.code(), "compiler pipeline '" + pipeline + "': " + s.message());
    }
  }
  if (dumps) dumps->push_back({"optimized.mlir", ir::PrintModule(*module)});
  // An op jitd knows but this device does not run: say so now, naming the
  // device, rather than when the op is reached.
  for (const auto& fn : module->functions()) {
    Status unsupported = Status::Ok();
    ir::WalkOps(fn->body(), [&](const ir::Op& op) {
      if (unsupported.ok()) unsupported = device.CheckOp(op);
      // A device that compiles has no future values: the inline pass runs
      // async ops synchronously (passes::InlineAsyncOps).
      if (unsupported.ok() && !device.pipeline().empty() &&
          (op.code() == ir::OpCode::kAsyncStart || op.code() == ir::OpCode::kAsyncDone)) {
        unsupported = Unimplemented(op.loc().ToString() + ": '" + std::string(op.name()) +
                                    "' is run through the 'inline' pass, which pipeline '" +
                                    pipeline + "' does not have");
      }
    });
    if (!unsupported.ok()) {
      return Status(unsupported.code(), "device '" + std::string(device.name()) +
                                            "' cannot run this program: " + unsupported.message());
    }
  }
  CompileOptions device_options;
  device_options.dumps = dumps;
  if (steps) step_start = now();
  auto executable = device.Compile(std::shared_ptr<const ir::Module>(std::move(module)), device_options);
  end_step("device compile (" + std::string(device.name()) + ")");
  return executable;
}

}  // namespace jitd::devices
