#pragma once
// The KV manager: the only owner of KV state. It holds the paged pool and
// the page manager, and composes the parts that each own their share of the
// rest; it plans, it never runs a kernel:
//   sequence_table.h   each sequence's length and page tables (one per layer:
//                      windowed layers release pages while dense ones keep theirs)
//   prefix_cache.h     full pages cached by their exact token prefix; prefix hits
//   offload_tier.h     where an evicted cached page goes, and comes back from
//   topk_hot_set.h     top-k layers' pages moved between the pool and the tier
//   shared_tier.h      pages published to / imported from other replicas
//   session_pages.h    pages in and out (sessions(): saved sessions, whole sequence images)
//   step_reservation.h the pages a step reserves; layer_pages.h what it reads
//   step_rollback.h    a step's rejected tail, truncate()
//   read_counters.h    what committed steps read
//
// A step is transactional (llama.cpp's init_batch/apply, vLLM's allocate_slots):
//   prepare(batch)        -> StepPlan: every page the step writes (and the
//                            pages a top-k hot set brings back once cold
//                            pages moved out) is reserved and every static
//                            layer's page lists are planned; or
//                            ResourceExhausted naming the sequences that do
//                            not fit, with nothing changed
//   per layer, per sequence (the model's forward pass):
//     write(plan, i, layer, k, v)   the new keys and values
//     select(plan, i, layer, q)     top-k layers only: pages from the queries
//     attention_paged(pool(), plan.seqs[i].layers[layer].pages, ...)  stateless
//     layer_done(plan, i, layer)    a step run layer by layer only: the
//                                   layer's pages no later query sees go back now
//   commit(plan)          -> lengths advance, full pages enter the prefix
//                            cache, pages no future query can see are
//                            released (policy_keeps), counters are merged
//
// Prefix caching: add_sequence_with_prefix(prompt) starts a sequence on the
// longest cached prefix of whole pages (shared, reference-counted pages);
// its length() starts at the number of tokens reused. With an offload tier,
// evicted prefix pages are kept in host memory (or a mapped file) and come
// back into the pool when a later prompt needs them (offload_tier.h).
// With a shared tier (attach_shared_tier), full pages are also published to a
// store other replicas read, and a local miss asks it first (shared_tier.h).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "core/status.h"
#include "kv/kv_config.h"
#include "kv/kv_snapshot.h"
#include "kv/kv_stats.h"
#include "kv/offload_tier.h"
#include "kv/page_manager.h"
#include "kv/prefix_cache.h"
#include "kv/read_counters.h"
#include "kv/sequence_table.h"
#include "kv/session_pages.h"
#include "kv/shared/shared_page_store.h"
#include "kv/shared_tier.h"
#include "kv/selection_observer.h"
#include "kv/step_kv.h"
#include "kv/step_plan.h"
#include "kv/step_reservation.h"
#include "kv/step_rollback.h"
#include "kv/store/host_tier.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_key_codes.h"
#include "kv/store/page_summary.h"
#include "kv/topk_hot_set.h"

namespace stride {

class KvManager final : public StepKv {
 public:

  static Expected<std::unique_ptr<KvManager>> create(const KvManagerConfig& cfg);
  // Use create(); tier: the offload tier (slots of page image + summary bytes), or null.
  KvManager(const KvManagerConfig& cfg, std::unique_ptr<KvPool> pool, std::unique_ptr<HostTier> tier);
  KvManager(const KvManager&) = delete;
  KvManager& operator=(const KvManager&) = delete;

  struct PrefixHit {
    SeqId seq = -1;
    int64_t reused_tokens = 0;  // whole pages; at most prompt.size() - 1
  };
  Expected<SeqId> add_sequence();
  // A new sequence holding the longest cached prefix of `prompt` that every
  // layer can use (the pages its policy still needs for the next query).
  // At least the last prompt token is left to compute, so its logits can be
  // produced. With the prefix cache off this is add_sequence() (0 reused).
  Expected<PrefixHit> add_sequence_with_prefix(std::span<const int32_t> prompt);
  void remove_sequence(SeqId seq);  // frees every page it holds
  // A new sequence holding what `parent` holds (kv_fork.cpp): its full pages
  // shared (one more reference each), its last, partly written page copied,
  // since both sequences write their next tokens there. Parallel sampling's
  // branches start this way from one prefilled prompt. ResourceExhausted
  // when the pool cannot take the copies, or (top-k hot set) the tier the
  // copies of the parent's cold pages. Nothing changes on error.
  Expected<SeqId> fork_sequence(SeqId parent);
  // A new sequence whose first position is first_pos (a multiple of the
  // page size; kv_shard_sequence.cpp): one shard of a sequence spread by
  // position over several processes, which holds pages from there on only.
  // Its length() starts at first_pos; it takes no part in the prefix cache
  // (it has no ids of the positions before it). Unsupported with a top-k hot set.
  friend Expected<SeqId> add_sequence_at(KvManager& kv, int64_t first_pos);
  // The prefix cache per shard (kv_shard_sequence.cpp): the shard [first_pos,
  // end_pos) of `prompt` (every position's id, from 0) finds the end of the
  // longest run of its pages cached from first_pos, at most the page before
  // the prompt's last token (first_pos: none, or no prefix cache, or a shared tier).
  friend int64_t cached_shard_end(KvManager& kv, std::span<const int32_t> prompt, int64_t first_pos,
                                  int64_t end_pos);
  // add_sequence_at holding the cached pages [first_pos, reuse_end) (reuse_end
  // at most what cached_shard_end found), its length reuse_end; its full pages
  // after that enter the prefix cache under keys chained from position 0.
  friend Expected<SeqId> add_sequence_at(KvManager& kv, int64_t first_pos, std::span<const int32_t> prompt,
                                         int64_t reuse_end);
  int64_t length(SeqId seq) const;  // tokens committed

  // The step (see the top of this file). The plan refers to `batch`, which
  // the caller keeps alive until commit(). On ResourceExhausted, *unfit (when
  // given) lists the batch indices that do not fit: taken in batch order,
  // each step that fits beside the earlier fitting ones is kept.
  Expected<StepPlan> prepare(std::span<const SequenceStep> batch, std::vector<int>* unfit = nullptr);
  // k: [n, n_kv_heads, head_dim_k], v: [n, n_kv_heads, head_dim_v] f32
  // for plan.steps[i]'s new positions; keys already carry RoPE.
  // (StepKv::write, every row of the step, comes through it.)
  Status write_rows(StepPlan& plan, int i, int layer, int row0, int rows, const float* k, const float* v) override;
  // kv_layer_release.cpp: the layer's unseen pages go back, and back the next layer's new pages.
  Status layer_done(StepPlan& plan, int i, int layer) override;
  // q: [n, n_head, head_dim_k]. Fills a top-k layer's page lists; with a
  // hot set it first moves pages between the pool and the tier.
  // scale: the layer's softmax scale (top-k mass=P estimates mass with it; 0: 1/sqrt(head_dim)).
  // threads: the calling thread's pool (worker 0's scratch holds the
  // selection's buffers; the kv heads' second stages split over its threads).
  Status select(StepPlan& plan, int i, int layer, const float* q, int n_head, float scale,
                ThreadPool& threads) override;
  // Whether select() on this layer changes shared state (so calls for
  // different sequences must not run at once).
  bool select_is_serial(int layer) const override { return topk_hot_set(cfg_.layer_policies[layer]); }
  // Sees every top-k selection outside a hot set (null: none); not owned.
  void set_selection_observer(SelectionObserver* observer) { observer_ = observer; }
  Status commit(StepPlan& plan);

  // Cuts seq back to its first `length` tokens, as if the rest had never
  // been sent (a draft model's rejected tokens). Unsupported, with
  // nothing changed, when that cannot be exact: a page the shorter sequence
  // needs was released (a window moved past it), a page past the cut is in
  // the prefix cache, or a top-k layer would keep a page whose summary
  // covers cut keys. A step's own tail is cut by commit() (n_keep).
  Status truncate(SeqId seq, int64_t length);

  // Saved sessions (session_pages.h): a prompt's cached pages out, and back
  // into the prefix cache, where the next add_sequence_with_prefix() takes them.
  SessionPages& sessions() { return sessions_; }
  // Shares full prefix pages with other replicas through `store`, under keys
  // chained with HMAC-SHA256(secret) (kv/shared/shared_page_codec.h).
  Status attach_shared_tier(std::unique_ptr<SharedPageStore> store, const std::string& secret,
                            const std::string& key_prefix);
  const SharedPageStore* shared_tier() const { return shared_ ? shared_->store() : nullptr; }

  const KvPool& pool() const override { return *pool_; }
  const PolicySpec& layer_policy(int layer) const override { return cfg_.layer_policies[(size_t)layer]; }
  int head_dim_k() const override { return cfg_.head_dim_k; }
  const KvManagerConfig& config() const { return cfg_; }
  KvStats stats() const;
  // Each sequence's length and page tables: pages_held(seq, layer),
  // page_table(seq, layer) (logical page -> physical page, -1: released).
  const SequenceTable& sequences() const { return seqs_; }
  // The pool pages' key summaries (null without a top-k layer): a shard
  // rank scores its own pages with them for a selection across ranks.
  friend const PageSummaries* page_summaries(const KvManager& kv) { return kv.summaries_.get(); }

 private:
  friend class StepPlan;  // returns its unused spares to pages_
  // Whether a layer with policy p runs a top-k hot set (topk_hot_set.h):
  // with resident=N and a tier, it keeps at most N pages (or the step's
  // picks, sinks and window if more) in the pool, the others in tier slots.
  bool topk_hot_set(const PolicySpec& p) const { return hot_ && TopkHotSet::applies(p); }

  KvManagerConfig cfg_;
  std::unique_ptr<KvPool> pool_;
  PageManager pages_;
  std::unique_ptr<PageSummaries> summaries_;  // key min/max per page; only with a TopK layer
  std::unique_ptr<PageKeyCodes> key_codes_;   // int8 keys per page; only with rerank_keys=int8
  // The watermark and the hot set's topk_* counters; the parts count the
  // rest and stats() merges them.
  KvStats counters_;
  OffloadTier offload_;
  PrefixCache prefix_;
  std::unique_ptr<TopkHotSet> hot_;  // with a tier, summaries and a hot-set layer
  SequenceTable seqs_;
  StepReservation reservation_;
  StepRollback rollback_;
  SessionPages sessions_;
  ReadCounters reads_;
  std::unique_ptr<SharedTier> shared_;  // null until attach_shared_tier
  SelectionObserver* observer_ = nullptr;
};

}  // namespace stride
