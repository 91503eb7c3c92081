// Collectives of a replicated execution (issue 17, Speed): all_reduce (sum),
// all_gather and all_to_all of 16M f32 per process across 2 replicas on 2
// threads, against a memory-bandwidth floor measured in the same run (a
// STREAM triad a = b + s*c of 16M f32 on 2 threads).
//
//   triad/threads:2                 the floor: 3 x 64 MiB moved per iteration
//   <op>/exchange                   the collective alone: jit/eval's kernel
//                                   and the CollectiveExchange, two threads
//                                   evaluating a one-op program (arguments
//                                   moved in, outside the timing)
//   <op>/interpreter, <op>/cpu      devices::ExecuteReplicated end to end on
//                                   that device (argument copies, result
//                                   allocation, threads started per execute)
//
// Bytes per iteration are what the collective must move at least: every
// process's operand read once per result that needs it and every result
// written once (all_reduce: 2 x 64 MiB read + 2 x 64 MiB written; all_gather
// of 2 x 32 MiB into 2 x 64 MiB results: 128 MiB read + 128 MiB written;
// all_to_all: 128 MiB read + 128 MiB written), so GB/s compare directly with
// the triad's. Run: build/bin/jitd_collectives_bench (see BENCHMARKS.md).
#include <benchmark/benchmark.h>

#include <malloc.h>

#include <cstring>
#include <string_view>
#include <thread>

#include "devices/compile.h"
#include "devices/replicated.h"
#include "jit/eval/collectives.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd {
namespace {

constexpr int64_t kN = int64_t{1} << 24;  // f32 per process (64 MiB)

std::vector<float> Filled(int64_t n, float seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = seed + static_cast<float>(i % 1000) * 0.25f;
  return v;
}

// The floor: a[i] = b[i] + s * c[i], each of 2 threads on half.
void BM_Triad(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::vector<float> a(static_cast<size_t>(kN)), b = Filled(kN, 1), c = Filled(kN, 2);
  const float s = 3.0f;
  auto work = [&](int t) {
    const int64_t lo = kN * t / threads, hi = kN * (t + 1) / threads;
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
  };
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(a.data());
  }
  state.SetBytesProcessed(state.iterations() * kN * 12);
}
BENCHMARK(BM_Triad)->Name("triad")->ArgName("threads")->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

struct Case {
  const char* name;
  std::string text;
  std::vector<int64_t> operand_dims;
  int64_t bytes;  // the least the collective moves, per iteration
};

Case MakeCase(int which) {
  const std::string n = std::to_string(kN), half = std::to_string(kN / 2);
  switch (which) {
    case 0:
      return {"all_reduce", R"(
func.func @main(%x: tensor<)" + n + R"(xf32>) -> tensor<)" + n + R"(xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<)" + n + R"(xf32>) -> tensor<)" + n + R"(xf32>
  return %r : tensor<)" + n + R"(xf32>
})",
              {kN}, 4 * kN * 4};
    case 1:
      return {"all_gather", R"(
func.func @main(%x: tensor<)" + half + R"(xf32>) -> tensor<)" + n + R"(xf32> {
  %r = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<)" + half + R"(xf32>) -> tensor<)" + n + R"(xf32>
  return %r : tensor<)" + n + R"(xf32>
})",
              {kN / 2}, 4 * kN * 4};
    default:
      return {"all_to_all", R"(
func.func @main(%x: tensor<)" + n + R"(xf32>) -> tensor<)" + n + R"(xf32> {
  %r = "stablehlo.all_to_all"(%x) {split_dimension = 0 : i64, concat_dimension = 0 : i64, split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<)" + n + R"(xf32>) -> tensor<)" + n + R"(xf32>
  return %r : tensor<)" + n + R"(xf32>
})",
              {kN}, 4 * kN * 4};
  }
}

eval::RuntimeValue Operand(const std::vector<int64_t>& dims, float seed) {
  ir::Literal lit = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, dims));
  const std::vector<float> v = Filled(lit.num_elements(), seed);
  std::memcpy(lit.mutable_bytes().data(), v.data(), lit.bytes().size());
  return eval::RuntimeValue(std::move(lit));
}

eval::ProcessGrid TwoReplicas() {
  eval::ProcessGrid g;
  g.num_replicas = 2;
  return g;
}

// The collective alone: two threads evaluate the one-op program, each
// process's argument moved in (prepared outside the timing).
void BM_Exchange(benchmark::State& state) {
  const Case c = MakeCase(static_cast<int>(state.range(0)));
  state.SetLabel(c.name);
  auto m = frontend::ParseModule(c.text);
  if (!m.ok() || !ir::VerifyModule(**m).ok()) {
    state.SkipWithError("parse failed");
    return;
  }
  const ir::Module& module = **m;
  const eval::RuntimeValue x0 = Operand(c.operand_dims, 1), x1 = Operand(c.operand_dims, 2);
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<eval::RuntimeValue> a0 = {x0}, a1 = {x1};
    auto exchange = std::make_shared<eval::CollectiveExchange>(TwoReplicas());
    eval::ProcessContext p0{0, 0, exchange}, p1{1, 0, exchange};
    Status s0, s1;
    state.ResumeTiming();
    auto run = [&](std::vector<eval::RuntimeValue>& args, const eval::ProcessContext& p, Status& st) {
      eval::EvalOptions o;
      o.process = &p;
      auto r = eval::EvaluateFunction(module, *module.EntryFunction(), std::move(args), o);
      st = r.status();
      if (r.ok()) benchmark::DoNotOptimize((*r)[0].literal().bytes().data());
    };
    std::thread t(run, std::ref(a1), std::cref(p1), std::ref(s1));
    run(a0, p0, s0);
    t.join();
    if (!s0.ok() || !s1.ok()) {
      state.SkipWithError((s0.ok() ? s1 : s0).message().c_str());
      return;
    }
  }
  state.SetBytesProcessed(state.iterations() * c.bytes);
}
BENCHMARK(BM_Exchange)->Name("exchange")->ArgName("op")->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->UseRealTime();

// End to end on a device: ExecuteReplicated with each process's argument.
void BM_Device(benchmark::State& state, const char* device_name) {
  const Case c = MakeCase(static_cast<int>(state.range(0)));
  state.SetLabel(c.name);
  auto device = devices::CreateDevice(device_name);
  auto m = frontend::ParseModule(c.text);
  if (!device.ok() || !m.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  auto exe = devices::CompileProgram(**device, std::shared_ptr<ir::Module>(std::move(m).value()));
  if (!exe.ok()) {
    state.SkipWithError(exe.status().message().c_str());
    return;
  }
  std::vector<std::vector<eval::RuntimeValue>> args(2);
  args[0].push_back(Operand(c.operand_dims, 1));
  args[1].push_back(Operand(c.operand_dims, 2));
  for (auto _ : state) {
    auto out = devices::ExecuteReplicated(**exe, TwoReplicas(), args, nullptr);
    if (!out.ok()) {
      state.SkipWithError(out.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize((*out)[1][0].literal().bytes().data());
  }
  state.SetBytesProcessed(state.iterations() * c.bytes);
}
BENCHMARK_CAPTURE(BM_Device, interpreter, "interpreter")->ArgName("op")->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Device, cpu, "cpu")->ArgName("op")->DenseRange(0, 2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// A small all_reduce (f32[4]) end to end: what a replicated execute costs
// beyond the data (threads, the exchange's meeting).
void BM_Small(benchmark::State& state, const char* device_name) {
  auto device = devices::CreateDevice(device_name);
  auto m = frontend::ParseModule(R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
})");
  if (!device.ok() || !m.ok()) {
    state.SkipWithError("setup failed");
    return;
  }
  auto exe = devices::CompileProgram(**device, std::shared_ptr<ir::Module>(std::move(m).value()));
  if (!exe.ok()) {
    state.SkipWithError(exe.status().message().c_str());
    return;
  }
  std::vector<std::vector<eval::RuntimeValue>> args(2);
  args[0].push_back(Operand({4}, 1));
  args[1].push_back(Operand({4}, 2));
  for (auto _ : state) {
    auto out = devices::ExecuteReplicated(**exe, TwoReplicas(), args, nullptr);
    if (!out.ok()) {
      state.SkipWithError(out.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize((*out)[1][0].literal().bytes().data());
  }
}
BENCHMARK_CAPTURE(BM_Small, interpreter, "interpreter")->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Small, cpu, "cpu")->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace jitd

// --malloc_reuse: keep freed 64 MiB buffers in malloc's heap (mallopt) so
// that each iteration reuses them instead of faulting fresh pages in, as
// the triad's buffers are reused: the collective's own cost, without the
// page faults of glibc's default (allocations >= 32 MiB are mmapped and
// unmapped when freed).
int main(int argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--malloc_reuse") {
      mallopt(M_MMAP_THRESHOLD, 1 << 30);
      mallopt(M_TRIM_THRESHOLD, 1 << 30);
      mallopt(M_ARENA_MAX, 1);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
