// The real models of ../shared/models (BERT-base, ResNet-50, searchless
// chess 9M) on the cpu device.
//
// Always: each compiles (most ops as kernels or library calls; no op may
// need the fallback except the few listed) and its executable round-trips
// through Serialize / Deserialize.
// With JITD_SLOW_TESTS=1 (ctest label "slow"; ~45 s for the three here,
// mostly the interpreter): each runs on random inputs and seeded weights on
// the cpu device (compiled as the daemon compiles: pass pipeline, then
// codegen) and on the interpreter (the program as written) and the results agree normwise (|x - y| <= 1e-3 max|y| per
// result: dot_general and convolution run through OpenBLAS sgemm on the cpu
// device and in a wider accumulator in the interpreter, and the rounding
// differences compound through the layers). Measured 2026-11-21: chess
// 2.9e-7, BERT 7.6e-5 / 1.8e-5, ResNet-50 1.7e-6 / 3.5e-7 (relative to each
// result's largest magnitude). The reference must be finite and non-zero:
// ResNet-50's elided weights use RandomFill::kWeights (with the uniform
// fill its batch-norm variances go negative and both devices give NaN).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "devices/compile.h"
#include "devices/cpu/cpu_device.h"
#include "devices/interpreter/interpreter_device.h"
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
  EXPECT_TRUE(module.ok()) << module.status().message();
  return module.ok() ? std::shared_ptr<ir::Module>(std::move(*module)) : nullptr;
}

const cpu::CpuDevice& Cpu() {
  static cpu::CpuDevice* device = cpu::CpuDevice::Create().value().release();
  return *device;
}

// Seeded arguments; integers 0 or 1, floats made small and non-negative (0.05 |x| of the
// uniform [-1, 1) fill) so that weights fed as arguments — layer-norm
// scales, variances — do not turn the whole network into NaN or overflow,
// which would compare trivially.
std::vector<eval::RuntimeValue> RandomArgs(const devices::Executable& exe) {
  std::vector<eval::RuntimeValue> args;
  for (size_t i = 0; i < exe.argument_types().size(); ++i) {
    auto lit = eval::RandomLiteral(exe.argument_types()[i], 100 + i);
    EXPECT_TRUE(lit.ok());
    if (!lit.ok()) continue;
    if (ir::IsFloat(lit->dtype())) {
      for (int64_t e = 0; e < lit->num_elements(); ++e) lit->SetDouble(e, 0.05 * std::fabs(lit->GetDouble(e)));
    } else if (ir::IsInteger(lit->dtype())) {
      // Token ids, token types, positions and attention masks: 0 or 1 (a
      // negative mask overflows BERT's additive mask to -inf: all NaN).
      for (int64_t e = 0; e < lit->num_elements(); ++e) lit->SetInt(e, std::abs(lit->GetInt(e)) % 2);
    }
    args.emplace_back(std::move(*lit));
  }
  return args;
}

class CpuModelsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CpuModelsTest, CompilesAndSerializes) {
  auto module = LoadModel(GetParam());
  ASSERT_NE(module, nullptr);
  auto exe = Cpu().Compile(module);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const auto& stats = static_cast<const cpu::CpuExecutable&>(**exe).stats();
  std::printf("%s: %lld ops in %lld kernels (%lld distinct), %lld library, %lld fallback; "
              "plan %.1f ms, LLVM %.1f ms\n",
              GetParam(), static_cast<long long>(stats.kernel_ops),
              static_cast<long long>(stats.kernels), static_cast<long long>(stats.unique_kernels),
              static_cast<long long>(stats.library_ops), static_cast<long long>(stats.fallback_ops),
              stats.codegen_seconds * 1e3, stats.llvm_seconds * 1e3);
  EXPECT_GT(stats.kernel_ops, 5 * (stats.fallback_ops + 1));
  auto bytes = Cpu().Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  auto loaded = Cpu().Deserialize(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ((*loaded)->result_types(), (*exe)->result_types());
}

TEST_P(CpuModelsTest, MatchesInterpreter) {
  if (std::getenv("JITD_SLOW_TESTS") == nullptr) {
    GTEST_SKIP() << "set JITD_SLOW_TESTS=1 to run the models on the interpreter too (minutes)";
  }
  auto module = LoadModel(GetParam());
  ASSERT_NE(module, nullptr);
  // The cpu side as the daemon compiles it: the device's pass pipeline
  // (canonicalize folds BERT's weight transposes into its dot_generals, ...)
  // then codegen, on its own copy; the interpreter runs the program as
  // written.
  auto cpu_module = LoadModel(GetParam());
  ASSERT_NE(cpu_module, nullptr);
  auto cpu_exe = devices::CompileProgram(Cpu(), cpu_module);
  ASSERT_TRUE(cpu_exe.ok()) << cpu_exe.status().message();
  devices::InterpreterDevice interpreter;
  auto ref_exe = interpreter.Compile(module);
  ASSERT_TRUE(ref_exe.ok());
  const auto args = RandomArgs(**cpu_exe);
  devices::ExecuteOptions options;
  options.resource_fill_seed = 3;
  // ResNet-50's elided weights (the only dense_resource constants of the
  // three) filled as weights could be: batch-norm variances positive,
  // kernels scaled by fan-in, so the output is finite and well scaled.
  options.resource_fill = eval::RandomFill::kWeights;
  auto got = (*cpu_exe)->Execute(args, options);
  ASSERT_TRUE(got.ok()) << got.status().message();
  auto want = (*ref_exe)->Execute(args, options);
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_EQ(got->size(), want->size());
  for (size_t r = 0; r < got->size(); ++r) {
    const ir::Literal& a = (*got)[r].literal();
    const ir::Literal& b = (*want)[r].literal();
    ASSERT_EQ(a.type(), b.type());
    double max_ref = 0, max_diff = 0;
    int64_t nan_ref = 0;
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (!ir::IsFloat(a.dtype())) {
        ASSERT_EQ(a.GetBits(i), b.GetBits(i)) << "result " << r << " element " << i;
        continue;
      }
      const double x = a.GetDouble(i), y = b.GetDouble(i);
      if (std::isnan(y)) {
        ++nan_ref;
        EXPECT_TRUE(std::isnan(x)) << "result " << r << " element " << i;
        continue;
      }
      max_ref = std::max(max_ref, std::fabs(y));
      max_diff = std::max(max_diff, std::fabs(x - y));
    }
    std::printf("%s result %zu: max |cpu - interpreter| = %g, max |interpreter| = %g, "
                "%lld of %lld NaN in the interpreter's result\n",
                GetParam(), r, max_diff, max_ref, static_cast<long long>(nan_ref),
                static_cast<long long>(a.num_elements()));
    EXPECT_LE(max_diff, 1e-3 * max_ref) << "result " << r;
    // A NaN or all-zero reference would make the comparison vacuous.
    EXPECT_EQ(nan_ref, 0) << "result " << r;
    EXPECT_GT(max_ref, 0) << "result " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CpuModelsTest,
                         ::testing::Values("searchless_chess_9m", "pt_bert", "jax_resnet_50"));

}  // namespace
}  // namespace jitd
