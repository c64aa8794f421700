#include "core/thread_pool.h"

#include <algorithm>
#include <immintrin.h>

namespace stride {

namespace {
// A few tens of microseconds: covers the serial gaps between the ops of one
// decode step without burning a core the machine's other processes need.
constexpr int kSpinIterations = 4000;
}

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = (int)std::max(1u, std::thread::hardware_concurrency());
  n_threads_ = n_threads;
  const int cores = (int)std::max(1u, std::thread::hardware_concurrency());
  spin_iterations_ = n_threads_ <= cores ? kSpinIterations : 0;
  slots_ = std::make_unique<Slot[]>((size_t)std::max(1, n_threads_ - 1));
  scratch_ = std::make_unique<WorkerScratch[]>((size_t)n_threads_);
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i - 1); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(int worker) {
  for (int c; (c = next_.fetch_add(1, std::memory_order_relaxed)) < job_chunks_;) (*job_)(c, job_chunks_, worker);
}

void ThreadPool::run_chunks(int n_chunks, const std::function<void(int, int, int)>& fn) {
  if (n_chunks <= 0) return;
  if (n_threads_ == 1 || n_chunks == 1) {
    for (int c = 0; c < n_chunks; ++c) fn(c, n_chunks, 0);
    return;
  }
  job_ = &fn;
  job_chunks_ = n_chunks;
  next_.store(0, std::memory_order_relaxed);
  const int helpers = std::min(n_threads_ - 1, n_chunks - 1);
  // seq_cst store/load pairs with the worker's sleepers_ increment and state
  // check, so a worker going to sleep either sees the post or gets notified.
  for (int i = 0; i < helpers; ++i) slots_[i].state.store(kPosted);
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }
  drain(0);
  // Every chunk is claimed: revoke posts nobody picked up, wait for the rest.
  for (int i = 0; i < helpers; ++i) {
    int expected = kPosted;
    if (slots_[i].state.compare_exchange_strong(expected, kIdle)) continue;
    for (int spins = 0; slots_[i].state.load(std::memory_order_acquire) != kIdle; ++spins) {
      if (spins < spin_iterations_) {
        _mm_pause();
      } else {
        std::this_thread::yield();
      }
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
  run_chunks(chunks, [&](int c, int nc) {
    const int64_t begin = n * c / nc;
    const int64_t end = n * (c + 1) / nc;
    if (begin < end) fn(begin, end);
  });
}

void ThreadPool::worker_loop(int index) {
  Slot& slot = slots_[index];
  for (;;) {
    int spins = 0;
    while (slot.state.load(std::memory_order_acquire) != kPosted) {
      if (stop_.load(std::memory_order_acquire)) return;
      if (++spins < spin_iterations_) {
        _mm_pause();
        continue;
      }
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lock, [&] { return slot.state.load() == kPosted || stop_.load(); });
      sleepers_.fetch_sub(1);
      spins = 0;
    }
    int expected = kPosted;
    if (!slot.state.compare_exchange_strong(expected, kRunning)) continue;  // revoked
    drain(index + 1);
    slot.state.store(kIdle, std::memory_order_release);
  }
}

}  // namespace stride
