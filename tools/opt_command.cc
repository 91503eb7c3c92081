#include "tools/opt_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "jit/codegen/fusion.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/pass_manager.h"
#include "jit/passes/passes.h"
#include "jit/passes/refine_shapes.h"
#include "tools/cli_util.h"

namespace jitd::tools {

namespace {

StatusOr<std::string> ReadText(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream s;
  s << in.rdbuf();
  if (!in.good() && !in.eof()) return InvalidArgument("cannot read '" + path + "'");
  return s.str();
}

}  // namespace

CLI::App* AddOptCommand(CLI::App& app, OptArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "opt", "Run compiler passes (jit/passes) on a StableHLO file and print the result");
  std::string names;
  for (const std::string& n : passes::PassRegistryNames()) names += (names.empty() ? "" : ", ") + n;
  cmd->footer(
      "Passes: " + names + ".\n"
      "`default` is inline, decompose-chlo, canonicalize, fold-constants, cse,\n"
      "canonicalize, dce; `fusion` (the cpu device's, last in its pipeline)\n"
      "rewrites kernels into jitd.fusion ops. Every module of FILE is printed after the pipeline,\n"
      "modules separated by `// -----`. Exit status: 0 ok, 1 invalid program or\n"
      "a pass failed, 2 usage or I/O error.");
  cmd->add_option("FILE", args.path, "StableHLO text file (.mlir), or - for standard input")
      ->type_name("PATH")
      ->required();
  cmd->add_option("--passes", args.passes, "`default`, or pass names separated by commas")
      ->capture_default_str();
  cmd->add_option("--dump-dir", args.dump_dir,
                  "Write the module before and after each pass as DIR/NNN-PASS.mlir")
      ->type_name("DIR");
  cmd->add_flag("--verify-each", args.verify_each, "Verify the module after every pass");
  cmd->add_option("--arg-shapes", args.arg_shapes,
                  "Refine a program with dynamic shapes (`?`) for these argument types first, "
                  "e.g. \"tensor<8x4xf32>, tensor<4x3xf32>\"")
      ->type_name("TYPES");
  cmd->add_flag("--no-decompose-chlo", args.no_decompose_chlo,
                "Leave CHLO ops alone in the default pipeline");
  cmd->add_option("--max-folded-bytes", args.max_folded_bytes,
                  "Largest result constant folding may create, in bytes")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--stats", args.stats,
                "Print op counts before/after and the pipeline's time to standard error");
  return cmd;
}

int RunOpt(const OptArgs& args) {
  StatusOr<std::string> text = ReadText(args.path);
  if (!text.ok()) {
    std::fprintf(stderr, "jitd opt: %s\n", text.status().message().c_str());
    return kExitUsageOrIo;
  }
  passes::PipelineOptions options;
  options.decompose_chlo = !args.no_decompose_chlo;
  options.max_folded_bytes = args.max_folded_bytes;
  // A named "fusion" fuses as the cpu device does ("default" here stays
  // target-independent: "default,fusion" is the cpu device's pipeline).
  if (args.passes.find("fusion") != std::string::npos) {
    options.fusion = std::make_shared<const passes::FusionPolicy>(codegen::CpuFusionPolicy());
  }
  {
    passes::PassManager probe;
    if (Status s = passes::AddPipeline(probe, args.passes, options); !s.ok()) {
      std::fprintf(stderr, "jitd opt: --passes: %s\n", s.message().c_str());
      return kExitUsageOrIo;
    }
  }
  std::vector<ir::Type> arg_types;
  if (!args.arg_shapes.empty()) {
    StatusOr<std::vector<ir::Type>> parsed = passes::ParseArgumentTypes(args.arg_shapes);
    if (!parsed.ok()) {
      std::fprintf(stderr, "jitd opt: --arg-shapes: %s\n", parsed.status().message().c_str());
      return kExitUsageOrIo;
    }
    arg_types = std::move(parsed).value();
  }
  auto modules = frontend::ParsePrograms(*text);
  if (!modules.ok()) {
    std::fprintf(stderr, "%s\n", WithFileName(args.path, modules.status().message()).c_str());
    return kExitInvalidProgram;
  }
  std::string out;
  for (size_t i = 0; i < modules->size(); ++i) {
    ir::Module& module = *(*modules)[i];
    if (Status s = ir::VerifyModule(module); !s.ok()) {
      std::fprintf(stderr, "%s\n", WithFileName(args.path, s.message()).c_str());
      return kExitInvalidProgram;
    }
    if (!args.arg_shapes.empty()) {
      if (Status r = passes::RefineShapes(module, arg_types); !r.ok()) {
        std::fprintf(stderr, "%s\n", WithFileName(args.path, r.message()).c_str());
        return kExitInvalidProgram;
      }
    }
    passes::PassManager manager;
    (void)passes::AddPipeline(manager, args.passes, options);  // checked above
    manager.set_verify_each(args.verify_each);
    if (!args.dump_dir.empty()) {
      std::string dir = args.dump_dir;
      if (modules->size() > 1) dir += "/module" + std::to_string(i);
      manager.SetDumpHook(passes::DirectoryDumpHook(dir));
    }
    const int64_t before = passes::CountOps(module);
    const auto start = std::chrono::steady_clock::now();
    Status s = manager.Run(module);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", WithFileName(args.path, s.message()).c_str());
      return kExitInvalidProgram;
    }
    if (args.stats) {
      std::fprintf(stderr, "%s%s: %lld ops -> %lld ops (%lld removed), pipeline %.3f ms\n",
                   DisplayName(args.path).c_str(),
                   modules->size() > 1 ? ("#" + std::to_string(i)).c_str() : "",
                   static_cast<long long>(before), static_cast<long long>(passes::CountOps(module)),
                   static_cast<long long>(before - passes::CountOps(module)), ms);
    }
    if (i > 0) out += "// -----\n";
    out += ir::PrintModule(module);
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
    std::fprintf(stderr, "jitd opt: cannot write to standard output\n");
    return kExitUsageOrIo;
  }
  return kExitOk;
}

}  // namespace jitd::tools
