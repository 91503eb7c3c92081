// OpenBLAS chooses its kernels once, when the library loads, from the CPU
// model it recognizes. A CPU newer than the library (this machine's KVM
// "family 6 model 207") is not recognized and gets the generic SSE3
// "Prescott" kernels, about half the speed of the AVX-512 ones on the same
// core. The only remedy without another BLAS is the OPENBLAS_CORETYPE
// variable, read at load time — so a process that wants the right kernels
// sets it and starts again (RestartWithBetterBlasCore, which `jitd` calls
// first thing in main).
#ifndef JITD_DEVICES_CPU_RUNTIME_BLAS_CORE_H_
#define JITD_DEVICES_CPU_RUNTIME_BLAS_CORE_H_

#include <optional>
#include <string>

namespace jitd::cpu {

// The kernels OpenBLAS is using in this process ("SkylakeX", "Prescott").
std::string BlasCoreName();

// The OPENBLAS_CORETYPE this process should have started with: "SkylakeX"
// when OpenBLAS fell back to a generic core (Prescott, Core2, Nehalem,
// Penryn, Dunnington, Atom) on a CPU with AVX-512 F/BW/DQ/VL, "Haswell" on
// one with AVX2 + FMA; nullopt when OpenBLAS chose well or
// OPENBLAS_CORETYPE is already set (by the user, or by an earlier restart).
std::optional<std::string> BetterBlasCore();

// When BetterBlasCore() has an answer: sets OPENBLAS_CORETYPE and execv's
// /proc/self/exe with `argv` (does not return on success). Returns when
// there is nothing to do or the exec failed (the process goes on with the
// kernels it has). Call before any thread is started.
void RestartWithBetterBlasCore(char** argv);

// Bounds OpenBLAS's own thread pool (process-wide) to `threads`, unless
// OPENBLAS_NUM_THREADS / OMP_NUM_THREADS says otherwise: a cpu device's
// thread count covers its GEMMs too. Also records `threads` as
// LibraryThreads() (whatever the environment says).
void SetBlasThreads(int threads);

// The thread count last given to SetBlasThreads (0: never called): the size
// of the OpenMP team of each oneDNN convolution (process-wide, like
// OpenBLAS's pool; OMP_NUM_THREADS, when set, overrides it).
int LibraryThreads();

}  // namespace jitd::cpu

#endif  // JITD_DEVICES_CPU_RUNTIME_BLAS_CORE_H_
