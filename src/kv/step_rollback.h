#pragma once
// Rolling KV state back (speculative decoding): the rejected tail of a
// verification step, cut inside commit() before anything is released or
// cached, and truncate() for a draft model's own sequence. Either way the
// state afterwards is the one a run without the cut tokens would have:
// the same length, page tables, prefix chain and top-k summaries; slots
// past the length keep stale keys that the next write overwrites and no
// plan reads (page_valid stops at the length).
#include <cstdint>

#include "core/status.h"
#include "kv/kv_config.h"
#include "kv/sequence_table.h"
#include "kv/step_plan.h"

namespace stride {

class PageManager;
class PageSummaries;
class TopkHotSet;

class StepRollback {
 public:
  // All outlive this; summaries: null without a top-k layer; hot: null without a hot set.
  StepRollback(const KvManagerConfig& cfg, PageManager& pages, PageSummaries* summaries, TopkHotSet* hot)
      : cfg_(cfg), pages_(pages), summaries_(summaries), hot_(hot) {}

  // Called by write() for the first run of a may_truncate step on a top-k
  // layer, before the summaries change: keeps in lp the first page's summary
  // (when the step starts inside a page) and every key of the step, so that
  // drop_step_tail() can rebuild the summaries from the kept keys alone.
  // The step's n tokens start at pos0; k: [n, n_kv_heads, head_dim_k].
  void stash(const KvSequence& s, int64_t pos0, int n, LayerStepPlan& lp, int layer, const float* k) const;
  // Cuts the step's tokens past the first `kept` (commit()).
  void drop_step_tail(KvSequence& s, const SeqStepPlan& sp, int kept);
  // Cuts s back to its first `length` tokens. Unsupported, with nothing
  // changed, when that cannot be exact (see KvManager::truncate).
  Status truncate(KvSequence& s, int64_t length);

 private:
  void drop_pages_from(KvSequence& s, int64_t first_logical);

  const KvManagerConfig& cfg_;
  PageManager& pages_;
  PageSummaries* summaries_;
  TopkHotSet* hot_;
};

}  // namespace stride
