// Reading a program on the compile-cache-miss path: StableHLO text
// (ParseModules + VerifyModule) versus the FlatBuffers module format
// (ModuleFromFlatBuffer, which verifies the buffer, checks it and runs
// VerifyModule), on the same modules. Benchmarks are named KIND/FILE:
//   text/pt_bert          parse + verify the text
//   flatbuffer/pt_bert    read + verify the FlatBuffers form
//   write/pt_bert         ModuleToFlatBuffer of the parsed module
// Bytes per second count each benchmark's input (the text, or the
// FlatBuffer); the `bytes` counter is that input's size.
// Reproduce: see BENCHMARKS.md.

#include <benchmark/benchmark.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

struct BenchFile {
  const char* name;
  const char* relpath;
};

// Hex-heavy (large constants), typical, op-dense, and the real models.
const BenchFile kFiles[] = {
    {"fft_float32_14_15_16_17", "conformance/stablehlo/fft_float32_14_15_16_17.mlir"},
    {"exp_float32_20_20", "conformance/stablehlo/exp_float32_20_20.mlir"},
    {"igamma_float32_20_20_chlo", "conformance/stablehlo/igamma_float32_20_20_float32_20_20_chlo.mlir"},
    {"pt_bert", "models/pt_bert.mlir"},
    {"jax_resnet_50", "models/jax_resnet_50.mlir"},
    {"searchless_chess_9m", "models/searchless_chess_9m.mlir"},
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Register() {
  for (const BenchFile& f : kFiles) {
    const std::string path = std::string(JITD_SHARED_DIR) + "/" + f.relpath;
    auto text = std::make_shared<std::string>(ReadFile(path));
    auto module = frontend::ParseModule(*text);
    if (text->empty() || !module.ok()) continue;  // missing corpus: nothing to register
    auto bytes_or = frontend::ModuleToFlatBuffer(**module);
    if (!bytes_or.ok()) continue;
    auto bytes = std::make_shared<std::vector<uint8_t>>(std::move(bytes_or).value());
    auto parsed = std::shared_ptr<ir::Module>(std::move(module).value());

    benchmark::RegisterBenchmark(("text/" + std::string(f.name)).c_str(),
                                 [text](benchmark::State& state) {
                                   for (auto _ : state) {
                                     auto m = frontend::ParseModule(*text);
                                     if (!m.ok() || !ir::VerifyModule(**m).ok()) {
                                       state.SkipWithError("parse or verify failed");
                                       return;
                                     }
                                     benchmark::DoNotOptimize(m);
                                   }
                                   state.SetBytesProcessed(state.iterations() *
                                                           static_cast<int64_t>(text->size()));
                                   state.counters["bytes"] = static_cast<double>(text->size());
                                 })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("flatbuffer/" + std::string(f.name)).c_str(),
                                 [bytes](benchmark::State& state) {
                                   for (auto _ : state) {
                                     auto m = frontend::ModuleFromFlatBuffer(*bytes);
                                     if (!m.ok()) {
                                       state.SkipWithError("read failed");
                                       return;
                                     }
                                     benchmark::DoNotOptimize(m);
                                   }
                                   state.SetBytesProcessed(state.iterations() *
                                                           static_cast<int64_t>(bytes->size()));
                                   state.counters["bytes"] = static_cast<double>(bytes->size());
                                 })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("write/" + std::string(f.name)).c_str(),
                                 [parsed](benchmark::State& state) {
                                   for (auto _ : state) {
                                     auto b = frontend::ModuleToFlatBuffer(*parsed);
                                     benchmark::DoNotOptimize(b);
                                   }
                                 })
        ->Unit(benchmark::kMillisecond);
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
