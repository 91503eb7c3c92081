// The real models of ../shared/models on the cpu device, beside the torch
// eager peers of bench/peers/models_peer.py (same shapes, random weights):
//   models/pt_bert/threads:N         BERT-base, batch 1, sequence 7
//   models/jax_resnet_50/threads:N   ResNet-50, batch 1, 3x224x224
//   models/pt_bert_no_multi_output/threads:N   BERT without multi-output fusion
// Each case compiles once (outside the timing) through
// devices::CompileProgram (the device's pass pipeline, then codegen: the
// daemon's compile path), runs once to warm up (the
// seeded weights are generated and cached on the first run), then times
// Run() on raw buffers. Counters: median_ms and min_ms over the timed
// iterations (the machine is shared; compare medians), and cpu_median_ms,
// the process's CPU time per run (all threads; on a loaded machine the
// steadier figure for 1 thread).
// Inputs: float arguments (BERT's weights are arguments) from
// eval::RandomLiteral with RandomFill::kWeights, integer arguments (token
// ids, types, positions, mask) 0 or 1; ResNet's elided weights filled with
// resource seed 3 and RandomFill::kWeights (finite activations: no NaN
// arithmetic in the timings).
// Reproduce: see BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "devices/compile.h"
#include "devices/cpu/cpu_device.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

std::shared_ptr<ir::Module> LoadModel(const std::string& name) {
  std::ifstream in(std::string(JITD_SHARED_DIR) + "/models/" + name + ".mlir");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto module = frontend::ParseModule(text);
  if (!module.ok()) {
    std::fprintf(stderr, "%s: %s\n", name.c_str(), module.status().message().c_str());
    return nullptr;
  }
  return std::shared_ptr<ir::Module>(std::move(*module));
}

// CPU time of the whole process (every thread: the pool's and OpenBLAS's).
double ProcessCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

void BM_Model(benchmark::State& state, const std::string& name, bool multi_output = true) {
  const int threads = static_cast<int>(state.range(0));
  auto module = LoadModel(name);
  cpu::CpuDeviceOptions device_options;
  device_options.num_threads = threads;
  device_options.multi_output_fusion = multi_output;
  auto device = cpu::CpuDevice::Create(device_options);
  if (!module || !device.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  // What a compile-cache miss in the daemon runs: the device's jit/passes
  // pipeline ("default" on cpu), then code generation.
  auto compiled = devices::CompileProgram(**device, module);
  if (!compiled.ok()) {
    state.SkipWithError(compiled.status().message().c_str());
    return;
  }
  const auto& exe = static_cast<const cpu::CpuExecutable&>(**compiled);

  std::vector<ir::Literal> args;
  std::vector<const void*> arg_ptrs;
  for (size_t i = 0; i < exe.argument_types().size(); ++i) {
    auto lit = eval::RandomLiteral(exe.argument_types()[i], 100 + i, int64_t{1} << 32,
                                   eval::RandomFill::kWeights);
    if (!lit.ok()) {
      state.SkipWithError(lit.status().message().c_str());
      return;
    }
    if (ir::IsInteger(lit->dtype())) {
      for (int64_t e = 0; e < lit->num_elements(); ++e) lit->SetInt(e, std::abs(lit->GetInt(e)) % 2);
    }
    args.push_back(std::move(*lit));
  }
  for (const auto& a : args) arg_ptrs.push_back(a.bytes().data());
  std::vector<ir::Literal> results;
  std::vector<void*> result_ptrs;
  for (const ir::Type& t : exe.result_types()) results.push_back(*ir::Literal::Create(t));
  for (auto& r : results) result_ptrs.push_back(r.mutable_bytes().data());

  devices::ExecuteOptions options;
  options.resource_fill_seed = 3;
  options.resource_fill = eval::RandomFill::kWeights;
  if (Status s = exe.Run(arg_ptrs, result_ptrs, options); !s.ok()) {  // warm-up
    state.SkipWithError(s.message().c_str());
    return;
  }
  const auto& stats = exe.stats();
  static std::set<std::string> printed;  // once per case (the library re-runs cases)
  if (printed.insert(name + std::to_string(threads)).second) std::fprintf(stderr,
               "%s threads:%d: %lld ops in %lld kernels, %lld library, %lld fallback; arena %.1f MB\n",
               name.c_str(), threads, static_cast<long long>(stats.kernel_ops),
               static_cast<long long>(stats.kernels), static_cast<long long>(stats.library_ops),
               static_cast<long long>(stats.fallback_ops), stats.arena_bytes / 1e6);

  std::vector<double> ms, cpu_ms;
  for (auto _ : state) {
    const double cpu_start = ProcessCpuMs();
    const auto start = std::chrono::steady_clock::now();
    Status s = exe.Run(arg_ptrs, result_ptrs, options);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    cpu_ms.push_back(ProcessCpuMs() - cpu_start);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(result_ptrs.data());
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu_ms.begin(), cpu_ms.end());
  if (!ms.empty()) {
    state.counters["median_ms"] = ms[ms.size() / 2];
    state.counters["min_ms"] = ms.front();
    state.counters["cpu_median_ms"] = cpu_ms[cpu_ms.size() / 2];
  }
  state.counters["kernels"] = static_cast<double>(exe.stats().kernels);
}

BENCHMARK_CAPTURE(BM_Model, pt_bert, std::string("pt_bert"))
    ->Name("models/pt_bert")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);
BENCHMARK_CAPTURE(BM_Model, jax_resnet_50, std::string("jax_resnet_50"))
    ->Name("models/jax_resnet_50")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);
// The same BERT without multi-output fusion (CpuDeviceOptions::
// multi_output_fusion off): its effect, A/B in one process.
BENCHMARK_CAPTURE(BM_Model, pt_bert_no_multi_output, std::string("pt_bert"), false)
    ->Name("models/pt_bert_no_multi_output")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
