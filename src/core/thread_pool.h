#pragma once
// A persistent pool: threads are created once and reused for every op, so no
// thread is created per token. Workers spin briefly between ops (decode issues
// hundreds of small ops per token) and then sleep on a condition variable.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace stride {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 0 means hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(thread_index, n_threads) on every thread (caller included) and
  // returns when all have finished. Not re-entrant.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into about one contiguous chunk per thread (each at least
  // `grain` long) and calls fn(begin, end) for each non-empty chunk.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);

  int n_threads_;
  // Spinning only pays when every thread has a core of its own; with more
  // threads than cores, spinners steal the cores the others need.
  int spin_iterations_ = 0;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace stride
