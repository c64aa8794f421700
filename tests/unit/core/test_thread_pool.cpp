// ThreadPool: every chunk runs exactly once, whatever the thread count and
// however the claims race (the caller revokes posts that workers miss).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "core/thread_pool.h"

namespace stride {
namespace {

TEST(ThreadPool, EveryChunkRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int iter = 0; iter < 300; ++iter) {
      const int n = 1 + iter % 23;
      std::vector<std::atomic<int>> hits(n);
      pool.run_chunks(n, [&](int c, int nc) {
        ASSERT_EQ(nc, n);
        hits[c].fetch_add(1);
      });
      for (int c = 0; c < n; ++c) ASSERT_EQ(hits[c].load(), 1) << "threads " << threads << " chunk " << c;
    }
  }
}

TEST(ThreadPool, RunCallsEveryThreadIndexOnce) {
  ThreadPool pool(3);
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<std::atomic<int>> hits(3);
    pool.run([&](int ti, int nt) {
      ASSERT_EQ(nt, 3);
      hits[ti].fetch_add(1);
    });
    for (int i = 0; i < 3; ++i) ASSERT_EQ(hits[i].load(), 1);
  }
}

TEST(ThreadPool, ParallelForCoversTheRangeOnce) {
  ThreadPool pool(2);
  for (int64_t n : {1, 2, 7, 100, 1001}) {
    std::vector<std::atomic<int>> hits((size_t)n);
    pool.parallel_for(n, 3, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[(size_t)i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[(size_t)i].load(), 1) << n << " " << i;
  }
}

// The sum over chunks matches the serial sum: no chunk is lost when the caller
// finishes first and revokes a worker's post.
TEST(ThreadPool, ResultsMatchSerialUnderManyShortJobs) {
  ThreadPool pool(2);
  std::vector<int64_t> part(16);
  for (int iter = 0; iter < 2000; ++iter) {
    pool.run_chunks(16, [&](int c, int) { part[(size_t)c] = (int64_t)c * iter; });
    int64_t sum = 0;
    for (int64_t v : part) sum += v;
    ASSERT_EQ(sum, (int64_t)120 * iter);
  }
}

}  // namespace
}  // namespace stride
