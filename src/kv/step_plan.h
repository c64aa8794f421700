#pragma once
// One engine step, planned on the host before any kernel runs
// (KvManager::prepare): for every sequence of the batch, the positions its
// new tokens take and, per layer, the pages each query block reads (per kv
// head for top-k) and the kernel's work partition (attention/work_partition.h,
// a fixed split that does not depend on the thread count). Plain data: page
// ids, positions and counts, nothing that points into the manager, so a
// device backend could copy it as it is.
//
// A top-k layer's lists depend on that layer's queries, which exist only
// mid-forward; prepare() leaves them to KvManager::select(). With a hot set
// it reserves (spare_pages) every pool page the restores can take beyond
// what the layer's own moves free, bounded from the policy and shapes
// (TopkHotSet::spare_bound): a step either fails in prepare() or its
// selections find their pages.
#include <cstdint>
#include <vector>

#include "attention/plan.h"

namespace stride {

class KvManager;

// One sequence's share of a step: n_new tokens continuing seq.
struct StepRequest {
  int32_t seq = -1;
  int n_new = 0;
  // [n_new] their ids, so commit() can register full pages in the prefix
  // cache; null: this sequence caches no more pages.
  const int32_t* tokens = nullptr;
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
  std::vector<float> new_keys;        // [n_new, n_kv_heads, head_dim_k] the keys write() stored
};

struct SeqStepPlan {
  int32_t seq = -1;
  int n_new = 0;
  int64_t pos0 = 0;                 // the new tokens sit at [pos0, pos0 + n_new)
  const int32_t* tokens = nullptr;  // from the StepRequest
  bool may_truncate = false;         // from the StepRequest
  // Tokens commit() keeps, a prefix of the n_new (-1: all). Only a
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

  std::vector<SeqStepPlan> seqs;  // batch order

 private:
  friend class KvManager;
  void release_spares();
  KvManager* owner_ = nullptr;
};

}  // namespace stride
