// OwnedSteps hands every step out exactly once, a share's own steps in order
// to its own thread first, and the others' to a thread whose share is done.
#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/owned_steps.h"

namespace stride {
namespace {

TEST(OwnedSteps, OneThreadTakesItsShareThenTheOthersInOrder) {
  OwnedSteps s;
  s.reset(10, 3);  // shares [0, 3), [3, 6), [6, 10)
  std::vector<int64_t> got;
  for (int64_t step; (step = s.claim(1)) >= 0;) got.push_back(step);
  EXPECT_EQ(got, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 0, 1, 2}));
  EXPECT_EQ(s.claim(0), -1);
  EXPECT_EQ(s.claim(2), -1);
}

TEST(OwnedSteps, FewerStepsThanSharesAndNone) {
  OwnedSteps s;
  s.reset(2, 5);  // shares 0, 2 and 3 are empty: 1 owns step 0, 4 owns step 1
  EXPECT_EQ(s.claim(0), 0);
  EXPECT_EQ(s.claim(3), 1);
  EXPECT_EQ(s.claim(4), -1);
  s.reset(0, 2);
  EXPECT_EQ(s.claim(0), -1);
  EXPECT_EQ(s.claim(1), -1);
}

TEST(OwnedSteps, ResetReusesAndGrows) {
  OwnedSteps s;
  s.reset(4, 2);
  EXPECT_EQ(s.claim(1), 2);
  s.reset(9, 4);  // more shares than before
  EXPECT_EQ(s.shares(), 4);
  EXPECT_EQ(s.claim(3), 6);
  s.reset(3, 1);
  EXPECT_EQ(s.claim(0), 0);
  EXPECT_EQ(s.claim(0), 1);
  EXPECT_EQ(s.claim(0), 2);
  EXPECT_EQ(s.claim(0), -1);
}

TEST(OwnedSteps, ConcurrentThreadsClaimEveryStepOnce) {
  for (int threads : {2, 3, 7}) {
    ThreadPool pool(threads);
    for (int64_t n_steps : {1, 5, 64, 1000}) {
      OwnedSteps s;
      s.reset(n_steps, pool.size());
      std::vector<std::atomic<int>> seen((size_t)n_steps);
      std::vector<std::vector<int64_t>> by_share((size_t)pool.size());
      pool.run_chunks(pool.size(), [&](int share, int, int) {
        for (int64_t step; (step = s.claim(share)) >= 0;) {
          seen[(size_t)step].fetch_add(1);
          by_share[(size_t)share].push_back(step);
        }
      });
      for (int64_t i = 0; i < n_steps; ++i) EXPECT_EQ(seen[(size_t)i].load(), 1) << threads << " " << n_steps << " " << i;
      // The steps of its own share that a share's thread took, it took in order.
      for (int sh = 0; sh < pool.size(); ++sh) {
        const int64_t begin = n_steps * sh / pool.size(), end = n_steps * (sh + 1) / pool.size();
        int64_t last = -1;
        for (int64_t step : by_share[(size_t)sh]) {
          if (step < begin || step >= end) continue;
          EXPECT_GT(step, last);
          last = step;
        }
      }
    }
  }
}

}  // namespace
}  // namespace stride
