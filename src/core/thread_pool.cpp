#include "core/thread_pool.h"

#include <algorithm>
#include <immintrin.h>

namespace stride {

namespace {
constexpr int kSpinIterations = 20000;  // tens to hundreds of microseconds
}

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  const int cores = (int)std::max(1u, std::thread::hardware_concurrency());
  spin_iterations_ = n_threads_ <= cores ? kSpinIterations : 0;
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  job_ = &fn;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load() > 0) cv_.notify_all();
  fn(0, n_threads_);
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < spin_iterations_) {
      _mm_pause();
    } else {
      std::this_thread::yield();
    }
  }
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int chunks = (int)std::min<int64_t>(n_threads_, max_chunks);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  run([&](int ti, int) {
    if (ti >= chunks) return;
    const int64_t begin = n * ti / chunks;
    const int64_t end = n * (ti + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    uint64_t gen;
    while ((gen = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < spin_iterations_) {
        _mm_pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
      spins = 0;
    }
    seen = gen;
    if (stop_.load()) return;
    (*job_)(index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace stride
