// CpuRelax: one polite step of a spin-wait (x86 PAUSE, Arm YIELD): lets the
// sibling hyperthread run and saves power while a thread polls shared memory.
#ifndef JITD_BASE_CPU_RELAX_H_
#define JITD_BASE_CPU_RELAX_H_

namespace jitd {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace jitd

#endif  // JITD_BASE_CPU_RELAX_H_
