#pragma once
// A persistent pool: threads are created once and reused for every op, so no
// thread is created per token. Work is handed out as chunks that threads claim
// from a shared counter, and the caller takes back any chunk whose worker has
// not started: on a shared machine the OS often deschedules a worker, and a
// static split would make every op wait for it (measured: 2-thread decode
// 5x slower than 1 thread under load with the old static barrier).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/worker_scratch.h"

namespace stride {

class ThreadPool {
 public:
  // n_threads includes the calling thread; 0 means hardware concurrency.
  explicit ThreadPool(int n_threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index, n_threads) once for every index in [0, n_threads)
  // and returns when all calls have finished; indices may share a thread
  // (one after the other) when a worker is slow to wake. Not re-entrant.
  void run(const std::function<void(int, int)>& fn) { run_chunks(n_threads_, fn); }

  // Calls fn(chunk, n_chunks, worker) once for every chunk in [0, n_chunks),
  // claimed dynamically by whichever threads are running. More chunks than
  // threads balance the load when a thread is preempted. worker, in
  // [0, size()), names the thread that runs the call (0: the caller) for the
  // whole dispatch: the index of its scratch. Not re-entrant.
  void run_chunks(int n_chunks, const std::function<void(int, int, int)>& fn);
  // The same without the worker index.
  void run_chunks(int n_chunks, const std::function<void(int, int)>& fn) {
    run_chunks(n_chunks, [&fn](int c, int nc, int) { fn(c, nc); });
  }

  // The scratch of worker index `worker` (worker_scratch.h); the caller's,
  // outside a dispatch, is worker 0's.
  WorkerScratch& scratch(int worker) { return scratch_[worker]; }

  // Splits [0, n) into about one contiguous chunk per thread (each at least
  // `grain` long) and calls fn(begin, end) for each non-empty chunk.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  // Per-worker handshake: the caller posts (Idle -> Posted); the worker claims
  // (Posted -> Running) and finishes (-> Idle); the caller revokes a post the
  // worker has not claimed (Posted -> Idle), so it never waits for a sleeper.
  enum : int { kIdle = 0, kPosted = 1, kRunning = 2 };
  struct alignas(64) Slot {
    std::atomic<int> state{kIdle};
  };

  void worker_loop(int index);
  void drain(int worker);

  int n_threads_;
  // Spinning only pays when every thread has a core of its own; with more
  // threads than cores, spinners steal the cores the others need.
  int spin_iterations_ = 0;
  std::vector<std::thread> workers_;
  std::unique_ptr<Slot[]> slots_;  // [n_threads - 1]
  std::unique_ptr<WorkerScratch[]> scratch_;  // [n_threads]
  const std::function<void(int, int, int)>* job_ = nullptr;
  int job_chunks_ = 0;
  alignas(64) std::atomic<int> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace stride
