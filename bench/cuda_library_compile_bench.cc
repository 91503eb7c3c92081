// The cuda compiler's library calls offline (issue 14, item 4): a cold
// compile (module -> CudaProgram, cubin by nvJitLink where a kernel is
// left) of the same op planned as a CUDA library call and as jit's own
// exact kernel. No GPU needed; what runs faster on a GPU is for the GPU
// benchmarks — this is what planning a call costs (and saves) at compile.
//
//   cuda_library_compile/dot/{cublaslt,own_kernel}    f32 [8,256,512] x [8,512,384]
//   cuda_library_compile/conv/{cudnn,im2col,own_kernel}  NHWC 8x56x56x64, HWIO 3x3x64x64
//                                                     (im2col: cuDNN off, im2col kernel + cuBLASLt)
//   cuda_library_compile/irfft3/cufft                 IRFFT over [15,16,32] (no own kernel)
//
// Run: build/bin/jitd_cuda_library_compile_bench --benchmark_repetitions=5
//      --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "devices/cuda/cuda_compiler.h"
#include "devices/cuda/ptx_compiler.h"
#include "jit/frontend/parser.h"

namespace jitd {
namespace {

const char* kDot = R"(
func.func @main(%a: tensor<8x256x512xf32>, %b: tensor<8x512x384xf32>) -> tensor<8x256x384xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<8x256x512xf32>, tensor<8x512x384xf32>) -> tensor<8x256x384xf32>
  return %0 : tensor<8x256x384xf32>
})";

const char* kConv = R"(
func.func @main(%x: tensor<8x56x56x64xf32>, %w: tensor<3x3x64x64xf32>) -> tensor<8x56x56x64xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<8x56x56x64xf32>, tensor<3x3x64x64xf32>) -> tensor<8x56x56x64xf32>
  return %0 : tensor<8x56x56x64xf32>
})";

const char* kIrfft3 = R"(
func.func @main(%x: tensor<14x15x16x17xcomplex<f32>>) -> tensor<14x15x16x32xf32> {
  %0 = stablehlo.fft %x, type = IRFFT, length = [15, 16, 32] : (tensor<14x15x16x17xcomplex<f32>>) -> tensor<14x15x16x32xf32>
  return %0 : tensor<14x15x16x32xf32>
})";

const devices::cuda::PtxCompiler* Assembler() {
  static auto* compiler = [] {
    auto created = devices::cuda::PtxCompiler::Create();
    return created.ok() ? created->release() : nullptr;
  }();
  return compiler;
}

void Compile(benchmark::State& state, const char* text, bool libraries, bool cudnn = true) {
  auto module = frontend::ParseModule(text);
  if (!module.ok()) {
    state.SkipWithError(module.status().message().c_str());
    return;
  }
  const devices::cuda::PtxCompiler* assembler = Assembler();
  if (!assembler) {
    state.SkipWithError("no PTX assembler (nvJitLink or ptxas)");
    return;
  }
  devices::cuda::CudaCompileOptions options;
  options.assembler = assembler;
  options.pipeline = "inline,decompose-chlo,cse,dce";
  options.use_cublaslt = options.use_cufft = options.use_cudnn = libraries;
  options.use_cudnn = libraries && cudnn;
  int64_t calls = 0, launches = 0;
  for (auto _ : state) {
    auto program = devices::cuda::CompileCuda(**module, options);
    if (!program.ok()) {
      state.SkipWithError(program.status().message().c_str());
      return;
    }
    calls = program->library_calls;
    launches = program->launches;
    benchmark::DoNotOptimize(program->cubin.data());
  }
  state.counters["library_calls"] = static_cast<double>(calls);
  state.counters["kernel_launches"] = static_cast<double>(launches);
}

BENCHMARK_CAPTURE(Compile, dot/cublaslt, kDot, true)->Name("cuda_library_compile/dot/cublaslt")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Compile, dot/own_kernel, kDot, false)->Name("cuda_library_compile/dot/own_kernel")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Compile, conv/cudnn, kConv, true)->Name("cuda_library_compile/conv/cudnn")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Compile, conv/im2col, kConv, true, false)->Name("cuda_library_compile/conv/im2col")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Compile, conv/own_kernel, kConv, false)->Name("cuda_library_compile/conv/own_kernel")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Compile, irfft3/cufft, kIrfft3, true)->Name("cuda_library_compile/irfft3/cufft")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
