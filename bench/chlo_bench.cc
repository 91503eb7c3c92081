// CHLO's broadcasting binaries and mulhi on the cpu device, decomposed into
// StableHLO by jit/passes' decompose-chlo (codegen compiles them into
// kernels) against kept as CHLO (each op runs through the cpu device's
// per-op fallback to jit/eval):
//   chlo/broadcast/decomposed:D   y = broadcast_add(broadcast_multiply(m,
//                                 row), row) over 1024x1024 f32, row 1024
//   chlo/mulhi/decomposed:D       mulhi of two 1M i32 tensors
// D = 1: the device's own pipeline ("default": decompose-chlo, ...,
// fusion); D = 0: the same without decompose-chlo. Bytes per second count
// the bytes read + written.
// Run: build/bin/jitd_chlo_bench
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "devices/compile.h"
#include "devices/device.h"
#include "jit/frontend/parser.h"

namespace jitd {
namespace {

constexpr const char* kBroadcast = R"(
func.func @main(%m: tensor<1024x1024xf32>, %row: tensor<1024xf32>) -> tensor<1024x1024xf32> {
  %0 = chlo.broadcast_multiply %m, %row : (tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32>
  %1 = chlo.broadcast_add %0, %row : (tensor<1024x1024xf32>, tensor<1024xf32>) -> tensor<1024x1024xf32>
  return %1 : tensor<1024x1024xf32>
}
)";

constexpr const char* kMulhi = R"(
func.func @main(%a: tensor<1048576xi32>, %b: tensor<1048576xi32>) -> tensor<1048576xi32> {
  %0 = chlo.mulhi %a, %b : tensor<1048576xi32>, tensor<1048576xi32> -> tensor<1048576xi32>
  return %0 : tensor<1048576xi32>
}
)";

// The cpu device's pipeline, with or without decompose-chlo.
std::string Pipeline(bool decompose) {
  return decompose ? "default" : "inline,canonicalize,fold-constants,cse,canonicalize,dce,fusion";
}

std::unique_ptr<devices::Executable> Compile(const devices::Device& device, const char* text,
                                             bool decompose) {
  auto module = frontend::ParseModule(text);
  if (!module.ok()) return nullptr;
  devices::ProgramCompileOptions options;
  options.pipeline = Pipeline(decompose);
  auto exe = devices::CompileProgram(device, std::shared_ptr<ir::Module>(std::move(*module)), options);
  return exe.ok() ? std::move(*exe) : nullptr;
}

template <typename T>
std::vector<T> Random(int64_t n, unsigned seed, T lo, T hi) {
  std::vector<T> v(static_cast<size_t>(n));
  std::mt19937 gen(seed);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> dist(lo, hi);
    for (T& x : v) x = dist(gen);
  } else {
    std::uniform_int_distribution<T> dist(lo, hi);
    for (T& x : v) x = dist(gen);
  }
  return v;
}

// `check` says whether the results hold what the program computes.
template <typename Check>
void Loop(benchmark::State& state, const char* text, std::span<const void* const> args,
          std::span<void* const> results, int64_t bytes, Check check) {
  auto device = devices::CreateDevice("cpu");
  auto exe = device.ok() ? Compile(**device, text, state.range(0) != 0) : nullptr;
  if (!exe || !exe->runs_on_buffers()) {
    state.SkipWithError("compile failed");
    return;
  }
  for (auto _ : state) {
    Status s = exe->Run(args, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  if (!check()) state.SkipWithError("wrong results");
  state.SetBytesProcessed(state.iterations() * bytes);
}

void BM_Broadcast(benchmark::State& state) {
  constexpr int64_t n = 1024 * 1024;
  std::vector<float> m = Random<float>(n, 1, -1, 1), row = Random<float>(1024, 2, -1, 1);
  std::vector<float> y(static_cast<size_t>(n));
  const void* args[] = {m.data(), row.data()};
  void* results[] = {y.data()};
  Loop(state, kBroadcast, args, results, 2 * n * 4, [&] {
    for (int64_t i = 0; i < n; i += 4099) {
      const float r = row[static_cast<size_t>(i % 1024)];
      if (y[static_cast<size_t>(i)] != m[static_cast<size_t>(i)] * r + r) return false;
    }
    return true;
  });
}
BENCHMARK(BM_Broadcast)->Name("chlo/broadcast")->ArgName("decomposed")->Arg(1)->Arg(0)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Mulhi(benchmark::State& state) {
  constexpr int64_t n = 1 << 20;
  std::vector<int32_t> a = Random<int32_t>(n, 3, INT32_MIN, INT32_MAX);
  std::vector<int32_t> b = Random<int32_t>(n, 4, INT32_MIN, INT32_MAX);
  std::vector<int32_t> y(static_cast<size_t>(n));
  const void* args[] = {a.data(), b.data()};
  void* results[] = {y.data()};
  Loop(state, kMulhi, args, results, 3 * n * 4, [&] {
    for (int64_t i = 0; i < n; i += 4099) {
      const auto k = static_cast<size_t>(i);
      if (y[k] != static_cast<int32_t>((int64_t{a[k]} * int64_t{b[k]}) >> 32)) return false;
    }
    return true;
  });
}
BENCHMARK(BM_Mulhi)->Name("chlo/mulhi")->ArgName("decomposed")->Arg(1)->Arg(0)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
