// The CPU device against the machine's floors (../shared/FLOORS.md) and the
// peers in bench/peers/elementwise_peer.py:
//   BM_MultiOutput/{residual_mean,producer_read_twice}/mo:M/threads:N
//                           multi-output fusion on (M=1) and off (M=0)
//   elementwise/threads:N   y = tanh(a*x + b) * c over 16M f32 (one fused
//                           kernel; a, b, c scalar arguments)
//   reduce_sum/threads:N    sum of 16M f32 to a scalar
//   reduce_sum_rows/threads:N  8 rows of 2M f32 each to 8 sums (few outputs,
//                           long extents: a split reduction)
//   sort/KIND/comparator:C/threads:T  stablehlo.sort of 1M f32 (KIND f32) or of 1M f32
//                           keys carrying 1M i32 values (KIND kv) with the
//                           corpus's total-order comparator; C = 1: compiled
//                           with the program, 0: interpreted (jit/eval);
//                           T threads
//   sort_floor/KIND         std::sort (f32) / std::stable_sort of key-value
//                           pairs (kv) of the same data: the floor
//   triad/threads:N         a STREAM triad kernel compiled by the same JIT
//                           (the bandwidth reference measured in-process)
//   execute/thunk_loop/mode:M  the thunk runs of a 1000-iteration while
//                           loop: plain (M=0), profiled (1), traced (2)
//   compile/tiny            cold compile (plan + LLVM O2 + machine code) of
//                           a one-op program
//   compile/corpus_median   cold compile of the corpus file whose compile
//                           time is the median over every 10th corpus file
//   compile/corpus_median_with_kernels   the same among the files that
//                           generate code (the others compile in µs)
//   pad/{kernel/threads:N,fallback,memcpy_floor}   4096x4096 f32 padded by
//                           one on every side: the compiled kernel, the
//                           interpreter's op as the FallbackThunk ran it
//                           before (operands copied into literals,
//                           eval::EvaluateOp, result copied out), and a
//                           memcpy of the result's bytes
//   dynamic_update_slice/{kernel/threads:N,fallback,memcpy_floor}   a
//                           1024x1024 update into 4096x4096 f32 at runtime
//                           starts (the result is a full copy + update)
// Bytes per second count bytes read + written, as STREAM does.
// Reproduce: see BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "devices/cpu/cpu_device.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

constexpr int64_t kN = int64_t{1} << 24;  // 16M elements

const char* kElementwise = R"(
func.func @main(%x: tensor<16777216xf32>, %a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>) -> tensor<16777216xf32> {
  %ab = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<16777216xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [] : (tensor<f32>) -> tensor<16777216xf32>
  %cb = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<16777216xf32>
  %0 = stablehlo.multiply %ab, %x : tensor<16777216xf32>
  %1 = stablehlo.add %0, %bb : tensor<16777216xf32>
  %2 = stablehlo.tanh %1 : tensor<16777216xf32>
  %3 = stablehlo.multiply %2, %cb : tensor<16777216xf32>
  return %3 : tensor<16777216xf32>
}
)";

const char* kReduceSum = R"(
func.func @main(%x: tensor<16777216xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<16777216xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
)";

const char* kReduceRows = R"(
func.func @main(%x: tensor<8x2097152xf32>) -> tensor<8xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x2097152xf32>, tensor<f32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
)";

constexpr int64_t kSortN = int64_t{1} << 20;

// The corpus's f32 comparator (sort_float32_*.mlir): -0 as +0, every NaN as
// one NaN, then TOTALORDER less-than.
#define JITD_SORT_KEY_COMPARE                                                                      \
  "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"                                         \
  "    %nan = stablehlo.constant dense<0x7FC00000> : tensor<f32>\n"                                \
  "    %az = stablehlo.compare EQ, %a, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"     \
  "    %a1 = stablehlo.select %az, %z, %a : tensor<i1>, tensor<f32>\n"                             \
  "    %an = stablehlo.compare NE, %a, %a, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"     \
  "    %a2 = stablehlo.select %an, %nan, %a1 : tensor<i1>, tensor<f32>\n"                          \
  "    %bz = stablehlo.compare EQ, %b, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"     \
  "    %b1 = stablehlo.select %bz, %z, %b : tensor<i1>, tensor<f32>\n"                             \
  "    %bn = stablehlo.compare NE, %b, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"     \
  "    %b2 = stablehlo.select %bn, %nan, %b1 : tensor<i1>, tensor<f32>\n"                          \
  "    %lt = stablehlo.compare LT, %a2, %b2, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>\n" \
  "    stablehlo.return %lt : tensor<i1>\n"

const char* kSortF32 =
    "func.func @main(%k: tensor<1048576xf32>) -> tensor<1048576xf32> {\n"
    "  %r = \"stablehlo.sort\"(%k) <{dimension = 0 : i64}> ({\n"
    "  ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n" JITD_SORT_KEY_COMPARE
    "  }) : (tensor<1048576xf32>) -> tensor<1048576xf32>\n"
    "  return %r : tensor<1048576xf32>\n"
    "}\n";

const char* kSortKv =
    "func.func @main(%k: tensor<1048576xf32>, %v: tensor<1048576xi32>) -> (tensor<1048576xf32>, tensor<1048576xi32>) {\n"
    "  %r:2 = \"stablehlo.sort\"(%k, %v) <{dimension = 0 : i64, is_stable = true}> ({\n"
    "  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):\n" JITD_SORT_KEY_COMPARE
    "  }) : (tensor<1048576xf32>, tensor<1048576xi32>) -> (tensor<1048576xf32>, tensor<1048576xi32>)\n"
    "  return %r#0, %r#1 : tensor<1048576xf32>, tensor<1048576xi32>\n"
    "}\n";

const char* kTriad = R"(
func.func @main(%b: tensor<16777216xf32>, %c: tensor<16777216xf32>, %s: tensor<f32>) -> tensor<16777216xf32> {
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<16777216xf32>
  %0 = stablehlo.multiply %sb, %c : tensor<16777216xf32>
  %1 = stablehlo.add %b, %0 : tensor<16777216xf32>
  return %1 : tensor<16777216xf32>
}
)";

const char* kTiny = R"(
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %y : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

std::shared_ptr<const ir::Module> Parse(const std::string& text) {
  auto module = frontend::ParseModule(text);
  if (!module.ok()) return nullptr;
  return std::shared_ptr<const ir::Module>(std::move(*module));
}

std::unique_ptr<cpu::CpuDevice> MakeDevice(int threads) {
  cpu::CpuDeviceOptions options;
  options.num_threads = threads;
  auto device = cpu::CpuDevice::Create(options);
  return device.ok() ? std::move(*device) : nullptr;
}

std::unique_ptr<cpu::CpuExecutable> CompileCpu(const cpu::CpuDevice& device, const char* text) {
  auto exe = device.Compile(Parse(text));
  if (!exe.ok()) return nullptr;
  return std::unique_ptr<cpu::CpuExecutable>(static_cast<cpu::CpuExecutable*>(exe->release()));
}

// A pre-faulted buffer of n floats uniform in [-1, 1).
std::vector<float> RandomFloats(int64_t n, unsigned seed) {
  std::vector<float> v(static_cast<size_t>(n));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& f : v) f = dist(gen);
  return v;
}

void BM_Elementwise(benchmark::State& state) {
  auto device = MakeDevice(static_cast<int>(state.range(0)));
  auto exe = device ? CompileCpu(*device, kElementwise) : nullptr;
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<float> x = RandomFloats(kN, 1), y(static_cast<size_t>(kN), 0.0f);
  float a = 0.5f, b = 0.25f, c = 2.0f;
  const void* args[] = {x.data(), &a, &b, &c};
  void* results[] = {y.data()};
  for (auto _ : state) {
    Status s = exe->Run(args, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(state.iterations() * kN * 8);
}
BENCHMARK(BM_Elementwise)->Name("elementwise")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// Multi-output fusion (jit/passes/fusion.h), on and off (mo:1 / mo:0) in
// the same run: BERT's residual add + layer norm's mean and centering over
// 4096 rows of 1024 f32 (x = a + b; d = x - mean(x)), and an elementwise
// producer read twice (x = a * b; y = exp(x) + x, returned with x). With it
// the reduce / consumer kernel writes x as a second output instead of x
// getting a kernel of its own and being read back.
constexpr const char* kResidualMean = R"(
func.func @main(%a: tensor<4096x1024xf32>, %b: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<1024.0> : tensor<4096xf32>
  %x = stablehlo.add %a, %b : tensor<4096x1024xf32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4096x1024xf32>, tensor<f32>) -> tensor<4096xf32>
  %mean = stablehlo.divide %s, %n : tensor<4096xf32>
  %m = stablehlo.broadcast_in_dim %mean, dims = [0] : (tensor<4096xf32>) -> tensor<4096x1024xf32>
  %d = stablehlo.subtract %x, %m : tensor<4096x1024xf32>
  return %d : tensor<4096x1024xf32>
}
)";
constexpr const char* kProducerReadTwice = R"(
func.func @main(%a: tensor<4194304xf32>, %b: tensor<4194304xf32>) -> (tensor<4194304xf32>, tensor<4194304xf32>) {
  %x = stablehlo.multiply %a, %b : tensor<4194304xf32>
  %e = stablehlo.exponential %x : tensor<4194304xf32>
  %y = stablehlo.add %e, %x : tensor<4194304xf32>
  return %y, %x : tensor<4194304xf32>, tensor<4194304xf32>
}
)";

void BM_MultiOutput(benchmark::State& state, const char* text, int outputs) {
  cpu::CpuDeviceOptions options;
  options.num_threads = static_cast<int>(state.range(1));
  options.multi_output_fusion = state.range(0) != 0;
  auto device = cpu::CpuDevice::Create(options);
  auto exe = device.ok() ? CompileCpu(**device, text) : nullptr;
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  constexpr int64_t kElements = int64_t{4096} * 1024;
  std::vector<float> a = RandomFloats(kElements, 3), b = RandomFloats(kElements, 4);
  std::vector<std::vector<float>> out(static_cast<size_t>(outputs), std::vector<float>(kElements, 0.0f));
  const void* args[] = {a.data(), b.data()};
  std::vector<void*> results;
  for (auto& o : out) results.push_back(o.data());
  for (auto _ : state) {
    Status s = exe->Run(args, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(results.data());
  }
  state.counters["kernels"] = static_cast<double>(exe->stats().kernels);
}
BENCHMARK_CAPTURE(BM_MultiOutput, residual_mean, kResidualMean, 1)
    ->ArgNames({"mo", "threads"})->ArgsProduct({{1, 0}, {1, 2}})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_MultiOutput, producer_read_twice, kProducerReadTwice, 2)
    ->ArgNames({"mo", "threads"})->ArgsProduct({{1, 0}, {1, 2}})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReduceSum(benchmark::State& state) {
  auto device = MakeDevice(static_cast<int>(state.range(0)));
  auto exe = device ? CompileCpu(*device, kReduceSum) : nullptr;
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<float> x = RandomFloats(kN, 2);
  float sum = 0;
  const void* args[] = {x.data()};
  void* results[] = {&sum};
  for (auto _ : state) {
    Status s = exe->Run(args, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(state.iterations() * kN * 4);
}
BENCHMARK(BM_ReduceSum)->Name("reduce_sum")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReduceRows(benchmark::State& state) {
  auto device = MakeDevice(static_cast<int>(state.range(0)));
  auto exe = device ? CompileCpu(*device, kReduceRows) : nullptr;
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<float> x = RandomFloats(kN, 5), sums(8);
  const void* args[] = {x.data()};
  void* results[] = {sums.data()};
  for (auto _ : state) {
    Status s = exe->Run(args, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(state.iterations() * kN * 4);
}
BENCHMARK(BM_ReduceRows)->Name("reduce_sum_rows")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// range(0): compiled comparator; range(1): threads (a 1-d sort is one
// slice, merged in parallel when the comparator is compiled).
void SortLoop(benchmark::State& state, const char* text, bool kv) {
  cpu::CpuDeviceOptions options;
  options.num_threads = static_cast<int>(state.range(1));
  options.compile_sort_comparators = state.range(0) != 0;
  auto device = cpu::CpuDevice::Create(options);
  auto exe = device.ok() ? CompileCpu(**device, text) : nullptr;
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  if (exe->stats().compiled_comparators != state.range(0)) {
    state.SkipWithError("comparator not compiled as asked");
    return;
  }
  std::vector<float> keys = RandomFloats(kSortN, 6), sorted(static_cast<size_t>(kSortN));
  std::vector<int32_t> values(static_cast<size_t>(kSortN)), values_out(static_cast<size_t>(kSortN));
  for (int64_t i = 0; i < kSortN; ++i) values[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  const void* args[] = {keys.data(), values.data()};
  void* results[] = {sorted.data(), values_out.data()};
  for (auto _ : state) {
    Status s = exe->Run(std::span<const void* const>(args, kv ? 2 : 1),
                        std::span<void* const>(results, kv ? 2 : 1), {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(sorted.data());
  }
  if (!std::is_sorted(sorted.begin(), sorted.end())) state.SkipWithError("not sorted");
  state.SetItemsProcessed(state.iterations() * kSortN);
}

// The interpreted comparator takes about a minute per 1M sort: one
// iteration each.
void BM_SortF32(benchmark::State& state) { SortLoop(state, kSortF32, false); }
BENCHMARK(BM_SortF32)->Name("sort/f32")->ArgNames({"comparator", "threads"})->Args({1, 1})->Args({1, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SortF32)->Name("sort/f32")->ArgNames({"comparator", "threads"})->Args({0, 1})->Iterations(1)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SortKv(benchmark::State& state) { SortLoop(state, kSortKv, true); }
BENCHMARK(BM_SortKv)->Name("sort/kv")->ArgNames({"comparator", "threads"})->Args({1, 1})->Args({1, 2})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SortKv)->Name("sort/kv")->ArgNames({"comparator", "threads"})->Args({0, 1})->Iterations(1)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// The floors: the same data through the standard library (copying the
// input in each iteration, as the sort's result buffer is fresh too).
void BM_SortFloorF32(benchmark::State& state) {
  const std::vector<float> keys = RandomFloats(kSortN, 6);
  std::vector<float> v;
  for (auto _ : state) {
    v = keys;
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * kSortN);
}
BENCHMARK(BM_SortFloorF32)->Name("sort_floor/f32")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SortFloorKv(benchmark::State& state) {
  const std::vector<float> keys = RandomFloats(kSortN, 6);
  std::vector<std::pair<float, int32_t>> pairs(static_cast<size_t>(kSortN)), v;
  for (int64_t i = 0; i < kSortN; ++i) pairs[static_cast<size_t>(i)] = {keys[static_cast<size_t>(i)], static_cast<int32_t>(i)};
  for (auto _ : state) {
    v = pairs;
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    benchmark::DoNotOptimize(v.data());
  }
  state.SetItemsProcessed(state.iterations() * kSortN);
}
BENCHMARK(BM_SortFloorKv)->Name("sort_floor/kv")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Triad(benchmark::State& state) {
  auto device = MakeDevice(static_cast<int>(state.range(0)));
  auto exe = device ? CompileCpu(*device, kTriad) : nullptr;
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<float> b = RandomFloats(kN, 3), c = RandomFloats(kN, 4), a(static_cast<size_t>(kN), 0.0f);
  float s = 3.0f;
  const void* args[] = {b.data(), c.data(), &s};
  void* results[] = {a.data()};
  for (auto _ : state) {
    Status st = exe->Run(args, results, {});
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(a.data());
  }
  state.SetBytesProcessed(state.iterations() * kN * 12);
}
BENCHMARK(BM_Triad)->Name("triad")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

// What profiling and tracing cost per thunk: a while loop of 1000
// iterations of small kernels (thunk_runs per execute), run
// plain (mode 0), with ExecuteOptions::profile (1) and with
// ExecuteOptions::trace (2). Reported per execute.
const char* kThunkLoop = R"(
func.func @main(%a: tensor<16xf32>) -> tensor<16xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<16xf32>
   cond {
    %n = stablehlo.constant dense<1000> : tensor<i32>
    %go = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %go : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %next = stablehlo.add %i, %one : tensor<i32>
    %y = stablehlo.multiply %x, %x : tensor<16xf32>
    %s = stablehlo.maximum %y, %x : tensor<16xf32>
    %t = stablehlo.tanh %s : tensor<16xf32>
    stablehlo.return %next, %t : tensor<i32>, tensor<16xf32>
  }
  return %r#1 : tensor<16xf32>
}
)";

void BM_ThunkLoop(benchmark::State& state) {
  auto device = MakeDevice(1);
  if (!device) {
    state.SkipWithError("setup failed");
    return;
  }
  auto exe = CompileCpu(*device, kThunkLoop);
  if (!exe) {
    state.SkipWithError("compile failed");
    return;
  }
  std::vector<float> a = RandomFloats(16, 3);
  std::vector<float> out(16);
  const void* args[] = {a.data()};
  void* results[] = {out.data()};
  std::vector<devices::ProfileEntry> profile;
  devices::ExecutionTrace trace;
  devices::ExecuteOptions options;
  if (state.range(0) == 1) options.profile = &profile;
  if (state.range(0) == 2) options.trace = &trace;
  for (auto _ : state) {
    trace.events.clear();
    Status s = exe->Run(args, results, options);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["thunk_runs"] =
      static_cast<double>(state.range(0) == 2 ? trace.events.size() : 0);
}
BENCHMARK(BM_ThunkLoop)->Name("execute/thunk_loop")->ArgName("mode")->Arg(0)->Arg(1)->Arg(2)
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

void CompileLoop(benchmark::State& state, const std::string& text) {
  auto device = MakeDevice(1);
  auto module = Parse(text);
  if (!device || !module) {
    state.SkipWithError("setup failed");
    return;
  }
  for (auto _ : state) {
    auto exe = device->Compile(module);
    if (!exe.ok()) {
      state.SkipWithError(exe.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(exe->get());
  }
}

void BM_CompileTiny(benchmark::State& state) { CompileLoop(state, kTiny); }
BENCHMARK(BM_CompileTiny)->Name("compile/tiny")->Unit(benchmark::kMillisecond);

// The corpus file with the median cold compile time over every 10th
// corpus file (found once, outside the timed loop). `with_kernels`: only
// among programs that generate code (most corpus files are bf16 / f16 /
// complex / f8 programs that the cpu device runs entirely through the
// fallback today, compiling in microseconds).
std::string MedianCorpusProgram(bool with_kernels) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(std::string(JITD_SHARED_DIR) + "/conformance/stablehlo")) {
    if (e.path().extension() == ".mlir") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  auto device = MakeDevice(1);
  std::vector<std::pair<double, std::string>> timed;
  for (size_t i = 0; i < files.size(); i += 10) {
    std::ifstream in(files[i]);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto module = Parse(text);
    if (!module) continue;
    const auto start = std::chrono::steady_clock::now();
    auto exe = device->Compile(module);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!exe.ok()) continue;
    if (with_kernels && static_cast<const cpu::CpuExecutable&>(**exe).stats().kernels == 0) continue;
    timed.emplace_back(s, text);
  }
  if (timed.empty()) return kTiny;
  std::sort(timed.begin(), timed.end());
  std::fprintf(stderr, "corpus sample: %zu programs compiled, median %.2f ms\n", timed.size(),
               timed[timed.size() / 2].first * 1e3);
  return timed[timed.size() / 2].second;
}

void BM_CompileCorpusMedian(benchmark::State& state) {
  static const std::string text = MedianCorpusProgram(false);
  CompileLoop(state, text);
}
BENCHMARK(BM_CompileCorpusMedian)->Name("compile/corpus_median")->Unit(benchmark::kMillisecond);

void BM_CompileCorpusMedianWithKernels(benchmark::State& state) {
  static const std::string text = MedianCorpusProgram(true);
  CompileLoop(state, text);
}
BENCHMARK(BM_CompileCorpusMedianWithKernels)->Name("compile/corpus_median_with_kernels")
    ->Unit(benchmark::kMillisecond);

// ---- pad and dynamic_update_slice: kernel vs the fallback path ------------

const char* kPad = R"(
func.func @main(%x: tensor<4096x4096xf32>, %p: tensor<f32>) -> tensor<4098x4098xf32> {
  %0 = stablehlo.pad %x, %p, low = [1, 1], high = [1, 1], interior = [0, 0] : (tensor<4096x4096xf32>, tensor<f32>) -> tensor<4098x4098xf32>
  return %0 : tensor<4098x4098xf32>
}
)";

const char* kDynamicUpdateSlice = R"(
func.func @main(%x: tensor<4096x4096xf32>, %u: tensor<1024x1024xf32>, %i: tensor<i32>, %j: tensor<i32>) -> tensor<4096x4096xf32> {
  %0 = stablehlo.dynamic_update_slice %x, %u, %i, %j : (tensor<4096x4096xf32>, tensor<1024x1024xf32>, tensor<i32>, tensor<i32>) -> tensor<4096x4096xf32>
  return %0 : tensor<4096x4096xf32>
}
)";

constexpr int64_t kSide = 4096;
constexpr int64_t kPadBytes = kSide * kSide * 4 + (kSide + 2) * (kSide + 2) * 4;
constexpr int64_t kDusBytes = 2 * kSide * kSide * 4 + 1024 * 1024 * 4;

// The program's arguments: random f32 tensors, start indices 1000 and 2000.
std::vector<std::vector<uint8_t>> ProgramArgs(const cpu::CpuExecutable& exe) {
  std::vector<std::vector<uint8_t>> args;
  for (size_t i = 0; i < exe.argument_types().size(); ++i) {
    const ir::Type& t = exe.argument_types()[i];
    std::vector<uint8_t> bytes(static_cast<size_t>(t.byte_size()));
    if (t.dtype() == ir::DType::kF32) {
      const std::vector<float> f = RandomFloats(t.num_elements(), 10 + static_cast<unsigned>(i));
      std::memcpy(bytes.data(), f.data(), bytes.size());
    } else {
      const int32_t start = i == 2 ? 1000 : 2000;
      std::memcpy(bytes.data(), &start, 4);
    }
    args.push_back(std::move(bytes));
  }
  return args;
}

void RunKernel(benchmark::State& state, const char* text, int64_t bytes_per_run) {
  auto device = MakeDevice(static_cast<int>(state.range(0)));
  auto exe = device ? CompileCpu(*device, text) : nullptr;
  if (!exe || exe->stats().fallback_ops != 0 || exe->stats().kernels != 1) {
    state.SkipWithError("compile failed or not one kernel");
    return;
  }
  const std::vector<std::vector<uint8_t>> args = ProgramArgs(*exe);
  std::vector<uint8_t> out(static_cast<size_t>(exe->result_types()[0].byte_size()));
  std::vector<const void*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.data());
  void* results[] = {out.data()};
  for (auto _ : state) {
    Status s = exe->Run(arg_ptrs, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes_per_run);
}

// What FallbackThunk does for the program's one op: each operand's bytes
// copied into a literal, eval::EvaluateOp, the result copied into the
// output buffer.
void RunFallback(benchmark::State& state, const char* text, int64_t bytes_per_run) {
  auto module = Parse(text);
  auto device = MakeDevice(1);
  auto exe = device && module ? CompileCpu(*device, text) : nullptr;
  if (!exe) {
    state.SkipWithError("setup failed");
    return;
  }
  const ir::Op* op = module->EntryFunction()->entry()->ops().front().get();
  const std::vector<std::vector<uint8_t>> args = ProgramArgs(*exe);
  std::vector<const ir::Value*> values(op->operands().begin(), op->operands().end());
  std::vector<uint8_t> out(static_cast<size_t>(op->result(0)->type().byte_size()));
  for (auto _ : state) {
    std::vector<eval::RuntimeValue> bindings;
    for (size_t i = 0; i < values.size(); ++i) {
      bindings.emplace_back(*ir::Literal::FromBytes(values[i]->type(), args[i]));
    }
    auto result = eval::EvaluateOp(*module, *op, values, bindings);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    std::memcpy(out.data(), (*result)[0].literal().bytes().data(), out.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * bytes_per_run);
}

// The floor: one memcpy of the result's bytes (reads + writes them once).
void RunMemcpyFloor(benchmark::State& state, int64_t result_bytes) {
  std::vector<uint8_t> src(static_cast<size_t>(result_bytes), 1), dst(static_cast<size_t>(result_bytes), 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), dst.size());
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetBytesProcessed(state.iterations() * 2 * result_bytes);
}

void BM_PadKernel(benchmark::State& state) { RunKernel(state, kPad, kPadBytes); }
BENCHMARK(BM_PadKernel)->Name("pad/kernel")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_PadFallback(benchmark::State& state) { RunFallback(state, kPad, kPadBytes); }
BENCHMARK(BM_PadFallback)->Name("pad/fallback")->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_PadFloor(benchmark::State& state) { RunMemcpyFloor(state, (kSide + 2) * (kSide + 2) * 4); }
BENCHMARK(BM_PadFloor)->Name("pad/memcpy_floor")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DusKernel(benchmark::State& state) { RunKernel(state, kDynamicUpdateSlice, kDusBytes); }
BENCHMARK(BM_DusKernel)->Name("dynamic_update_slice/kernel")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_DusFallback(benchmark::State& state) { RunFallback(state, kDynamicUpdateSlice, kDusBytes); }
BENCHMARK(BM_DusFallback)->Name("dynamic_update_slice/fallback")->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_DusFloor(benchmark::State& state) { RunMemcpyFloor(state, kSide * kSide * 4); }
BENCHMARK(BM_DusFloor)->Name("dynamic_update_slice/memcpy_floor")->Unit(benchmark::kMillisecond)->UseRealTime();

// ---- ops that used to run in the fallback: compiled vs the fallback path ----
//
// complex<f32> exp and f32 lgamma (kernels calling jit/eval's per-element
// functions) and rng_bit_generator (a runtime library op), each against what
// FallbackThunk did for it before (operand bytes into literals,
// eval::EvaluateOp, results copied out).

const char* kComplexExp = R"(
func.func @main(%z: tensor<512x512xcomplex<f32>>) -> tensor<512x512xcomplex<f32>> {
  %0 = stablehlo.exponential %z : tensor<512x512xcomplex<f32>>
  return %0 : tensor<512x512xcomplex<f32>>
}
)";

const char* kLgamma = R"(
func.func @main(%x: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %0 = chlo.lgamma %x : tensor<512x512xf32> -> tensor<512x512xf32>
  return %0 : tensor<512x512xf32>
}
)";

const char* kRngBits = R"(
func.func @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<1024x1024xui32>) {
  %0, %1 = stablehlo.rng_bit_generator %s, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<1024x1024xui32>)
  return %0, %1 : tensor<2xui64>, tensor<1024x1024xui32>
}
)";

// Arguments of any type: float parts uniform in [-4, 4), other bytes 0x5A.
std::vector<std::vector<uint8_t>> AnyArgs(const std::vector<ir::Type>& types) {
  std::vector<std::vector<uint8_t>> args;
  for (size_t i = 0; i < types.size(); ++i) {
    std::vector<uint8_t> bytes(static_cast<size_t>(types[i].byte_size()), 0x5A);
    const ir::DType t = types[i].dtype();
    if (t == ir::DType::kF32 || t == ir::DType::kC64) {
      std::vector<float> f = RandomFloats(static_cast<int64_t>(bytes.size() / 4), 20 + static_cast<unsigned>(i));
      for (float& x : f) x *= 4;
      std::memcpy(bytes.data(), f.data(), bytes.size());
    }
    args.push_back(std::move(bytes));
  }
  return args;
}

// The whole program compiled (no fallback op), on raw buffers.
void RunCompiled(benchmark::State& state, const char* text) {
  auto device = MakeDevice(static_cast<int>(state.range(0)));
  auto exe = device ? CompileCpu(*device, text) : nullptr;
  if (!exe || exe->stats().fallback_ops != 0) {
    state.SkipWithError("compile failed or an op fell back");
    return;
  }
  const auto args = AnyArgs(exe->argument_types());
  std::vector<std::vector<uint8_t>> outs;
  for (const ir::Type& t : exe->result_types()) outs.emplace_back(static_cast<size_t>(t.byte_size()));
  std::vector<const void*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.data());
  std::vector<void*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(o.data());
  for (auto _ : state) {
    Status s = exe->Run(arg_ptrs, out_ptrs, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(out_ptrs.data());
  }
  state.SetItemsProcessed(state.iterations() * exe->result_types().back().num_elements());
}

// The program's one op the way FallbackThunk ran it.
void RunOpFallback(benchmark::State& state, const char* text) {
  auto module = Parse(text);
  if (!module) {
    state.SkipWithError("parse failed");
    return;
  }
  const ir::Op* op = module->EntryFunction()->entry()->ops().front().get();
  std::vector<ir::Type> types;
  for (const ir::Value* v : op->operands()) types.push_back(v->type());
  const auto args = AnyArgs(types);
  std::vector<const ir::Value*> values(op->operands().begin(), op->operands().end());
  std::vector<std::vector<uint8_t>> outs;
  for (size_t i = 0; i < op->num_results(); ++i) outs.emplace_back(static_cast<size_t>(op->result(i)->type().byte_size()));
  for (auto _ : state) {
    std::vector<eval::RuntimeValue> bindings;
    for (size_t i = 0; i < values.size(); ++i) bindings.emplace_back(*ir::Literal::FromBytes(types[i], args[i]));
    auto result = eval::EvaluateOp(*module, *op, values, bindings);
    if (!result.ok()) {
      state.SkipWithError(result.status().message().c_str());
      return;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      std::memcpy(outs[i].data(), (*result)[i].literal().bytes().data(), outs[i].size());
    }
    benchmark::DoNotOptimize(outs.data());
  }
  state.SetItemsProcessed(state.iterations() * op->result(op->num_results() - 1)->type().num_elements());
}

void BM_ComplexExpKernel(benchmark::State& state) { RunCompiled(state, kComplexExp); }
BENCHMARK(BM_ComplexExpKernel)->Name("complex_exp/kernel")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_ComplexExpFallback(benchmark::State& state) { RunOpFallback(state, kComplexExp); }
BENCHMARK(BM_ComplexExpFallback)->Name("complex_exp/fallback")->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_LgammaKernel(benchmark::State& state) { RunCompiled(state, kLgamma); }
BENCHMARK(BM_LgammaKernel)->Name("lgamma/kernel")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_LgammaFallback(benchmark::State& state) { RunOpFallback(state, kLgamma); }
BENCHMARK(BM_LgammaFallback)->Name("lgamma/fallback")->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_RngLibrary(benchmark::State& state) { RunCompiled(state, kRngBits); }
BENCHMARK(BM_RngLibrary)->Name("rng_bit_generator/library")->ArgName("threads")->Arg(1)->Arg(2)
    ->Unit(benchmark::kMillisecond)->UseRealTime();
void BM_RngFallback(benchmark::State& state) { RunOpFallback(state, kRngBits); }
BENCHMARK(BM_RngFallback)->Name("rng_bit_generator/fallback")->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
