// What shape refinement (jit/passes/refine_shapes.h) adds to a compile of a
// shape-polymorphic program, beside the parse + verify every compile does.
// The program: an MLP of L layers on x: tensor<?x256xf32> as jax.export
// writes one (per layer dot_general, a bias broadcast to the batch through
// get_dimension_size / concatenate / dynamic_broadcast_in_dim, add, tanh).
//   parse_verify/dynamic/L   ParseModule + VerifyModule of the `?` program
//   parse_verify/static/L    the same program written for batch 8, for scale
//   refine/L                 RefineShapes for batch 8 (a fresh parse per
//                            iteration, not timed): what a compile of a new
//                            concrete shape adds
// Run: build/bin/jitd_refine_shapes_bench (see BENCHMARKS.md).

#include <benchmark/benchmark.h>

#include <string>

#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "jit/passes/refine_shapes.h"

namespace jitd {
namespace {

// The MLP's text; `batch` "?" for the polymorphic form, else a number.
std::string Mlp(int layers, const std::string& batch) {
  const std::string x = "tensor<" + batch + "x256xf32>";
  std::string t = "func.func @main(%x: " + x + ", %w: tensor<256x256xf32>, %b: tensor<256xf32>) -> " +
                  x + " {\n";
  std::string v = "%x";
  for (int l = 0; l < layers; ++l) {
    const std::string n = std::to_string(l);
    t += "  %d" + n + " = stablehlo.dot_general " + v + ", %w, contracting_dims = [1] x [0] : (" + x +
         ", tensor<256x256xf32>) -> " + x + "\n";
    if (batch == "?") {
      t += "  %n" + n + " = stablehlo.get_dimension_size " + v + ", dim = 0 : (" + x +
           ") -> tensor<i32>\n";
      t += "  %r" + n + " = stablehlo.reshape %n" + n + " : (tensor<i32>) -> tensor<1xi32>\n";
      t += "  %c" + n + " = stablehlo.constant dense<256> : tensor<1xi32>\n";
      t += "  %s" + n + " = stablehlo.concatenate %r" + n + ", %c" + n +
           ", dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>\n";
      t += "  %b" + n + " = stablehlo.dynamic_broadcast_in_dim %b, %s" + n +
           ", dims = [1] : (tensor<256xf32>, tensor<2xi32>) -> " + x + "\n";
    } else {
      t += "  %b" + n + " = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<256xf32>) -> " + x + "\n";
    }
    t += "  %a" + n + " = stablehlo.add %d" + n + ", %b" + n + " : " + x + "\n";
    t += "  %t" + n + " = stablehlo.tanh %a" + n + " : " + x + "\n";
    v = "%t" + n;
  }
  t += "  return " + v + " : " + x + "\n}\n";
  return t;
}

void ParseVerify(benchmark::State& state, const std::string& batch) {
  const std::string text = Mlp(static_cast<int>(state.range(0)), batch);
  for (auto _ : state) {
    auto m = frontend::ParseModule(text);
    if (!m.ok() || !ir::VerifyModule(**m).ok()) {
      state.SkipWithError("does not parse and verify");
      return;
    }
    benchmark::DoNotOptimize(m);
  }
  state.counters["bytes"] = static_cast<double>(text.size());
}

void BM_ParseVerifyDynamic(benchmark::State& state) { ParseVerify(state, "?"); }
void BM_ParseVerifyStatic(benchmark::State& state) { ParseVerify(state, "8"); }

void BM_Refine(benchmark::State& state) {
  const std::string text = Mlp(static_cast<int>(state.range(0)), "?");
  const ir::Type args[3] = {ir::Type::Tensor(ir::DType::kF32, {8, 256}),
                            ir::Type::Tensor(ir::DType::kF32, {256, 256}),
                            ir::Type::Tensor(ir::DType::kF32, {256})};
  for (auto _ : state) {
    state.PauseTiming();
    auto m = frontend::ParseModule(text);
    state.ResumeTiming();
    if (!m.ok()) {
      state.SkipWithError("does not parse");
      return;
    }
    Status s = passes::RefineShapes(**m, args);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    benchmark::DoNotOptimize(m);
  }
}

BENCHMARK(BM_ParseVerifyDynamic)->Name("parse_verify/dynamic")->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ParseVerifyStatic)->Name("parse_verify/static")->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Refine)->Name("refine")->Arg(10)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
