#include "model/batch_attention.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "attention/attention_kernel.h"

namespace stride {

namespace {

// Attention work of a sequence's step, in query-key pairs before the policy prunes any.
int64_t attend_cost(const SequenceStep& step, const SeqStepPlan& sp) { return (int64_t)step.n * (sp.pos0 + step.n); }

// A worker alone, as a pool (kept in the worker's scratch, with its own
// scratch): the kernel's work partition is a rule of the plan, not of the
// pool size (attention_kernel.cpp), so a sequence run on one worker gets the
// bits it gets over the whole pool.
struct SoloPool {
  ThreadPool pool{1};
};

// The one sequence of a sharded step: its keys and values join its shard,
// then every shard's keys are attended through `sharded`.
Status attend_shard(StepKv& kv, StepPlan& plan, int layer, const AttentionParams& ap, const BatchAttentionIO& io,
                    ThreadPool& pool, ShardedAttention& sharded) {
  if (plan.seqs.size() != 1) return InvalidArgument("sharded attention: a step of exactly one sequence");
  const auto t0 = std::chrono::steady_clock::now();
  STRIDE_RETURN_IF_ERROR(kv.write(plan, 0, layer, io.k, io.v));
  STRIDE_RETURN_IF_ERROR(sharded.keys_written(layer, ap, pool));
  STRIDE_RETURN_IF_ERROR(sharded.attend(layer, ap, io.q, 0, plan.steps[0].n, io.out, pool));
  plan.seqs[0].layers[(size_t)layer].seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

}  // namespace

Status attend_batch(StepKv& kv, StepPlan& plan, int layer, const AttentionParams& ap,
                    const BatchAttentionIO& io, ThreadPool& pool, ShardedAttention* sharded) {
  const int n_seqs = (int)plan.seqs.size();
  if (sharded) return attend_shard(kv, plan, layer, ap, io, pool, *sharded);
  const PolicySpec& policy = kv.layer_policy(layer);
  std::vector<int64_t> row(n_seqs);  // first token row of each sequence
  for (int i = 0, r = 0; i < n_seqs; r += plan.steps[(size_t)i].n, ++i) row[i] = r;
  // Writes, and selections that move pages, are serial like every other KV
  // mutation; afterwards each kernel call only reads its own sequence's pages.
  const bool serial_select = kv.select_is_serial(layer);
  const float scale = attention_scale(ap, kv.head_dim_k());
  for (int i = 0; i < n_seqs; ++i) {
    STRIDE_RETURN_IF_ERROR(kv.write(plan, i, layer, io.k + row[i] * io.k_row, io.v + row[i] * io.v_row));
    if (serial_select)
      STRIDE_RETURN_IF_ERROR(kv.select(plan, i, layer, io.q + row[i] * io.q_row, ap.n_head, scale, pool));
  }
  std::vector<Status> failures(n_seqs);
  auto attend = [&](int i, ThreadPool& threads) {
    const auto t0 = std::chrono::steady_clock::now();
    const float* q = io.q + row[i] * io.q_row;
    // A no-op once selected. The calling thread is worker 0 of `threads`.
    failures[i] = kv.select(plan, i, layer, q, ap.n_head, scale, threads);
    LayerStepPlan& lp = plan.seqs[(size_t)i].layers[(size_t)layer];
    if (failures[i].ok()) failures[i] = attention_paged(kv.pool(), lp.pages, policy, ap, q, io.out + row[i] * io.out_row, threads);
    lp.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto first_failure = [&]() {
    for (const Status& st : failures)
      if (!st.ok()) return st;
    return Status::Ok();
  };
  if (n_seqs < 2 || pool.size() < 2) {
    for (int i = 0; i < n_seqs; ++i) attend(i, pool);
    return first_failure();
  }

  // A sequence holding more than its thread's share of the work would leave
  // the others idle as one task: it runs first, split over the whole pool.
  std::vector<int64_t> cost(n_seqs);
  int64_t total = 0;
  for (int i = 0; i < n_seqs; ++i) total += cost[i] = attend_cost(plan.steps[(size_t)i], plan.seqs[(size_t)i]);
  std::vector<int> group;  // sequences run side by side
  group.reserve(n_seqs);
  for (int i = 0; i < n_seqs; ++i) {
    if (cost[i] * pool.size() > total) {
      attend(i, pool);
    } else {
      group.push_back(i);
    }
  }
  if (group.size() == 1) attend(group[0], pool);
  if (group.size() < 2) return first_failure();
  // Largest first, claimed dynamically: the tail of the step stays short.
  std::stable_sort(group.begin(), group.end(), [&](int a, int b) { return cost[a] > cost[b]; });
  pool.run_chunks((int)group.size(), [&](int c, int, int worker) {
    attend(group[c], pool.scratch(worker).get<SoloPool>().pool);
  });
  return first_failure();
}

}  // namespace stride
