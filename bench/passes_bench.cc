// The compiler pipeline (jit/passes) on the real models: how long the
// default pipeline takes per model, beside the parse + verify it follows on
// the compile-cache-miss path (measured in the same run, the "peer" to
// compare with). Counters: ops before and after, ops removed.
//   passes/default/pt_bert     AddDefaultPipeline, verify_each off (the
//                              daemon's configuration); a fresh parse per
//                              iteration, not timed
//   passes/verify_each/pt_bert the same with VerifyModule after every pass
//   parse_verify/pt_bert       ParseModule + VerifyModule, for scale
//   passes/PASS/pt_bert        one pass alone on the parsed (inlined, for
//                              the passes after inline) model; 30 iterations
// Reproduce: see BENCHMARKS.md.

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "jit/passes/pass_manager.h"
#include "jit/passes/passes.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

const char* const kModels[] = {"pt_bert", "jax_resnet_50", "searchless_chess_9m"};

std::string ReadModel(const std::string& name) {
  std::ifstream in(std::string(JITD_SHARED_DIR) + "/models/" + name + ".mlir", std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::unique_ptr<ir::Module> ParseOrDie(benchmark::State& state, const std::string& text) {
  auto m = frontend::ParseModule(text);
  if (!m.ok()) {
    state.SkipWithError(m.status().message().c_str());
    return nullptr;
  }
  return std::move(m).value();
}

// `spec` on a fresh parse of the model per iteration (the parse is not timed).
void BM_Pipeline(benchmark::State& state, std::string model, std::string spec, bool verify_each,
                 bool inline_first) {
  const std::string text = ReadModel(model);
  int64_t before = 0, after = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto m = ParseOrDie(state, text);
    if (!m) return;
    if (inline_first) {
      passes::PassManager pre;
      pre.Add(passes::CreateInlinePass());
      if (!pre.Run(*m).ok()) return state.SkipWithError("inline failed");
    }
    before = passes::CountOps(*m);
    passes::PassManager manager;
    manager.set_verify_each(verify_each);
    if (!passes::AddPipeline(manager, spec).ok()) return state.SkipWithError("bad pipeline");
    state.ResumeTiming();
    Status s = manager.Run(*m);
    state.PauseTiming();
    if (!s.ok()) return state.SkipWithError(s.message().c_str());
    after = passes::CountOps(*m);
    m.reset();
    state.ResumeTiming();
  }
  state.counters["ops_before"] = static_cast<double>(before);
  state.counters["ops_after"] = static_cast<double>(after);
  state.counters["ops_removed"] = static_cast<double>(before - after);
}

void BM_ParseVerify(benchmark::State& state, std::string model) {
  const std::string text = ReadModel(model);
  for (auto _ : state) {
    auto m = ParseOrDie(state, text);
    if (!m) return;
    Status s = ir::VerifyModule(*m);
    benchmark::DoNotOptimize(s.ok());
  }
}

void Register() {
  for (const char* model : kModels) {
    benchmark::RegisterBenchmark((std::string("passes/default/") + model).c_str(), BM_Pipeline,
                                 model, "default", false, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("passes/verify_each/") + model).c_str(),
                                 BM_Pipeline, model, "default", true, false)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("parse_verify/") + model).c_str(), BM_ParseVerify,
                                 model)
        ->Unit(benchmark::kMillisecond);
    for (const std::string& pass : passes::PassRegistryNames()) {
      // A fixed iteration count: one pass alone can take far less than the
      // untimed parse before it, and Google Benchmark sizes runs by the
      // timed part only.
      benchmark::RegisterBenchmark(("passes/" + pass + "/" + model).c_str(), BM_Pipeline, model,
                                   pass, false, pass != "inline")
          ->Unit(benchmark::kMillisecond)
          ->Iterations(30);
    }
  }
}

}  // namespace
}  // namespace jitd

int main(int argc, char** argv) {
  jitd::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
