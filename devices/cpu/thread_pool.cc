#include "devices/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>

namespace jitd::cpu {

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t min_chunk,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int64_t threads = std::min<int64_t>(num_threads_, max_chunks);
  if (threads <= 1) {
    fn(0, n);
    return;
  }
  // Chunks are claimed from a counter, several per thread: a helper that is
  // descheduled (a loaded machine) holds up one small chunk, not a 1/T share.
  struct Shared {
    std::atomic<int64_t> next{0};
    int64_t chunks = 0, n = 0;
    const std::function<void(int64_t, int64_t)>* fn = nullptr;
    std::mutex mu;
    std::condition_variable cv;
    int64_t done = 0;  // chunks finished, under mu
  };
  auto shared = std::make_shared<Shared>();
  shared->chunks = std::min<int64_t>(max_chunks, threads * kChunksPerThread);
  shared->n = n;
  shared->fn = &fn;
  // Runs chunks until none is left. A helper that starts after the last
  // chunk was claimed touches only `shared` (fn may be gone by then).
  auto work = [](Shared& s) {
    int64_t finished = 0;
    for (int64_t c; (c = s.next.fetch_add(1)) < s.chunks; ++finished) {
      (*s.fn)(s.n * c / s.chunks, s.n * (c + 1) / s.chunks);
    }
    if (finished == 0) return;
    std::lock_guard<std::mutex> lock(s.mu);
    s.done += finished;
    if (s.done == s.chunks) s.cv.notify_all();
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t t = 1; t < threads; ++t) tasks_.emplace_back([shared, work] { work(*shared); });
  }
  cv_.notify_all();
  work(*shared);
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->done == shared->chunks; });
}

}  // namespace jitd::cpu
