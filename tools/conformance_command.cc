#include "tools/conformance_command.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "devices/compile.h"
#include "devices/device.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "jit/passes/refine_shapes.h"
#include "tools/conformance/checks.h"
#include "tools/conformance/runner.h"
#if JITD_HAVE_CUDA_COMPILER
#include "devices/cuda/cuda_compiler.h"
#endif

namespace jitd::tools {

namespace {

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

// The pipeline of --compile-only: no constant folding and no algebraic
// simplification (canonicalize turns add(x, 0) into x), so that every op
// of a program computing on constants reaches codegen.
constexpr char kCompileOnlyPipeline[] = "inline,decompose-chlo,cse,dce";

#if JITD_HAVE_CUDA_COMPILER
// One case of --compile-only: parse, verify, hoist the checks (their
// operands become results, so nothing is dead), compile to a cubin.
struct CompileOnlyCase {
  std::string name;
  bool compiled = false;
  std::string detail;       // the refusal, or the program's summary
  std::string refused_op;   // the op named by an UNIMPLEMENTED refusal
  int64_t launches = 0;
  int64_t unique_kernels = 0;
  int64_t library_calls = 0;
};

std::string RefusedOp(const std::string& message) {
  const size_t open = message.find('\'');
  if (message.rfind("cuda: ", 0) != 0 || open == std::string::npos) return "";
  const size_t close = message.find('\'', open + 1);
  return close == std::string::npos ? "" : message.substr(open + 1, close - open - 1);
}

CompileOnlyCase CompileOneModule(const std::string& name, const frontend::ModuleText& piece,
                                 const devices::cuda::CudaCompileOptions& options) {
  CompileOnlyCase c;
  c.name = name;
  auto parsed = frontend::ParseProgram(piece);
  if (!parsed.ok()) {
    c.detail = "parse: " + parsed.status().message();
    return c;
  }
  std::unique_ptr<ir::Module> module = std::move(parsed).value();
  if (Status s = ir::VerifyModule(*module); !s.ok()) {
    c.detail = "verify: " + s.message();
    return c;
  }
  ir::Function* entry = module->EntryFunction();
  if (!entry || !entry->entry()) {
    c.detail = "verify: no entry function (@main, or one public function)";
    return c;
  }
  if (auto hoisted = conformance::HoistChecks(*entry); !hoisted.ok()) {
    c.detail = "verify: " + hoisted.status().message();
    return c;
  }
  // A shape-polymorphic program called with concrete values refines first,
  // as devices::CompileProgram does on a device.
  if (passes::HasDynamicShapes(*module)) {
    const std::vector<ir::Type> types = entry->arg_types();
    if (Status s = passes::RefineShapes(*module, types); !s.ok()) {
      c.detail = "verify: " + s.message();
      return c;
    }
  }
  if (Status s = passes::LowerApproxTopK(*module); !s.ok()) {
    c.detail = "verify: " + s.message();
    return c;
  }
  auto program = devices::cuda::CompileCuda(*module, options);
  if (!program.ok()) {
    c.refused_op = program.status().code() == StatusCode::kUnimplemented ? RefusedOp(program.status().message()) : "";
    c.detail = (c.refused_op.empty() ? "error: " : "unsupported: ") + program.status().message();
    return c;
  }
  c.compiled = true;
  c.launches = program->launches;
  c.unique_kernels = program->unique_kernels;
  c.library_calls = program->library_calls;
  c.detail = std::to_string(c.launches) + " kernel launches (" + std::to_string(c.unique_kernels) +
             " unique), " + std::to_string(c.library_calls) + " library calls, cubin " + std::to_string(program->cubin.size()) + " bytes";
  return c;
}

int RunCudaCompileOnly(const ConformanceArgs& args, const std::vector<std::string>& files,
                       const std::map<std::string, std::string>& expected) {
  devices::cuda::PtxCompilerOptions assembler_options;
  assembler_options.assembler = args.ptx_assembler;
  auto assembler = devices::cuda::PtxCompiler::Create(assembler_options);
  if (!assembler.ok()) {
    std::fprintf(stderr, "jitd conformance: %s\n", assembler.status().message().c_str());
    return 2;
  }
  devices::cuda::CudaCompileOptions options;
  options.sm = args.cuda_arch;
  options.assembler = assembler->get();
  // Library calls planned as on a GPU machine that has cuBLASLt, cuFFT and cuDNN
  // (the libraries are not needed to plan them).
  // --cuda-no-libraries: jit's own kernels for every op (their fallback path).
  options.use_cublaslt = options.use_cufft = options.use_cudnn = !args.cuda_no_libraries;
  // --cuda-no-cudnn: the plan of a machine without cuDNN (convolutions
  // through im2col + cuBLASLt, else jit's own kernel).
  if (args.cuda_no_cudnn) options.use_cudnn = false;
  // Every library call that can be planned is (a GPU device gives the
  // corpus's small dots and convolutions jitd's exact kernels instead), so
  // that every library plan is checked.
  options.library_min_multiply_adds = 0;
  options.pipeline = args.pipeline.empty() ? kCompileOnlyPipeline : args.pipeline == "none" ? "" : args.pipeline;
  if (auto v = devices::cuda::ChoosePtxVersion(options.sm, (*assembler)->toolchain().max_ptx_version); !v.ok()) {
    std::fprintf(stderr, "jitd conformance: --cuda-arch: %s\n", v.status().message().c_str());
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::vector<CompileOnlyCase>> per_file(files.size());
  std::atomic<size_t> next{0};
  std::mutex print_mutex;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      std::ifstream in(files[i], std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const std::vector<frontend::ModuleText> pieces = frontend::SplitProgram(text);
      const std::string base = std::filesystem::path(files[i]).filename().string();
      for (size_t m = 0; m < pieces.size(); ++m) {
        const std::string name = pieces.size() > 1 ? base + "#" + std::to_string(m) : base;
        per_file[i].push_back(CompileOneModule(name, pieces[m], options));
      }
      std::lock_guard<std::mutex> lock(print_mutex);
      for (const CompileOnlyCase& c : per_file[i]) {
        std::printf("%s: %s: %s\n", c.name.c_str(), c.compiled ? "compiled" : "failed", c.detail.c_str());
      }
      std::fflush(stdout);
    }
  };
  const int jobs = std::max(1, std::min<int>(args.jobs, static_cast<int>(files.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t passed = 0, total = 0, unexpected = 0, no_kernels = 0;
  int64_t launches = 0, unique = 0, library_calls = 0;
  std::map<std::string, int> refused;
  std::vector<std::string> fixed;
  for (const auto& cases : per_file) {
    for (const CompileOnlyCase& c : cases) {
      ++total;
      const bool listed = expected.count(c.name) > 0;
      if (c.compiled) {
        ++passed;
        launches += c.launches;
        unique += c.unique_kernels;
        library_calls += c.library_calls;
        no_kernels += c.launches == 0 && c.library_calls == 0;
        if (listed) fixed.push_back(c.name);
      } else {
        if (!listed) ++unexpected;
        ++refused[c.refused_op.empty() ? "(errors)" : c.refused_op];
      }
    }
  }
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [op, n] : refused) by_count.push_back({-n, op});
  std::sort(by_count.begin(), by_count.end());
  if (!by_count.empty()) {
    std::printf("not compiled, by op:");
    for (const auto& [n, op] : by_count) std::printf(" %s %d;", op.c_str(), -n);
    std::printf("\n");
  }
  if (!args.expected_failures_path.empty()) {
    for (const std::string& f : fixed) {
      std::printf("%s: compiles now; remove it from %s\n", f.c_str(), args.expected_failures_path.c_str());
    }
    std::printf("%zu failures not in %s\n", unexpected, args.expected_failures_path.c_str());
  }
  std::printf("device cuda --compile-only %s (PTX via LLVM, cubin via %s) after passes %s, %zu files, %.1f s wall with %d jobs\n",
              options.sm.c_str(), (*assembler)->toolchain().Describe().c_str(), options.pipeline.c_str(),
              files.size(), wall, args.jobs);
  std::printf("%lld kernel launches (%lld unique kernels), %lld library calls; %zu compiled programs became no kernel "
              "or library call\n",
              static_cast<long long>(launches), static_cast<long long>(unique), static_cast<long long>(library_calls),
              no_kernels);
  std::printf("%zu passed, %zu failed, 0 skipped\n", passed, total - passed);
  std::fflush(stdout);
  const bool failed = args.expected_failures_path.empty() ? passed != total : unexpected > 0;
  return failed ? 1 : 0;
}
#endif  // JITD_HAVE_CUDA_COMPILER

}  // namespace

CLI::App* AddConformanceCommand(CLI::App& app, ConformanceArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "conformance", "Run self-checking StableHLO programs on a device and report failures");
  cmd->footer(
      "Each module of each file is a case: it passes when it parses, verifies,\n"
      "runs, and every check in @main holds (custom_call @check.* or check.* ops,\n"
      "semantics of ../shared/conformance/README.md). Prints one line per failing\n"
      "case (file, kind: parse, verify, unsupported, runtime, check; for a check\n"
      "the element, actual, expected, and ULP distance or tolerance), then\n"
      "`N passed, M failed, K skipped`. Files whose first line is RUN-DISABLED\n"
      "run like the others and are counted apart. Exit status: 0 all passed (or\n"
      "every failure is listed in --expected-failures), 1 failures, 2 usage/I/O.");
  std::string devices;
  for (const std::string& n : devices::DeviceNames()) devices += (devices.empty() ? "" : ", ") + n;
  cmd->add_option("--device", args.device, "Device to run on (" + devices + ")")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", args.jobs, "Files run in parallel")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--timeout", args.timeout_seconds, "Seconds one case may run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--report", args.report_path, "Write every case as JSON to FILE")
      ->type_name("FILE");
  cmd->add_option("--markdown", args.markdown_path,
                  "Write a docs/CONFORMANCE.md section (counts by family and type, failures)")
      ->type_name("FILE");
  cmd->add_option("--expected-failures", args.expected_failures_path,
                  "Known failures, one file name per line: only others fail the run")
      ->type_name("FILE");
  cmd->add_option("--pipeline", args.pipeline,
                  "Compiler passes (`default`, PASS,PASS,..., or `none`) run on every module, "
                  "verifying after each, before the device compiles it; default: the device's "
                  "own (none for the interpreter, `default` for cpu and cuda; the GPU's kernels see "
                  "every op only with `inline,decompose-chlo,cse,dce`)")
      ->type_name("PASSES");
  cmd->add_flag("--compile-only", args.compile_only,
               "With --device=cuda: compile every program to a cubin (PTX through LLVM, assembled "
               "by nvJitLink or ptxas; no GPU or driver needed) and run nothing; constant folding is "
               "off (pipeline " + std::string(kCompileOnlyPipeline) + ") so every op reaches code "
               "generation. A case passes when it compiles; refusals name the op");
  cmd->add_option("--cuda-arch", args.cuda_arch, "GPU architecture of --compile-only (sm_NN)")
      ->capture_default_str();
  cmd->add_flag("--cuda-no-libraries", args.cuda_no_libraries,
                "--compile-only: no cuBLASLt / cuFFT / cuDNN calls, jit's own kernels for every op");
  cmd->add_flag("--cuda-no-cudnn", args.cuda_no_cudnn,
                "--compile-only: no cuDNN calls (convolutions through im2col + cuBLASLt, as on a machine "
                "without cuDNN)");
  cmd->add_option("--ptx-assembler", args.ptx_assembler,
                  "PTX -> cubin: auto (nvJitLink, else ptxas), nvjitlink or ptxas")
      ->check(CLI::IsMember({"auto", "nvjitlink", "ptxas"}))
      ->capture_default_str();
  cmd->add_option("PATH", args.paths, "Files, or directories searched for *.mlir")
      ->required();
  return cmd;
}

int RunConformance(const ConformanceArgs& args) {
  if (args.compile_only) {
    if (args.device != "cuda") {
      std::fprintf(stderr, "jitd conformance: --compile-only needs --device=cuda, not --device=%s\n",
                   args.device.c_str());
      return 2;
    }
#if JITD_HAVE_CUDA_COMPILER
    auto files = conformance::CollectFiles(args.paths);
    if (!files.ok()) {
      std::fprintf(stderr, "jitd conformance: %s\n", files.status().message().c_str());
      return 2;
    }
    std::map<std::string, std::string> expected;
    if (!args.expected_failures_path.empty()) {
      auto read = conformance::ReadExpectedFailures(args.expected_failures_path);
      if (!read.ok()) {
        std::fprintf(stderr, "jitd conformance: %s\n", read.status().message().c_str());
        return 2;
      }
      expected = std::move(read).value();
    }
    return RunCudaCompileOnly(args, *files, expected);
#else
    std::fprintf(stderr, "jitd conformance: this jitd was built without the cuda compiler\n");
    return 2;
#endif
  }
  // The cuda device that runs programs compiles for its own GPU with what it
  // finds; these choose a compile-only target.
  const char* compile_only_flag = args.cuda_no_libraries            ? "--cuda-no-libraries"
                                  : args.cuda_no_cudnn              ? "--cuda-no-cudnn"
                                  : args.cuda_arch != "sm_90"       ? "--cuda-arch"
                                  : args.ptx_assembler != "auto"    ? "--ptx-assembler"
                                                                    : nullptr;
  if (compile_only_flag) {
    std::fprintf(stderr, "jitd conformance: %s applies to --compile-only runs only\n", compile_only_flag);
    return 2;
  }
  if (args.device == "cuda") {
    // The corpus's expected values are exact f32 products; DEFAULT
    // precision lets cuBLASLt / cuDNN use TF32, as XLA does on GPUs.
    ::setenv("JITD_CUDA_EXACT_F32", "1", 1);
    std::fprintf(stderr, "jitd conformance: cuda: f32 matmuls and convolutions exact (--cuda-exact-f32)\n");
  }
  auto device = devices::CreateDevice(args.device);
  if (!device.ok()) {
    std::fprintf(stderr, "jitd conformance: %s\n", device.status().message().c_str());
    return 2;
  }
  auto files = conformance::CollectFiles(args.paths);
  if (!files.ok()) {
    std::fprintf(stderr, "jitd conformance: %s\n", files.status().message().c_str());
    return 2;
  }
  std::map<std::string, std::string> expected;
  if (!args.expected_failures_path.empty()) {
    auto read = conformance::ReadExpectedFailures(args.expected_failures_path);
    if (!read.ok()) {
      std::fprintf(stderr, "jitd conformance: %s\n", read.status().message().c_str());
      return 2;
    }
    expected = std::move(read).value();
  }
  conformance::RunnerOptions options;
  options.jobs = args.jobs;
  if (args.pipeline == "none") {
    options.pipeline = "";
  } else if (!args.pipeline.empty()) {
    options.pipeline = args.pipeline;
  }
  const std::string pipeline = devices::EffectivePipeline(**device, {.pipeline = options.pipeline});
  if (Status s = devices::CheckPipeline(**device, pipeline); !s.ok()) {
    std::fprintf(stderr, "jitd conformance: --pipeline: %s\n", s.message().c_str());
    return 2;
  }
  options.timeout_seconds = args.timeout_seconds;
  const auto start = std::chrono::steady_clock::now();
  auto results = conformance::RunFiles(*files, **device, options,
                                       [](const conformance::CaseResult& r) {
                                         if (r.passed()) return;
                                         std::printf("%s: %s: %s\n", r.name().c_str(),
                                                     std::string(OutcomeName(r.outcome)).c_str(),
                                                     r.detail.c_str());
                                         std::fflush(stdout);
                                       });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t passed = 0, disabled = 0, disabled_passed = 0, unexpected = 0;
  std::vector<std::string> fixed;
  for (const auto& r : results) {
    passed += r.passed();
    disabled += r.disabled;
    disabled_passed += r.disabled && r.passed();
    const bool listed = expected.count(conformance::CaseKey(r)) > 0;
    if (!r.passed() && !listed) ++unexpected;
    if (r.passed() && listed) fixed.push_back(conformance::CaseKey(r));
  }
  int status = 0;
  if (!args.report_path.empty() &&
      !WriteFile(args.report_path, conformance::ToJson(results, args.device, wall))) {
    std::fprintf(stderr, "jitd conformance: cannot write '%s'\n", args.report_path.c_str());
    status = 2;
  }
  if (!args.markdown_path.empty() &&
      !WriteFile(args.markdown_path, conformance::ToMarkdown(results, args.device, expected))) {
    std::fprintf(stderr, "jitd conformance: cannot write '%s'\n", args.markdown_path.c_str());
    status = 2;
  }
  if (disabled) {
    std::printf("RUN-DISABLED files: %zu passed, %zu failed\n", disabled_passed,
                disabled - disabled_passed);
  }
  if (!args.expected_failures_path.empty()) {
    for (const std::string& f : fixed) {
      std::printf("%s: passes now; remove it from %s\n", f.c_str(),
                  args.expected_failures_path.c_str());
    }
    std::printf("%zu failures not in %s\n", unexpected, args.expected_failures_path.c_str());
  }
  std::printf("device %s%s%s, %zu files, %.1f s wall with %d jobs\n", args.device.c_str(),
              pipeline.empty() ? "" : " after passes ", pipeline.c_str(), files->size(),
              wall, args.jobs);
  std::printf("%zu passed, %zu failed, 0 skipped\n", passed, results.size() - passed);
  std::fflush(stdout);
  if (status) return status;
  const bool failed = args.expected_failures_path.empty() ? passed != results.size() : unexpected > 0;
  return failed ? 1 : 0;
}

}  // namespace jitd::tools
