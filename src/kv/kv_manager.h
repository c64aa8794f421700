#pragma once
// The KV manager: the only owner of KV state. It holds the paged pool, the
// page manager, each sequence's page tables (one per layer: windowed layers
// release pages while dense ones keep theirs), the prefix cache, the offload
// tier and the top-k hot set. It plans; it never runs a kernel.
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
//   commit(plan)          -> lengths advance, full pages enter the prefix
//                            cache, pages no future query can see are
//                            released (policy_keeps), counters are merged
//
// Prefix caching: add_sequence_with_prefix(prompt) starts a sequence on the
// longest cached prefix of whole pages (shared, reference-counted pages);
// its length() starts at the number of tokens reused. With an offload tier,
// evicted prefix pages are kept in host memory (or a mapped file) and come
// back into the pool when a later prompt needs them (kv_offload.cpp).
// With a shared tier (attach_shared_tier), full pages are also published to a
// store other replicas read, and a local miss asks it first (kv_shared_tier.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "attention/plan.h"
#include "attention/policy.h"
#include "core/status.h"
#include "kv/store/host_tier.h"
#include "kv/store/kv_pool.h"
#include "kv/kv_snapshot.h"
#include "kv/kv_stats.h"
#include "kv/store/kv_storage.h"
#include "kv/page_manager.h"
#include "kv/page_table.h"
#include "kv/store/page_summary.h"
#include "kv/prefix_chains.h"
#include "kv/prefix_index.h"
#include "kv/shared/shared_page_codec.h"
#include "kv/shared/shared_page_store.h"
#include "kv/step_kv.h"
#include "kv/step_plan.h"
#include "kv/topk_hot_set.h"

namespace stride {

struct KvManagerConfig {
  int n_layer = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  int head_dim_v = 0;
  int page_size = 32;             // tokens per page
  int64_t budget_bytes = 0;       // pool capacity (K+V, all layers)
  KvStorage storage = KvStorage::F16;  // f16; f32 for exact oracle comparisons; int8 to halve KV
  std::vector<PolicySpec> layer_policies;  // [n_layer]
  // Prefix cache: full pages are kept, keyed by their exact token prefix
  // (kv/prefix_chains.h: a keyed hash finds it, the tokens are compared), and
  // shared by later sequences with the same prefix.
  bool prefix_cache = true;
  // The bucket hash of that table; empty: keyed SipHash-2-4. Tests set a
  // weak one to force collisions.
  PrefixChains::HashFn prefix_hash;
  // Part of every prefix key besides the layer policies: the model version and
  // anything else the K/V depend on.
  std::string cache_salt;
  // Offload tier: cached prefix pages evicted from the pool are copied here
  // (bit for bit, with their top-k summaries) and restored on a prefix hit.
  int64_t offload_bytes = 0;  // tier capacity; 0: no tier (evicted pages are dropped)
  std::string offload_file;   // empty: anonymous RAM; else a memory-mapped scratch file
};

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
  int64_t length(SeqId seq) const;  // tokens committed

  // The step (see the top of this file). On ResourceExhausted, *unfit (when
  // given) lists the batch indices that do not fit: taken in batch order,
  // each request that fits beside the earlier fitting ones is kept.
  Expected<StepPlan> prepare(std::span<const StepRequest> batch, std::vector<int>* unfit = nullptr);
  // k: [n_new, n_kv_heads, head_dim_k], v: [n_new, n_kv_heads, head_dim_v] f32
  // for plan.seqs[i]'s new positions; keys already carry RoPE.
  Status write(StepPlan& plan, int i, int layer, const float* k, const float* v) override;
  // q: [n_new, n_head, head_dim_k]. Fills a top-k layer's page lists; with a
  // hot set it first moves pages between the pool and the tier.
  // scale: the layer's softmax scale (top-k mass=P estimates mass with it; 0: 1/sqrt(head_dim)).
  Status select(StepPlan& plan, int i, int layer, const float* q, int n_head, float scale = 0.f) override;
  // Whether select() on this layer changes shared state (so calls for
  // different sequences must not run at once).
  bool select_is_serial(int layer) const override { return topk_hot_set(cfg_.layer_policies[layer]); }
  Status commit(StepPlan& plan);

  // Cuts seq back to its first `length` tokens, as if the rest had never
  // been sent (a draft model's rejected tokens). Unsupported, with
  // nothing changed, when that cannot be exact: a page the shorter sequence
  // needs was released (a window moved past it), a page past the cut is in
  // the prefix cache, or a top-k layer would keep a page whose summary
  // covers cut keys. A step's own tail is cut by commit() (n_keep).
  Status truncate(SeqId seq, int64_t length);

  // Saved sessions (kv_session.cpp). export_prefix copies the pages of the
  // whole pages of `tokens` out of the prefix cache (a sequence that just
  // prefilled them holds them): for each layer the pages its policy keeps
  // for a query right after them (and one page earlier, when `tokens` ends
  // on a page boundary, where a hit stops). NotFound when one was evicted.
  Expected<KvSnapshot> export_prefix(std::span<const int32_t> tokens);
  // Puts a snapshot's pages back into the prefix cache as unreferenced
  // cached pages, so the next add_sequence_with_prefix() of a prompt that
  // starts with its tokens takes them. Pages already cached are kept.
  // All or nothing; returns the pages loaded (0 with the prefix cache off).
  Expected<int64_t> import_prefix(const KvSnapshot& snap);
  // Bytes of one page in a snapshot (pool image + top-k summary).
  int64_t snapshot_page_bytes() const;
  // Shares full prefix pages with other replicas through `store`, under keys
  // chained with HMAC-SHA256(secret) (kv/shared/shared_page_codec.h).
  Status attach_shared_tier(std::unique_ptr<SharedPageStore> store, const std::string& secret,
                            const std::string& key_prefix);
  const SharedPageStore* shared_tier() const { return shared_.get(); }

  // Pool pages prepare() would reserve now for n_new more tokens of seq.
  int64_t pages_to_reserve(SeqId seq, int n_new) const;

  const KvPool& pool() const override { return *pool_; }
  const PolicySpec& layer_policy(int layer) const override { return cfg_.layer_policies[(size_t)layer]; }
  int head_dim_k() const override { return cfg_.head_dim_k; }
  const KvManagerConfig& config() const { return cfg_; }
  KvStats stats() const;
  int64_t pages_held(SeqId seq, int layer) const;  // pages the sequence holds on this layer now
  // Logical page -> physical page (-1: released) of one layer; for tests and tools.
  const std::vector<int32_t>* page_table(SeqId seq, int layer) const;

 private:
  friend class StepPlan;
  // A layer of a sequence: its page table, which every part of the manager
  // works on, and its top-k hot-set state, which only hot_ touches.
  struct LayerState {
    PageTable pages;
    HotSetLayer hot;
  };
  struct Sequence {
    bool active = false;
    int64_t length = 0;
    std::vector<LayerState> layers;  // [n_layer]
    // Prefix chain: the PrefixChains id of the first hashed_pages full
    // pages, and the ids of the tokens after them (the open page).
    bool chain_known = true;  // false once a commit came without token ids
    uint64_t chain = kPrefixChainRoot;
    int64_t hashed_pages = 0;
    std::vector<int32_t> open_ids;
    PageDigest shared_chain{};  // shared-tier key of the first hashed_pages pages
  };

  bool valid(SeqId seq) const;
  bool valid(SeqId seq, int layer) const;
  int64_t capacity(const Sequence& s) const;  // tokens every layer has pages for
  // Step (kv_step.cpp).
  Status check_batch(std::span<const StepRequest> batch) const;
  int64_t spare_pages_for(const Sequence& s, int layer, int n_new, bool tier_may_refuse) const;
  bool tier_may_refuse(std::span<const StepRequest> batch) const;
  int64_t step_pages(const Sequence& s, int n_new, bool tier_may_refuse) const;
  void plan_static_layer(const Sequence& s, int layer, SeqStepPlan& sp) const;
  void release_unseen(Sequence& s, int layer);
  // Rollback (kv_rollback.cpp): what write() keeps for a may_truncate step,
  // and the cut of a step's rejected tail inside commit().
  void stash_for_rollback(StepPlan& plan, int i, int layer, const float* k);
  void drop_step_tail(Sequence& s, const SeqStepPlan& sp, int kept);
  void drop_pages_from(Sequence& s, int64_t first_logical);
  void count_layer(const LayerStepPlan& lp, int layer);
  void return_spares(StepPlan& plan);  // unused reserved pages back to the pool
  // Prefix cache (kv_prefix.cpp).
  void register_full_pages(Sequence& s, const int32_t* ids, int n_new);
  bool page_needed(int layer, int64_t page, int64_t next_q) const;
  bool prefix_usable(const std::vector<uint64_t>& chains, int64_t n_pages) const;
  Status take_prefix(Sequence& s, const std::vector<uint64_t>& chains, int64_t n_pages);
  // Offload tier (kv_offload.cpp).
  bool in_tier(const PrefixKey& key) const;
  void offload_page(const PrefixKey& key, int32_t page);  // the page manager's eviction hook
  // Pins the keys' slots (prefetched first); empty when one is missing.
  std::vector<PinnedPage> pin_tier_pages(const std::vector<PrefixKey>& keys);
  // Copies a pinned slot into a freshly allocated page and registers it.
  void restore_page(const PrefixKey& key, const PinnedPage& slot, int32_t page);
  void count_tier_misses(const std::vector<uint64_t>& chains, int64_t n_pages);
  // Shared tier (kv_shared_tier.cpp). keys: [max_pages] the prompt's shared keys.
  std::vector<PageDigest> shared_keys_of(std::span<const int32_t> prompt, int64_t max_pages) const;
  // Imports the pages after the local prefix that the store holds as cached
  // (unreferenced) pool pages, updating chains; returns the pages imported.
  int64_t import_shared_pages(std::span<const int32_t> prompt, std::vector<uint64_t>& chains,
                              const std::vector<PageDigest>& keys);
  // Every layer whose policy needs logical page `page` for the query at
  // next_q has it in the pool or the offload tier.
  bool page_local(uint64_t chain, int64_t page, int64_t next_q) const;
  // Publishes logical page `index` of s (every layer) under its key.
  void publish_shared_page(const Sequence& s, int64_t index, std::span<const int32_t> tokens);
  // Top-k hot set (topk_hot_set.h): with resident=N and a tier, a top-k
  // layer keeps at most N pages (or the step's picks, sinks and window if
  // more) in the pool; the others live in owned tier slots.
  bool topk_hot_set(const PolicySpec& p) const { return hot_ && TopkHotSet::applies(p); }

  KvManagerConfig cfg_;
  std::unique_ptr<KvPool> pool_;
  PageManager pages_;
  std::unique_ptr<PageSummaries> summaries_;  // key min/max per page; only with a TopK layer
  std::unique_ptr<HostTier> tier_;            // null: evicted pages are dropped
  std::vector<uint8_t> slot_image_;           // [tier slot bytes] scratch for offloading
  // The manager's own counters (offload, top-k hot set, prefix lookups, the
  // watermark); stats() adds the pool's and the tier's live figures.
  KvStats counters_;
  // With a tier, summaries and a hot-set layer; works on the members above.
  std::unique_ptr<TopkHotSet> hot_;
  std::vector<Sequence> seqs_;
  // Counters merged by commit(); stats() may be read from another thread.
  mutable std::mutex stats_mu_;
  int64_t pages_read_ = 0;
  int64_t head_pages_read_ = 0;  // per-kv-head (top-k) lists: entries / n_kv_heads pages
  int64_t pages_present_ = 0;
  std::array<double, kPolicyKinds> attention_seconds_{};
  std::array<double, kPolicyKinds> pages_read_by_policy_{}, pages_present_by_policy_{};
  int64_t window_pages_read_ = 0;       // same split as pages_read_ / head_pages_read_
  int64_t head_window_pages_read_ = 0;
  uint64_t salt_ = 0;  // cache_salt and every layer's policy
  PrefixChains chains_;  // exact ids of the token prefixes of registered pages
  std::string kv_identity_;  // the model and KV layout, for the shared tier's keys
  std::unique_ptr<SharedPageStore> shared_;
  std::unique_ptr<SharedPageKeys> shared_keys_;
  SharedPageLayout shared_layout_;
};

}  // namespace stride
