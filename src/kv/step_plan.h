#pragma once
// One engine step, planned on the host before any kernel runs
// (KvManager::prepare): for every sequence of the batch, the positions its
// new tokens take and, per layer, the pages each query block reads (per kv
// head for top-k) and the kernel's work partition (attention/work_partition.h,
// a fixed split that does not depend on the thread count). Besides the
// caller's SequenceSteps it references, plain data: page ids, positions and
// counts, nothing that points into the manager, so a device backend could
// copy it as it is.
//
// A top-k layer's lists depend on that layer's queries, which exist only
// mid-forward; prepare() leaves them to KvManager::select(). With a hot set
// it reserves (spare_pages) every pool page the restores can take beyond
// what the layer's own moves free, bounded from the policy and shapes
// (TopkHotSet::spare_bound): a step either fails in prepare() or its
// selections find their pages.
#include <cstdint>
#include <span>
#include <vector>

#include "attention/plan.h"

namespace stride {

class KvManager;

// One sequence's share of a step, end to end: the KV manager plans and
// commits it (prepare, commit), the model computes it (forward_batch).
struct SequenceStep {
  int32_t seq = -1;
  // [n] the new tokens' ids: the model embeds them and commit() keys full
  // pages in the prefix cache by them (KV-only callers may pass null: the
  // sequence then caches no more pages).
  const int32_t* tokens = nullptr;
  int n = 0;
  bool all_logits = false;  // logits for every token, else only the last
  float* logits = nullptr;  // [n, n_vocab] or [n_vocab]; null: none wanted
  // [n, n_embd]: every token's final hidden state (after the output norm,
  // what the output head reads), for embeddings; null: none wanted.
  float* hidden = nullptr;
  // The step's tail may be dropped at commit (speculative verification):
  // write() keeps what commit() needs to roll a top-k page summary back.
  bool may_truncate = false;
};

struct LayerStepPlan {
  AttentionPlan pages;
  bool needs_selection = false;     // top-k: select() fills `pages` from the queries
  std::vector<int32_t> spare_pages;  // pool pages reserved for select()'s restores
  int64_t pages_present = 0;        // pages the sequence held on the layer x query blocks
  double seconds = 0;               // attention wall time, set by whoever runs the layer
  // Rollback of a may_truncate step on a top-k layer (step_rollback.h):
  std::vector<float> summary_before;  // [n_kv_heads, 2, head_dim_k] the first page's summary before the step
  std::vector<float> new_keys;        // [n, n_kv_heads, head_dim_k] the keys write() stored
};

// What prepare() derived for steps[i] of the plan.
struct SeqStepPlan {
  int64_t pos0 = 0;  // the step's n new tokens sit at [pos0, pos0 + n)
  // Tokens commit() keeps, a prefix of the n (-1: all). Only a
  // may_truncate step may keep fewer; the rest are rolled back as if they
  // had never been sent (step_rollback.h).
  int n_keep = -1;
  std::vector<LayerStepPlan> layers;  // [n_layer]
};

// Move-only; reserved pages that select() did not use go back to the pool
// when the plan is committed or destroyed. The manager must outlive it.
class StepPlan {
 public:
  StepPlan() = default;
  StepPlan(StepPlan&& o) noexcept;
  StepPlan& operator=(StepPlan&& o) noexcept;
  StepPlan(const StepPlan&) = delete;
  StepPlan& operator=(const StepPlan&) = delete;
  ~StepPlan();

  // The batch prepare() planned, the caller's: it stays alive and unchanged
  // until the plan is committed.
  std::span<const SequenceStep> steps;
  std::vector<SeqStepPlan> seqs;  // [steps.size()]

 private:
  friend class KvManager;
  void release_spares();
  KvManager* owner_ = nullptr;
};

}  // namespace stride
