#pragma once
// Work split for DRAM-bound streams (the decode GEMV): [0, n_steps) is cut
// into one contiguous share per thread, each thread claims its own share's
// steps in order and then takes what is left of the other shares. A thread
// thus reads one contiguous stream, which its prefetches run ahead in, and
// the threads still finish within about one step of each other when one is
// slower. Dynamic chunks dealt round-robin (ThreadPool::run_chunks) restart
// every thread's stream at every chunk; a static split leaves the faster
// thread idle for the difference.
#include <atomic>
#include <cstdint>
#include <memory>

namespace stride {

class OwnedSteps {
 public:
  // Before a dispatch, on the thread that starts it: n_steps steps over
  // n_shares shares (the dispatch's thread indices).
  void reset(int64_t n_steps, int n_shares);

  // The next step for the thread of share `share`: its own share's next
  // step, else one from the other shares (from share + 1 on); -1 when none is
  // left. Every step in [0, n_steps) is handed out exactly once.
  int64_t claim(int share);

  int shares() const { return n_shares_; }

 private:
  struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<Share[]> shares_;  // [capacity_]
  int capacity_ = 0;
  int n_shares_ = 0;
};

}  // namespace stride
