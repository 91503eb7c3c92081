// The custom-call registry's cost over the LAPACK routine it runs: jaxlib's
// lapack_dpotrf_ffi (column-major layouts, as jax.export writes it) through
// eval::RunCustomCall -- laying the operand out, the call, reading the
// result back -- against dpotrf_ on a copy of the same matrix, in one run.
// Run: build/bin/jitd_custom_calls_bench (see BENCHMARKS.md).
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "jit/eval/custom_calls.h"
#include "jit/frontend/parser.h"
#include "jit/ir/literal.h"

extern "C" void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);

namespace {

using jitd::ir::DType;
using jitd::ir::Literal;
using jitd::ir::Type;

// A symmetric positive definite n x n matrix (row-major == column-major).
Literal Spd(int n) {
  Literal lit = *Literal::Create(Type::Tensor(DType::kF64, {n, n}));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double v = 1.0 / (1.0 + (i > j ? i - j : j - i));
      lit.SetDouble(int64_t{i} * n + j, i == j ? v + n : v);
    }
  }
  return lit;
}

void BM_RegistryPotrf(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string t = "tensor<" + std::to_string(n) + "x" + std::to_string(n) + "xf64>";
  const std::string text = "func.func @main(%a: " + t + ") -> " + t + " {\n"
      "  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%a) {mhlo.backend_config = {uplo = 76 : ui8}, "
      "operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : "
      "tensor<2xindex>, dense<> : tensor<0xindex>]} : (" + t + ") -> (" + t + ", tensor<i32>)\n"
      "  return %0#0 : " + t + "\n}\n";
  auto module = jitd::frontend::ParseModule(text);
  if (!module.ok()) {
    state.SkipWithError(module.status().ToString().c_str());
    return;
  }
  const jitd::ir::Op* op = (*module)->EntryFunction()->body().block(0).ops()[0].get();
  const Literal a = Spd(n);
  const Literal* operands[] = {&a};
  for (auto _ : state) {
    auto r = jitd::eval::RunCustomCall(*op, operands);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(r->data());
  }
}

void BM_DirectPotrf(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Literal a = Spd(n);
  std::vector<double> work(static_cast<size_t>(n) * n);
  for (auto _ : state) {
    std::memcpy(work.data(), a.bytes().data(), work.size() * sizeof(double));
    int info = 0;
    const char uplo = 'L';
    dpotrf_(&uplo, &n, work.data(), &n, &info);
    benchmark::DoNotOptimize(work.data());
    benchmark::DoNotOptimize(info);
  }
}

BENCHMARK(BM_RegistryPotrf)->Arg(16)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DirectPotrf)->Arg(16)->Arg(128)->Arg(512)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
