// Quantized int8 matrix products on the cpu device against the f32 product
// of the same shape, each compiled by the device's own pipeline:
//   quantized/dot/i8:B/S    [B x] S x S x S dot_general of
//                           !quant.uniform<i8:f32, 2^-7> by <i8:f32, 2^-8>
//                           into <i32:f32, 2^-15>: lower-quantized makes it
//                           an i8 x i8 -> i32 dot_general, which runs on
//                           oneDNN's int8 matmul where the CPU has VNNI
//                           (devices/cpu/runtime/dnnl_matmul.cc)
//   quantized/dot/f32:B/S   the same shape in f32 (OpenBLAS sgemm)
//   quantized/dot/i8-interpreted:B/S  the quantized program compiled with
//                           no pipeline ("none"): the cpu device's
//                           interpreter fallback runs the quantized op, as
//                           it did for every quantized op before
//                           lower-quantized
// B = 1 is a plain matrix product, B > 1 a batched one. The counter MACs
// is multiply-adds per second. Both run on the device's threads (one per
// CPU unless JITD_CPU_THREADS says otherwise); like `jitd`, the process
// restarts itself with OpenBLAS's best kernels for the CPU (blas_core.h).
// Run: build/bin/jitd_quantized_bench
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "devices/compile.h"
#include "devices/cpu/runtime/blas_core.h"
#include "devices/device.h"
#include "jit/frontend/parser.h"

namespace jitd {
namespace {

std::string Shape(int64_t batch, int64_t rows, int64_t cols, const std::string& element) {
  std::string s = "tensor<";
  if (batch > 1) s += std::to_string(batch) + "x";
  return s + std::to_string(rows) + "x" + std::to_string(cols) + "x" + element + ">";
}

// out = lhs . rhs over [batch,] size x size matrices.
std::string Program(int64_t batch, int64_t size, const std::string& lhs, const std::string& rhs,
                    const std::string& out) {
  const std::string a = Shape(batch, size, size, lhs), b = Shape(batch, size, size, rhs);
  const std::string o = Shape(batch, size, size, out);
  const std::string dims = batch > 1 ? "batching_dims = [0] x [0], contracting_dims = [2] x [1]"
                                     : "contracting_dims = [1] x [0]";
  return "func.func @main(%a: " + a + ", %b: " + b + ") -> " + o + " {\n  %0 = stablehlo.dot_general %a, %b, " +
         dims + " : (" + a + ", " + b + ") -> " + o + "\n  return %0 : " + o + "\n}\n";
}

template <typename T>
std::vector<T> Random(int64_t n, unsigned seed) {
  std::vector<T> v(static_cast<size_t>(n));
  std::mt19937 gen(seed);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> dist(-1, 1);
    for (T& x : v) x = dist(gen);
  } else {
    std::uniform_int_distribution<int> dist(-128, 127);
    for (T& x : v) x = static_cast<T>(dist(gen));
  }
  return v;
}

// Element (b, i, j) of the product, summed in double.
template <typename T>
double Reference(const std::vector<T>& a, const std::vector<T>& b, int64_t size, int64_t bi, int64_t i, int64_t j) {
  double sum = 0;
  const int64_t base = bi * size * size;
  for (int64_t k = 0; k < size; ++k) {
    sum += static_cast<double>(a[static_cast<size_t>(base + i * size + k)]) *
           static_cast<double>(b[static_cast<size_t>(base + k * size + j)]);
  }
  return sum;
}

template <typename In, typename Out>
void Loop(benchmark::State& state, const std::string& text, bool pipeline = true) {
  const int64_t batch = state.range(0), size = state.range(1);
  const int64_t n = batch * size * size;
  auto device = devices::CreateDevice("cpu");
  auto module = frontend::ParseModule(text);
  if (!device.ok() || !module.ok()) {
    state.SkipWithError("no cpu device or program");
    return;
  }
  devices::ProgramCompileOptions options;
  if (!pipeline) options.pipeline = "";
  auto exe = devices::CompileProgram(**device, std::shared_ptr<ir::Module>(std::move(*module)), options);
  if (!exe.ok() || !(*exe)->runs_on_buffers()) {
    state.SkipWithError(exe.ok() ? "does not run on buffers" : exe.status().message().c_str());
    return;
  }
  const std::vector<In> a = Random<In>(n, 1), b = Random<In>(n, 2);
  std::vector<Out> y(static_cast<size_t>(n));
  const void* args[] = {a.data(), b.data()};
  void* results[] = {y.data()};
  for (auto _ : state) {
    Status s = (*exe)->Run(args, results, {});
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::ClobberMemory();
  }
  // Spot checks: exact for the integers, 1e-4 relative to sum |a||b| for f32.
  for (int64_t t = 0; t < 16; ++t) {
    const int64_t bi = t % batch, i = (t * 37) % size, j = (t * 101) % size;
    const double want = Reference(a, b, size, bi, i, j);
    const double got = static_cast<double>(y[static_cast<size_t>(bi * size * size + i * size + j)]);
    const bool ok = std::is_integral_v<Out> ? got == want : std::abs(got - want) <= 1e-4 * static_cast<double>(size);
    if (!ok) {
      state.SkipWithError("wrong results");
      return;
    }
  }
  state.counters["MACs"] = benchmark::Counter(static_cast<double>(n * size) * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate);
}

void BM_QuantizedDot(benchmark::State& state) {
  Loop<int8_t, int32_t>(state, Program(state.range(0), state.range(1), "!quant.uniform<i8:f32, 0.0078125>",
                                       "!quant.uniform<i8:f32, 0.00390625>",
                                       "!quant.uniform<i32:f32, 3.0517578125E-5>"));
}

void BM_QuantizedDotInterpreted(benchmark::State& state) {
  Loop<int8_t, int32_t>(state,
                        Program(state.range(0), state.range(1), "!quant.uniform<i8:f32, 0.0078125>",
                                "!quant.uniform<i8:f32, 0.00390625>", "!quant.uniform<i32:f32, 3.0517578125E-5>"),
                        false);
}

void BM_F32Dot(benchmark::State& state) {
  Loop<float, float>(state, Program(state.range(0), state.range(1), "f32", "f32", "f32"));
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "S"})->Args({1, 256})->Args({1, 512})->Args({1, 1024})->Args({16, 128})->Args({8, 256});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_QuantizedDot)->Name("quantized/dot/i8")->Apply(Sizes);
BENCHMARK(BM_F32Dot)->Name("quantized/dot/f32")->Apply(Sizes);
BENCHMARK(BM_QuantizedDotInterpreted)->Name("quantized/dot/i8-interpreted")->ArgNames({"B", "S"})->Args({1, 256})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace jitd

// As `jitd` does first thing: OpenBLAS's AVX-512 kernels on CPUs its
// detection does not know (blas_core.h), so the f32 baseline is the one
// the daemon runs.
int main(int argc, char** argv) {
  jitd::cpu::RestartWithBetterBlasCore(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
