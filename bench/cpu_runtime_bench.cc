// The CPU runtime library's heavy ops against their floors, in one run:
//
//   dot/library/N/threads:T      stablehlo.dot_general f32 NxN through
//                                 LibraryOp::Run
//   dot/cblas_sgemm/N/threads:T  cblas_sgemm on the same buffers (the peer;
//                                 the goal is library >= 0.9x its speed)
//   conv/library/LAYOUT/threads:T ResNet-50's 3x3, 64 -> 64 channel, 56x56
//                                 convolution (stride 1, pad 1, batch 1),
//                                 NHWC or NCHW, through LibraryOp::Run
//   conv/sgemm_floor/threads:T    the convolution's matrix product alone
//                                 (3136 x 576 x 64 sgemm): what im2col adds
//   fft/library/1024x1024         2-d complex<f32> FFT
//   sort/library/64x4096          f32 sort along the last axis, comparator
//                                 region through jit/eval vs a compiled one
// T is OpenBLAS's thread count (openblas_set_num_threads), 1 or 2.
// Counters: FLOP/s (2 flops per multiply-add) where that means something.
// Reproduce: see BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "devices/cpu/runtime/library_op.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd {
namespace {

// A parsed one-op program; the op is the entry block's first op.
struct Program {
  std::unique_ptr<ir::Module> module;
  const ir::Op* op = nullptr;
};

Program Parse(const std::string& text) {
  Program p;
  auto m = frontend::ParseModule(text);
  if (!m.ok() || !ir::VerifyModule(**m).ok()) return p;
  p.module = std::move(m).value();
  p.op = p.module->EntryFunction()->entry()->ops()[0].get();
  return p;
}

std::vector<float> RandomFloats(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(seed >> 40) / static_cast<double>(1ull << 24) * 2 - 1);
  }
  return v;
}

void SetThreads(benchmark::State& state) { openblas_set_num_threads(static_cast<int>(state.range(1))); }

std::string DotText(int64_t n) {
  const std::string t = "tensor<" + std::to_string(n) + "x" + std::to_string(n) + "xf32>";
  return "func.func @main(%a: " + t + ", %b: " + t + ") -> " + t +
         " {\n  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (" + t + ", " +
         t + ") -> " + t + "\n  return %0 : " + t + "\n}\n";
}

void BM_DotLibrary(benchmark::State& state) {
  SetThreads(state);
  const int64_t n = state.range(0);
  Program p = Parse(DotText(n));
  auto op = cpu::CreateLibraryOp(*p.op);
  if (!p.op || !op.ok() || !*op) {
    state.SkipWithError("no library op");
    return;
  }
  const std::vector<float> a = RandomFloats(n * n, 1), b = RandomFloats(n * n, 2);
  std::vector<float> c(static_cast<size_t>(n * n));
  const void* in[] = {a.data(), b.data()};
  void* out[] = {c.data()};
  for (auto _ : state) {
    Status s = (*op)->Run(in, out, {});
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_DotCblas(benchmark::State& state) {
  SetThreads(state);
  const int n = static_cast<int>(state.range(0));
  const std::vector<float> a = RandomFloats(int64_t{n} * n, 1), b = RandomFloats(int64_t{n} * n, 2);
  std::vector<float> c(static_cast<size_t>(n) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

// ResNet-50 conv2_x: 56x56, 64 -> 64 channels, 3x3, pad 1.
constexpr double kConvFlops = 2.0 * 56 * 56 * 64 * 64 * 9;

std::string ConvText(bool nhwc) {
  const std::string lhs = nhwc ? "tensor<1x56x56x64xf32>" : "tensor<1x64x56x56xf32>";
  const std::string rhs = nhwc ? "tensor<3x3x64x64xf32>" : "tensor<64x64x3x3xf32>";
  const std::string dims = nhwc ? "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
                                : "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]";
  return "func.func @main(%a: " + lhs + ", %b: " + rhs + ") -> " + lhs +
         " {\n  %0 = stablehlo.convolution(%a, %b) dim_numbers = " + dims +
         ", window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (" +
         lhs + ", " + rhs + ") -> " + lhs + "\n  return %0 : " + lhs + "\n}\n";
}

void BM_ConvLibrary(benchmark::State& state) {
  SetThreads(state);
  Program p = Parse(ConvText(state.range(0) == 0));
  auto op = p.op ? cpu::CreateLibraryOp(*p.op) : StatusOr<std::unique_ptr<cpu::LibraryOp>>(nullptr);
  if (!op.ok() || !*op) {
    state.SkipWithError("no library op");
    return;
  }
  const std::vector<float> a = RandomFloats(56 * 56 * 64, 1), b = RandomFloats(9 * 64 * 64, 2);
  std::vector<float> c(56 * 56 * 64);
  const void* in[] = {a.data(), b.data()};
  void* out[] = {c.data()};
  for (auto _ : state) {
    Status s = (*op)->Run(in, out, {});
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_ConvSgemmFloor(benchmark::State& state) {
  SetThreads(state);
  const int m = 56 * 56, k = 9 * 64, n = 64;
  const std::vector<float> a = RandomFloats(int64_t{m} * k, 1), b = RandomFloats(int64_t{k} * n, 2);
  std::vector<float> c(static_cast<size_t>(m) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n,
                0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(kConvFlops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Fft(benchmark::State& state) {
  const std::string t = "tensor<1024x1024xcomplex<f32>>";
  Program p = Parse("func.func @main(%a: " + t + ") -> " + t + " {\n  %0 = stablehlo.fft %a, type = FFT, length = [1024, 1024] : (" +
                    t + ") -> " + t + "\n  return %0 : " + t + "\n}\n");
  auto op = p.op ? cpu::CreateLibraryOp(*p.op) : StatusOr<std::unique_ptr<cpu::LibraryOp>>(nullptr);
  if (!op.ok() || !*op) {
    state.SkipWithError("no library op");
    return;
  }
  const std::vector<float> a = RandomFloats(2 * 1024 * 1024, 1);
  std::vector<float> c(2 * 1024 * 1024);
  const void* in[] = {a.data()};
  void* out[] = {c.data()};
  for (auto _ : state) {
    Status s = (*op)->Run(in, out, {});
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(c.data());
  }
}

void BM_Sort(benchmark::State& state) {
  const std::string t = "tensor<64x4096xf32>";
  Program p = Parse("func.func @main(%a: " + t + ") -> " + t + " {\n  %0 = \"stablehlo.sort\"(%a) <{dimension = 1 : i64}> ({\n" +
                    "  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n    %c = stablehlo.compare LT, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>\n" +
                    "    stablehlo.return %c : tensor<i1>\n  }) : (" + t + ") -> " + t + "\n  return %0 : " + t + "\n}\n");
  cpu::LibraryOpOptions options;
  if (state.range(0) == 1) {
    options.comparator = [](const void* const* l, const void* const* r) {
      float a, b;
      std::memcpy(&a, l[0], 4);
      std::memcpy(&b, r[0], 4);
      return a < b;
    };
  }
  auto op = p.op ? cpu::CreateLibraryOp(*p.op, options) : StatusOr<std::unique_ptr<cpu::LibraryOp>>(nullptr);
  if (!op.ok() || !*op) {
    state.SkipWithError("no library op");
    return;
  }
  const std::vector<float> a = RandomFloats(64 * 4096, 1);
  std::vector<float> c(64 * 4096);
  const void* in[] = {a.data()};
  void* out[] = {c.data()};
  for (auto _ : state) {
    Status s = (*op)->Run(in, out, {});
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
    benchmark::DoNotOptimize(c.data());
  }
}

BENCHMARK(BM_DotLibrary)->Name("dot/library")->ArgsProduct({{1024, 2048}, {1, 2}})->ArgNames({"", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DotCblas)->Name("dot/cblas_sgemm")->ArgsProduct({{1024, 2048}, {1, 2}})->ArgNames({"", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvLibrary)->Name("conv/library")->ArgsProduct({{0, 1}, {1, 2}})->ArgNames({"nchw", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ConvSgemmFloor)->Name("conv/sgemm_floor")->ArgsProduct({{0}, {1, 2}})->ArgNames({"", "threads"})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Fft)->Name("fft/library/1024x1024")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Sort)->Name("sort/library/64x4096")->Arg(0)->Arg(1)->ArgNames({"compiled_comparator"})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
