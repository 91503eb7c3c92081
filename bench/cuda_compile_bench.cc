// The cuda compiler offline (issue 14): cold compiles, module -> cubin,
// each a fresh LLVM context and target machine (libdevice's file bytes stay
// read once per process, as in the daemon). No GPU needed.
//
//   cuda_compile/tiny/ASSEMBLER        one add on f32[20,20], PTX -> cubin by
//                                      nvjitlink or ptxas (a subprocess)
//   cuda_compile/corpus_median/ASSEMBLER  the corpus file (checks hoisted,
//                                      no constant folding, as --compile-only)
//                                      whose cold compile is the median over
//                                      every 10th corpus file that compiles
//                                      to at least one kernel
//   cuda_compile/corpus_median/ptx_only   the same, stopping at PTX
//   cuda_compile/flat_1m/vector_WIDTH/nvjitlink  a 1M-element f32 fusion
//                                      (tanh, multiply, add of three inputs)
//                                      with the flat schedule's vector width
//                                      capped at 1 or left at 4: what the
//                                      unrolled body costs the compile (the
//                                      run-time side needs a GPU)
//
// Run: build/bin/jitd_cuda_compile_bench --benchmark_repetitions=5
//      --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "devices/cuda/cuda_compiler.h"
#include "devices/cuda/ptx_compiler.h"
#include "jit/codegen/kernel_plan.h"
#include "jit/frontend/parser.h"
#include "tools/conformance/checks.h"

namespace jitd {
namespace {

constexpr char kPipeline[] = "inline,decompose-chlo,cse,dce";

const char* kTiny = R"(
func.func @main(%x: tensor<20x20xf32>, %y: tensor<20x20xf32>) -> tensor<20x20xf32> {
  %0 = stablehlo.add %x, %y : tensor<20x20xf32>
  return %0 : tensor<20x20xf32>
}
)";

const devices::cuda::PtxCompiler* Assembler(const std::string& which) {
  static auto* compilers = new std::map<std::string, std::unique_ptr<devices::cuda::PtxCompiler>>();
  auto it = compilers->find(which);
  if (it == compilers->end()) {
    devices::cuda::PtxCompilerOptions options;
    options.assembler = which;
    auto created = devices::cuda::PtxCompiler::Create(options);
    it = compilers->emplace(which, created.ok() ? std::move(created).value() : nullptr).first;
  }
  return it->second.get();
}

// The module with its conformance checks hoisted into results.
std::unique_ptr<ir::Module> Load(const std::string& text) {
  auto parsed = frontend::ParseModule(text);
  if (!parsed.ok()) return nullptr;
  std::unique_ptr<ir::Module> module = std::move(parsed).value();
  ir::Function* entry = module->EntryFunction();
  if (!entry || !entry->entry() || !conformance::HoistChecks(*entry).ok()) return nullptr;
  return module;
}

const char* kFlat1M = R"(
func.func @main(%x: tensor<1024x1024xf32>, %y: tensor<1024x1024xf32>, %z: tensor<1024x1024xf32>) -> tensor<1024x1024xf32> {
  %0 = stablehlo.tanh %x : tensor<1024x1024xf32>
  %1 = stablehlo.multiply %0, %y : tensor<1024x1024xf32>
  %2 = stablehlo.add %1, %z : tensor<1024x1024xf32>
  return %2 : tensor<1024x1024xf32>
}
)";

StatusOr<devices::cuda::CudaProgram> Compile(const ir::Module& module, const devices::cuda::PtxCompiler* assembler,
                                             int64_t max_vector_width = codegen::GridLimits{}.max_vector_width) {
  devices::cuda::CudaCompileOptions options;
  options.limits.max_vector_width = max_vector_width;
  options.pipeline = kPipeline;
  options.assembler = assembler;
  options.assemble = assembler != nullptr;
  return devices::cuda::CompileCuda(module, options);
}

void CompileLoop(benchmark::State& state, const std::string& text, const std::string& assembler_name,
                 int64_t max_vector_width = codegen::GridLimits{}.max_vector_width) {
  const devices::cuda::PtxCompiler* assembler = assembler_name == "ptx_only" ? nullptr : Assembler(assembler_name);
  if (assembler_name != "ptx_only" && !assembler) {
    state.SkipWithError(("no " + assembler_name + " here").c_str());
    return;
  }
  std::unique_ptr<ir::Module> module = Load(text);
  if (!module) {
    state.SkipWithError("the program does not parse");
    return;
  }
  for (auto _ : state) {
    auto program = Compile(*module, assembler, max_vector_width);
    if (!program.ok()) {
      state.SkipWithError(program.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(program->cubin.data());
    state.counters["kernels"] = static_cast<double>(program->unique_kernels);
    state.counters["cubin_bytes"] = static_cast<double>(program->cubin.size());
  }
}

std::string MedianCorpusProgram() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(std::string(JITD_SHARED_DIR) + "/conformance/stablehlo")) {
    if (e.path().extension() == ".mlir") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::pair<double, std::string>> timed;
  const devices::cuda::PtxCompiler* assembler = Assembler("auto");
  for (size_t i = 0; i < files.size(); i += 10) {
    std::ifstream in(files[i]);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::unique_ptr<ir::Module> module = Load(text);
    if (!module) continue;
    const auto start = std::chrono::steady_clock::now();
    auto program = Compile(*module, assembler);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!program.ok() || program->unique_kernels == 0) continue;
    timed.emplace_back(s, text);
  }
  if (timed.empty()) return kTiny;
  std::sort(timed.begin(), timed.end());
  std::fprintf(stderr, "corpus sample: %zu programs compiled to cubins, median %.2f ms, max %.2f ms\n", timed.size(),
               timed[timed.size() / 2].first * 1e3, timed.back().first * 1e3);
  return timed[timed.size() / 2].second;
}

const std::string& MedianProgram() {
  static const std::string* text = new std::string(MedianCorpusProgram());
  return *text;
}

void BM_Tiny(benchmark::State& state, const char* assembler) { CompileLoop(state, kTiny, assembler); }
void BM_CorpusMedian(benchmark::State& state, const char* assembler) {
  CompileLoop(state, MedianProgram(), assembler);
}

void BM_Flat1M(benchmark::State& state, int64_t max_vector_width) {
  CompileLoop(state, kFlat1M, "nvjitlink", max_vector_width);
}

BENCHMARK_CAPTURE(BM_Flat1M, vector_1, 1)->Name("cuda_compile/flat_1m/vector_1/nvjitlink")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Flat1M, vector_4, 4)->Name("cuda_compile/flat_1m/vector_4/nvjitlink")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tiny, nvjitlink, "nvjitlink")->Name("cuda_compile/tiny/nvjitlink")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Tiny, ptxas, "ptxas")->Name("cuda_compile/tiny/ptxas")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CorpusMedian, nvjitlink, "nvjitlink")
    ->Name("cuda_compile/corpus_median/nvjitlink")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CorpusMedian, ptxas, "ptxas")
    ->Name("cuda_compile/corpus_median/ptxas")
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CorpusMedian, ptx_only, "ptx_only")
    ->Name("cuda_compile/corpus_median/ptx_only")
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
