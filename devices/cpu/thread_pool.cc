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
  const int64_t chunks = std::min<int64_t>(num_threads_, max_chunks);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  std::atomic<int64_t> pending{chunks - 1};
  std::mutex done_mu;
  std::condition_variable done_cv;
  auto bounds = [&](int64_t c) { return std::make_pair(n * c / chunks, n * (c + 1) / chunks); };
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t c = 1; c < chunks; ++c) {
      tasks_.emplace_back([&, c] {
        auto [b, e] = bounds(c);
        fn(b, e);
        // Decrement under the lock: the caller's frame (pending, done_mu,
        // done_cv) stays alive until it has taken the lock once more.
        std::lock_guard<std::mutex> l(done_mu);
        if (pending.fetch_sub(1) == 1) done_cv.notify_one();
      });
    }
  }
  cv_.notify_all();
  auto [b, e] = bounds(0);
  fn(b, e);
  // Help with queued work (ours or others') instead of sleeping at once.
  while (pending.load() > 0) {
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!tasks_.empty()) {
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
    }
    if (task) {
      task();
      continue;
    }
    std::unique_lock<std::mutex> l(done_mu);
    done_cv.wait(l, [&] { return pending.load() == 0; });
  }
  std::lock_guard<std::mutex> l(done_mu);  // the last worker has let go
}

}  // namespace jitd::cpu
