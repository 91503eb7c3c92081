// What the cpu runtime's oneDNN calls share (dnnl_convolution.cc,
// dnnl_matmul.cc): the engine, the calling thread's OpenMP team held at one
// thread, and per-thread scratch buffers.
#ifndef JITD_DEVICES_CPU_RUNTIME_INTERNAL_DNNL_SUPPORT_H_
#define JITD_DEVICES_CPU_RUNTIME_INTERNAL_DNNL_SUPPORT_H_

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>

namespace jitd::cpu::internal {

// The process's oneDNN cpu engine (created on first use, never destroyed).
const dnnl::engine& DnnlEngine();

// oneDNN runs single-threaded on whichever thread calls it: the calling
// thread's OpenMP team (the ICV is per thread) is kept at one thread, so
// libgomp never starts a team. Parallelism comes from the device's own
// pool (the callers cut work into slices). An OpenMP team of N was tried
// first: its idle threads spin for ~300k iterations after each parallel
// region and its master spins at barriers while a woken worker waits for a
// core, so on a shared 2-vCPU VM under load ResNet-50 ran 6-10x slower on 2
// threads than on 1 (OMP_WAIT_POLICY=passive avoided that, but is read only
// when libgomp loads). The OpenMP entry points are looked up at run time:
// libdnnl brings libgomp, and a oneDNN on another runtime has none.
// While it lives, the calling thread's OpenMP team size is 1; the thread's
// previous setting is restored after (an application embedding jitd may use
// OpenMP on the same thread).
class SingleThreadedOpenMp {
 public:
  SingleThreadedOpenMp();
  ~SingleThreadedOpenMp();
  SingleThreadedOpenMp(const SingleThreadedOpenMp&) = delete;
  SingleThreadedOpenMp& operator=(const SingleThreadedOpenMp&) = delete;

 private:
  int previous_ = 0;
};

// Per-thread, per-purpose scratch storage (64-byte aligned, grown as
// needed, kept between runs so its pages are touched once). Throws
// std::bad_alloc when it cannot grow.
enum class DnnlSlot { kConvScratchpad, kConvSrc, kConvWeights, kConvDst, kMatmulScratchpad, kCount };
void* DnnlThreadBuffer(DnnlSlot slot, size_t bytes);

}  // namespace jitd::cpu::internal

#endif  // JITD_DEVICES_CPU_RUNTIME_INTERNAL_DNNL_SUPPORT_H_
