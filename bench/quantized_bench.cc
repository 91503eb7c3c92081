// Quantized int8 matrix products on the cpu device against the f32 product
// of the same shape, each compiled by the device's own pipeline:
//   quantized/dot/i8:B/S    [B x] S x S x S dot_general of
//                           !quant.uniform<i8:f32, 2^-7> by <i8:f32, 2^-8>
//                           into <i32:f32, 2^-15>: lower-quantized makes it
//                           an i8 x i8 -> i32 dot_general, which runs on
//                           oneDNN's int8 matmul where the CPU has VNNI
//                           (devices/cpu/runtime/dnnl_matmul.cc)
//   quantized/dot/f32:B/S   the same shape in f32 (OpenBLAS sgemm)
//   quantized/conv/i8:S/C   an NHWC 3x3 convolution (pad 1) of a 1xSxSxC
//                           image with C output features, quantized as
//                           above: lowered to i8 x i8 -> i32, im2col and
//                           oneDNN's int8 matmul (convolution.cc)
//   quantized/conv/f32:S/C  the same convolution in f32 (oneDNN's f32
//                           convolution, dnnl_convolution.cc)
//   quantized/dot/i8-asymmetric:B/S  the same with lhs zero point 5: the
//                           int8 product less 5 x the rhs sums (a second,
//                           one-row int8 dot_general)
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
double Reference(const std::vector<T>& a, const std::vector<T>& b, int64_t size, int64_t bi, int64_t i, int64_t j,
                 int64_t lhs_zero_point) {
  double sum = 0;
  const int64_t base = bi * size * size;
  for (int64_t k = 0; k < size; ++k) {
    sum += (static_cast<double>(a[static_cast<size_t>(base + i * size + k)]) - static_cast<double>(lhs_zero_point)) *
           static_cast<double>(b[static_cast<size_t>(base + k * size + j)]);
  }
  return sum;
}

template <typename In, typename Out>
void Loop(benchmark::State& state, const std::string& text, bool pipeline = true, int64_t lhs_zero_point = 0) {
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
    const double want = Reference(a, b, size, bi, i, j, lhs_zero_point);
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

std::string ConvProgram(int64_t size, int64_t channels, const std::string& lhs, const std::string& rhs,
                        const std::string& out) {
  const std::string s = std::to_string(size), c = std::to_string(channels);
  const std::string a = "tensor<1x" + s + "x" + s + "x" + c + "x" + lhs + ">";
  const std::string b = "tensor<3x3x" + c + "x" + c + "x" + rhs + ">";
  const std::string o = "tensor<1x" + s + "x" + s + "x" + c + "x" + out + ">";
  return "func.func @main(%a: " + a + ", %b: " + b + ") -> " + o + " {\n  %0 = stablehlo.convolution(%a, %b) " +
         "dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} " +
         "{batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (" + a + ", " + b + ") -> " + o +
         "\n  return %0 : " + o + "\n}\n";
}

// Output element (y, x, f) of the convolution, summed in double.
template <typename T>
double ConvReference(const std::vector<T>& a, const std::vector<T>& b, int64_t size, int64_t c, int64_t y,
                     int64_t x, int64_t f) {
  double sum = 0;
  for (int64_t dy = 0; dy < 3; ++dy) {
    for (int64_t dx = 0; dx < 3; ++dx) {
      const int64_t iy = y + dy - 1, ix = x + dx - 1;
      if (iy < 0 || ix < 0 || iy >= size || ix >= size) continue;
      for (int64_t i = 0; i < c; ++i) {
        sum += static_cast<double>(a[static_cast<size_t>((iy * size + ix) * c + i)]) *
               static_cast<double>(b[static_cast<size_t>(((dy * 3 + dx) * c + i) * c + f)]);
      }
    }
  }
  return sum;
}

template <typename In, typename Out>
void ConvLoop(benchmark::State& state, const std::string& text) {
  const int64_t size = state.range(0), c = state.range(1);
  auto device = devices::CreateDevice("cpu");
  auto module = frontend::ParseModule(text);
  if (!device.ok() || !module.ok()) {
    state.SkipWithError("no cpu device or program");
    return;
  }
  auto exe = devices::CompileProgram(**device, std::shared_ptr<ir::Module>(std::move(*module)), {});
  if (!exe.ok() || !(*exe)->runs_on_buffers()) {
    state.SkipWithError(exe.ok() ? "does not run on buffers" : exe.status().message().c_str());
    return;
  }
  const std::vector<In> a = Random<In>(size * size * c, 1), b = Random<In>(9 * c * c, 2);
  std::vector<Out> y(static_cast<size_t>(size * size * c));
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
  for (int64_t t = 0; t < 16; ++t) {
    const int64_t yy = (t * 7) % size, xx = (t * 13) % size, f = (t * 5) % c;
    const double want = ConvReference(a, b, size, c, yy, xx, f);
    const double got = static_cast<double>(y[static_cast<size_t>((yy * size + xx) * c + f)]);
    const bool ok = std::is_integral_v<Out> ? got == want : std::abs(got - want) <= 1e-4 * static_cast<double>(9 * c);
    if (!ok) {
      state.SkipWithError("wrong results");
      return;
    }
  }
  state.counters["MACs"] = benchmark::Counter(static_cast<double>(size * size * c * 9 * c) *
                                                  static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate);
}

void BM_QuantizedConv(benchmark::State& state) {
  ConvLoop<int8_t, int32_t>(state, ConvProgram(state.range(0), state.range(1), "!quant.uniform<i8:f32, 0.0078125>",
                                               "!quant.uniform<i8:f32, 0.00390625>",
                                               "!quant.uniform<i32:f32, 3.0517578125E-5>"));
}

void BM_F32Conv(benchmark::State& state) {
  ConvLoop<float, float>(state, ConvProgram(state.range(0), state.range(1), "f32", "f32", "f32"));
}

void ConvSizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"S", "C"})->Args({56, 64})->Args({28, 128})->Args({14, 256});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_QuantizedConv)->Name("quantized/conv/i8")->Apply(ConvSizes);
BENCHMARK(BM_F32Conv)->Name("quantized/conv/f32")->Apply(ConvSizes);

void BM_QuantizedDot(benchmark::State& state) {
  Loop<int8_t, int32_t>(state, Program(state.range(0), state.range(1), "!quant.uniform<i8:f32, 0.0078125>",
                                       "!quant.uniform<i8:f32, 0.00390625>",
                                       "!quant.uniform<i32:f32, 3.0517578125E-5>"));
}

void BM_QuantizedDotAsymmetric(benchmark::State& state) {
  Loop<int8_t, int32_t>(state,
                        Program(state.range(0), state.range(1), "!quant.uniform<i8:f32, 0.0078125:5>",
                                "!quant.uniform<i8:f32, 0.00390625>", "!quant.uniform<i32:f32, 3.0517578125E-5>"),
                        true, 5);
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
BENCHMARK(BM_QuantizedDotAsymmetric)->Name("quantized/dot/i8-asymmetric")->ArgNames({"B", "S"})->Args({1, 512})
    ->Args({8, 256})->Unit(benchmark::kMillisecond)->UseRealTime();
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
