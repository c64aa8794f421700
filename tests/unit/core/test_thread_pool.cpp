// ThreadPool: every chunk runs exactly once, whatever the thread count and
// however the claims race (the caller revokes posts that workers miss).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
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

// A worker index names one thread for the whole dispatch: never two at once
// (so its scratch is that thread's alone), always in [0, size()), and 0 is
// the caller.
TEST(ThreadPool, WorkerIndexNamesOneThreadPerDispatch) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int iter = 0; iter < 300; ++iter) {
      std::vector<std::thread::id> owner((size_t)threads);
      std::vector<std::atomic<int>> busy((size_t)threads);
      std::atomic<bool> ok{true};
      pool.run_chunks(1 + iter % 13, [&](int, int, int worker) {
        if (worker < 0 || worker >= threads || busy[(size_t)worker].fetch_add(1) != 0) {
          ok = false;
          return;
        }
        std::thread::id& id = owner[(size_t)worker];
        if (id == std::thread::id()) id = std::this_thread::get_id();
        if (id != std::this_thread::get_id()) ok = false;
        busy[(size_t)worker].fetch_sub(1);
      });
      ASSERT_TRUE(ok.load()) << threads << " threads, iteration " << iter;
      if (owner[0] != std::thread::id()) {
        ASSERT_EQ(owner[0], std::this_thread::get_id());
      }
    }
  }
}

// Each worker's scratch keeps one object per type across dispatches.
TEST(ThreadPool, ScratchIsPerWorkerAndReused) {
  struct Counter {
    int n = 0;
  };
  struct Other {
    std::vector<float> v;
  };
  ThreadPool pool(2);
  for (int iter = 0; iter < 50; ++iter) {
    pool.run_chunks(8, [&](int, int, int worker) { ++pool.scratch(worker).get<Counter>().n; });
  }
  EXPECT_EQ(pool.scratch(0).get<Counter>().n + pool.scratch(1).get<Counter>().n, 400);
  pool.scratch(0).get<Other>().v.assign(3, 1.0f);
  EXPECT_EQ(pool.scratch(0).get<Other>().v.size(), 3u);
  EXPECT_TRUE(pool.scratch(1).get<Other>().v.empty());
}

}  // namespace
}  // namespace stride
