#include "model/batch_attention.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace stride {

namespace {

// Attention work of a step, in query-key pairs before the policy prunes any.
int64_t attend_cost(const KVCache& kv, const SequenceStep& s) {
  return (int64_t)s.n * (kv.length(s.seq) + s.n);
}

// A pool of `size` threads that runs on the calling worker; one per thread,
// kept, since every layer of every step needs it.
ThreadPool& local_inline_pool(int size) {
  thread_local std::unique_ptr<ThreadPool> p;
  if (!p || p->size() != size) p = ThreadPool::inline_pool(size);
  return *p;
}

}  // namespace

void attend_batch(KVCache& kv, int layer, const SequenceStep* steps, int n_steps,
                  const AttentionParams& ap, const BatchAttentionIO& io, ThreadPool& pool) {
  std::vector<int64_t> row(n_steps);  // first token row of each step
  for (int i = 0, r = 0; i < n_steps; r += steps[i].n, ++i) row[i] = r;
  auto write = [&](int i) {
    kv.write(layer, steps[i].seq, io.k + row[i] * io.k_row, io.v + row[i] * io.v_row, steps[i].n);
  };
  auto attend = [&](int i, ThreadPool& threads) {
    kv.attend(layer, steps[i].seq, io.q + row[i] * io.q_row, steps[i].n, ap,
              io.out + row[i] * io.out_row, threads);
  };
  if (n_steps < 2 || pool.size() < 2 || !kv.concurrent_attend_safe()) {
    for (int i = 0; i < n_steps; ++i) {
      write(i);
      attend(i, pool);
    }
    return;
  }

  // All writes first, serial like every other cache mutation; afterwards each
  // attend only reads (its own sequence's pages).
  for (int i = 0; i < n_steps; ++i) write(i);

  // A step holding more than its thread's share of the work would leave the
  // others idle as one task: it runs first, split over the whole pool.
  std::vector<int64_t> cost(n_steps);
  int64_t total = 0;
  for (int i = 0; i < n_steps; ++i) total += cost[i] = attend_cost(kv, steps[i]);
  std::vector<int> group;  // steps run side by side
  group.reserve(n_steps);
  for (int i = 0; i < n_steps; ++i) {
    if (cost[i] * pool.size() > total) {
      attend(i, pool);
    } else {
      group.push_back(i);
    }
  }
  if (group.empty()) return;
  if (group.size() == 1) {
    attend(group[0], pool);
    return;
  }
  // Largest first, claimed dynamically: the tail of the step stays short.
  std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return cost[a] > cost[b]; });
  const int size = pool.size();
  pool.run_chunks((int)group.size(), [&](int c, int) { attend(group[c], local_inline_pool(size)); });
}

}  // namespace stride
