#include "kernels/owned_steps.h"

namespace stride {

void OwnedSteps::reset(int64_t n_steps, int n_shares) {
  if (n_shares < 1) n_shares = 1;
  if (n_shares > capacity_) {
    shares_ = std::make_unique<Share[]>((size_t)n_shares);
    capacity_ = n_shares;
  }
  n_shares_ = n_shares;
  for (int i = 0; i < n_shares; ++i) {
    shares_[i].next.store(n_steps * i / n_shares, std::memory_order_relaxed);
    shares_[i].end = n_steps * (i + 1) / n_shares;
  }
}

int64_t OwnedSteps::claim(int share) {
  for (int k = 0; k < n_shares_; ++k) {
    Share& s = shares_[(share + k) % n_shares_];
    // A relaxed load first: a finished share is skipped without a write to its line.
    if (s.next.load(std::memory_order_relaxed) >= s.end) continue;
    const int64_t step = s.next.fetch_add(1, std::memory_order_relaxed);
    if (step < s.end) return step;
  }
  return -1;
}

}  // namespace stride
