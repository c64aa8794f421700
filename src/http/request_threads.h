#pragma once
// The threads that run request handlers. A handler blocks (it waits on the
// scheduler's events), so each request in flight has a thread; their number is
// capped, finished ones are joined as new ones start, and join_all() waits for
// every one, so nothing runs after the server is gone.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace stride::server {

class RequestThreads {
 public:
  explicit RequestThreads(int max_threads) : max_threads_(max_threads) {}
  ~RequestThreads() { join_all(); }
  RequestThreads(const RequestThreads&) = delete;
  RequestThreads& operator=(const RequestThreads&) = delete;

  // Runs `fn` on a new thread; false (and `fn` is not run) at the cap.
  bool spawn(std::function<void()> fn);
  // Waits for every running thread; returns false if some still run after `timeout_ms`.
  bool wait_idle(int timeout_ms);
  void join_all();
  int running() const;

 private:
  void reap_locked(std::vector<std::thread>& out);

  const int max_threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::thread> threads_;
  std::vector<uint64_t> finished_;
};

}  // namespace stride::server
