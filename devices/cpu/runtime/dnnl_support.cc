#include "devices/cpu/runtime/internal/dnnl_support.h"

#include <dlfcn.h>

#include <cstdlib>
#include <new>

namespace jitd::cpu::internal {
namespace {

using SetFn = void (*)(int);
using GetFn = int (*)();
const SetFn omp_set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
const GetFn omp_get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));

}  // namespace

const dnnl::engine& DnnlEngine() {
  static const dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

SingleThreadedOpenMp::SingleThreadedOpenMp() {
  if (omp_set == nullptr || omp_get == nullptr) return;
  previous_ = omp_get();
  if (previous_ != 1) omp_set(1);
}

SingleThreadedOpenMp::~SingleThreadedOpenMp() {
  if (previous_ > 1) omp_set(previous_);
}

void* DnnlThreadBuffer(DnnlSlot slot, size_t bytes) {
  struct Buffer {
    void* data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[static_cast<int>(DnnlSlot::kCount)];
  Buffer& b = buffers[static_cast<int>(slot)];
  if (b.size < bytes) {
    std::free(b.data);
    const size_t rounded = (bytes + 63) / 64 * 64;
    b.data = std::aligned_alloc(64, rounded);
    b.size = b.data ? rounded : 0;
    if (!b.data) throw std::bad_alloc();
  }
  return b.data;
}

}  // namespace jitd::cpu::internal
