#include "devices/cpu/runtime/blas_core.h"

#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <string_view>

extern "C" char* openblas_get_corename(void);
extern "C" void openblas_set_num_threads(int num_threads);

namespace jitd::cpu {

std::string BlasCoreName() {
  const char* name = openblas_get_corename();
  return name ? std::string(name) : std::string();
}

std::optional<std::string> BetterBlasCore() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;
  // The cores OpenBLAS's dynamic x86-64 build falls back to for a CPU it
  // does not know; anything else was a deliberate choice.
  constexpr std::array<std::string_view, 6> kGeneric = {"Prescott", "Core2", "Penryn",
                                                        "Dunnington", "Nehalem", "Atom"};
  const std::string current = BlasCoreName();
  bool generic = false;
  for (std::string_view g : kGeneric) generic |= std::string_view(current) == g;
  if (!generic) return std::nullopt;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
    return std::string("SkylakeX");
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return std::string("Haswell");
  }
#endif
  return std::nullopt;
}

void RestartWithBetterBlasCore(char** argv) {
  const std::optional<std::string> core = BetterBlasCore();
  if (!core) return;
  if (::setenv("OPENBLAS_CORETYPE", core->c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // The exec failed: go on as we are (the variable stays set, so a child
  // jitd started from here does not try again).
}

namespace {
std::atomic<int> library_threads{0};
}  // namespace

int LibraryThreads() { return library_threads.load(std::memory_order_relaxed); }

void SetBlasThreads(int threads) {
  if (threads < 1) return;
  library_threads.store(threads, std::memory_order_relaxed);
  if (std::getenv("OPENBLAS_NUM_THREADS") != nullptr || std::getenv("OMP_NUM_THREADS") != nullptr) {
    return;
  }
  openblas_set_num_threads(threads);
}

}  // namespace jitd::cpu
