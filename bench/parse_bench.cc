// Parser throughput: StableHLO text -> IR (+ verify), and IR -> text.
//
// Parsing sits on the compile-cache-miss path, so it is measured on the
// inputs that cost the most: the largest corpus files (the fft_* files,
// 1-4 MB, mostly hex literals), a typical and an op-dense corpus file, and
// the real models. Benchmarks are named KIND/FILE so that
// --benchmark_filter selects by either part:
//   parse/pt_bert          ParseModules only
//   parse_verify/pt_bert   ParseModules + VerifyModule
//   verify/pt_bert         VerifyModule of an already parsed module
//   print/pt_bert          PrintModule of an already parsed module
//   parse_verify/all_conformance   every conformance file, back to back
// Bytes per second count the input text (print: the printed text; verify
// reports ops per second instead).
// Reproduce: see BENCHMARKS.md.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

namespace fs = std::filesystem;

struct BenchFile {
  std::string name;     // used in the benchmark name
  std::string relpath;  // under JITD_SHARED_DIR
};

const BenchFile kFiles[] = {
    // The largest corpus files: hex-heavy dense<"0x..."> literals.
    {"fft_complex128_14_15_16_17", "conformance/stablehlo/fft_complex128_14_15_16_17.mlir"},
    {"fft_complex64_14_15_16_17", "conformance/stablehlo/fft_complex64_14_15_16_17.mlir"},
    {"fft_float64_14_15_16_17", "conformance/stablehlo/fft_float64_14_15_16_17.mlir"},
    {"fft_float32_14_15_16_17", "conformance/stablehlo/fft_float32_14_15_16_17.mlir"},
    // A typical corpus file (7.5 KB) and an op-dense one (30 KB, 260 lines).
    {"exp_float32_20_20", "conformance/stablehlo/exp_float32_20_20.mlir"},
    {"igamma_float32_20_20_chlo", "conformance/stablehlo/igamma_float32_20_20_float32_20_20_chlo.mlir"},
    // Real models.
    {"pt_bert", "models/pt_bert.mlir"},
    {"jax_resnet_50", "models/jax_resnet_50.mlir"},
    {"searchless_chess_9m", "models/searchless_chess_9m.mlir"},
};

bool ReadFile(const fs::path& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Texts live for the whole run; benchmarks keep pointers into this deque.
std::deque<std::string>& Texts() {
  static std::deque<std::string> texts;
  return texts;
}

void BM_Parse(benchmark::State& state, const std::string* text) {
  for (auto _ : state) {
    auto modules = frontend::ParseModules(*text);
    if (!modules.ok()) {
      state.SkipWithError(modules.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(modules);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text->size()));
}

void BM_ParseVerify(benchmark::State& state, const std::vector<const std::string*> texts) {
  int64_t bytes = 0;
  for (const std::string* text : texts) bytes += static_cast<int64_t>(text->size());
  for (auto _ : state) {
    for (const std::string* text : texts) {
      auto modules = frontend::ParseModules(*text);
      if (!modules.ok()) {
        state.SkipWithError(modules.status().message().c_str());
        return;
      }
      for (const auto& module : *modules) {
        Status status = ir::VerifyModule(*module);
        if (!status.ok()) {
          state.SkipWithError(status.message().c_str());
          return;
        }
      }
      benchmark::DoNotOptimize(modules);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

// Parses `text` once outside the timed loop; null (and the state skipped)
// when it does not parse.
std::unique_ptr<std::vector<std::unique_ptr<ir::Module>>> ParseOnce(
    benchmark::State& state, const std::string& text) {
  auto modules = frontend::ParseModules(text);
  if (!modules.ok()) {
    state.SkipWithError(modules.status().message().c_str());
    return nullptr;
  }
  return std::make_unique<std::vector<std::unique_ptr<ir::Module>>>(
      std::move(modules).value());
}

int64_t CountOps(const ir::Region& region) {
  int64_t n = 0;
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    for (const auto& op : region.block(b).ops()) {
      ++n;
      for (size_t r = 0; r < op->num_regions(); ++r) n += CountOps(op->region(r));
    }
  }
  return n;
}

// Verification cost does not scale with the text (hex literals cost it
// nothing), so it reports ops per second instead of bytes.
void BM_Verify(benchmark::State& state, const std::string* text) {
  auto modules = ParseOnce(state, *text);
  if (!modules) return;
  int64_t ops = 0;
  for (const auto& module : *modules) {
    for (const auto& fn : module->functions()) ops += CountOps(fn->body());
  }
  for (auto _ : state) {
    for (const auto& module : *modules) {
      Status status = ir::VerifyModule(*module);
      if (!status.ok()) {
        state.SkipWithError(status.message().c_str());
        return;
      }
    }
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.counters["ops_per_second"] = benchmark::Counter(
      static_cast<double>(ops) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void BM_Print(benchmark::State& state, const std::string* text) {
  auto modules = ParseOnce(state, *text);
  if (!modules) return;
  int64_t printed_bytes = 0;
  for (auto _ : state) {
    printed_bytes = 0;
    for (const auto& module : *modules) {
      std::string printed = ir::PrintModule(*module);
      printed_bytes += static_cast<int64_t>(printed.size());
      benchmark::DoNotOptimize(printed);
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * printed_bytes);
}

void BM_Missing(benchmark::State& state, const std::string& what) {
  for (auto _ : state) {
  }
  state.SkipWithError(("cannot read " + what).c_str());
}

void RegisterAll() {
  const fs::path shared(JITD_SHARED_DIR);
  for (const BenchFile& file : kFiles) {
    fs::path path = shared / file.relpath;
    std::string text;
    if (!ReadFile(path, &text)) {
      benchmark::RegisterBenchmark(("parse/" + file.name).c_str(), BM_Missing, path.string());
      continue;
    }
    const std::string* stored = &Texts().emplace_back(std::move(text));
    benchmark::RegisterBenchmark(("parse/" + file.name).c_str(), BM_Parse, stored)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("parse_verify/" + file.name).c_str(), BM_ParseVerify,
                                 std::vector<const std::string*>{stored})
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("verify/" + file.name).c_str(), BM_Verify, stored)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("print/" + file.name).c_str(), BM_Print, stored)
        ->Unit(benchmark::kMicrosecond);
  }

  // The whole conformance corpus, as a compile service would meet it.
  std::vector<fs::path> paths;
  std::error_code ec;
  for (fs::directory_iterator it(shared / "conformance/stablehlo", ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".mlir") paths.push_back(it->path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<const std::string*> corpus;
  for (const fs::path& path : paths) {
    std::string text;
    if (ReadFile(path, &text)) corpus.push_back(&Texts().emplace_back(std::move(text)));
  }
  if (corpus.empty()) {
    benchmark::RegisterBenchmark("parse_verify/all_conformance", BM_Missing,
                                 (shared / "conformance/stablehlo").string());
  } else {
    benchmark::RegisterBenchmark("parse_verify/all_conformance", BM_ParseVerify, corpus)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace jitd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  jitd::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
