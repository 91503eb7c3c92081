// A fixed pool of worker threads for splitting large loops, shared by every
// executable of a CpuDevice (XLA:CPU's intra-op pool).
//
// Thread safety: ParallelFor may be called from any number of threads at
// once; each call blocks until all its chunks ran. The pool lives as long as
// its owner (the device) and joins its workers on destruction.
#ifndef JITD_DEVICES_CPU_THREAD_POOL_H_
#define JITD_DEVICES_CPU_THREAD_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace jitd::cpu {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means no workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Splits [0, n) into chunks of at least `min_chunk` items (up to
  // kChunksPerThread per thread) and runs fn(begin, end) on each, on the
  // calling thread and up to num_threads() - 1 workers, which claim chunks
  // as they come free. Returns when every chunk ran. Callers must not depend
  // on where chunks begin and end.
  void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

  static constexpr int64_t kChunksPerThread = 8;

 private:
  void WorkerLoop();

  const int num_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace jitd::cpu

#endif  // JITD_DEVICES_CPU_THREAD_POOL_H_
