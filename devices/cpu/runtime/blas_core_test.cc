#include "devices/cpu/runtime/blas_core.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace jitd::cpu {
namespace {

TEST(BlasCoreTest, NamesTheCoreAndNeverSecondGuessesAnExplicitChoice) {
  EXPECT_FALSE(BlasCoreName().empty());
  const char* before = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = before ? before : "";
  ::setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  EXPECT_EQ(BetterBlasCore(), std::nullopt);
  if (before) {
    ::setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  } else {
    ::unsetenv("OPENBLAS_CORETYPE");
  }
}

TEST(BlasCoreTest, AGenericCoreOnAnAvx512MachineAsksForSkylakeX) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) GTEST_SKIP() << "OPENBLAS_CORETYPE is set";
  const std::string core = BlasCoreName();
  const std::optional<std::string> better = BetterBlasCore();
  if (core != "Prescott") {
    // OpenBLAS recognized this CPU (or a generic core other than the one
    // seen here): only generic cores get a suggestion.
    if (better) EXPECT_TRUE(*better == "SkylakeX" || *better == "Haswell") << *better;
    return;
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    EXPECT_EQ(better, "SkylakeX");
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_EQ(better, "Haswell");
  } else {
    EXPECT_EQ(better, std::nullopt);
  }
}

}  // namespace
}  // namespace jitd::cpu
