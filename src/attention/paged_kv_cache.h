#pragma once
// The KVCache implementation: a shared paged pool, a PageManager, and per
// sequence one page table per layer (pages are per layer because windowed
// layers release pages while dense layers keep theirs). Full pages are
// registered in the prefix cache per (chained hash, layer), so a layer that
// released old pages can still share the ones its policy needs
// (paged_prefix.cpp). With an offload tier, evicted cached pages move to host
// memory and are restored on a later hit (paged_offload.cpp); with topk
// resident=N, a top-k layer's pages beyond its hot set of N live there too
// and come back when selected (paged_topk_offload.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "attention/kv_cache.h"
#include "attention/plan.h"
#include "kv/host_tier.h"
#include "kv/kv_pool.h"
#include "kv/page_manager.h"
#include "kv/page_summary.h"
#include "kv/prefix_index.h"

namespace stride {

class PagedKVCache final : public KVCache {
 public:
  // tier: the offload tier (slots of page image + summary bytes), or null.
  PagedKVCache(const KVCacheConfig& cfg, std::unique_ptr<KvPool> pool,
               std::unique_ptr<HostTier> tier = nullptr);

  Expected<SeqId> add_sequence() override;
  Expected<PrefixHit> add_sequence_with_prefix(std::span<const int32_t> prompt) override;
  void remove_sequence(SeqId seq) override;
  int64_t length(SeqId seq) const override;
  Status reserve(SeqId seq, int n_new) override;
  void write(int layer, SeqId seq, const float* k, const float* v, int n_new) override;
  void attend(int layer, SeqId seq, const float* q, int n_new, const AttentionParams& p,
              float* out, ThreadPool& pool) override;
  bool concurrent_attend_safe() const override;
  using KVCache::commit;
  void commit(SeqId seq, int n_new, const int32_t* ids) override;
  const KVCacheConfig& config() const override { return cfg_; }
  KVCacheStats stats() const override;
  int64_t pages_held(SeqId seq, int layer) const override;

  // Logical page -> physical page (-1: released) of one layer; for tests and tools.
  const std::vector<int32_t>* page_table(SeqId seq, int layer) const;

 private:
  struct LayerState {
    std::vector<int32_t> table;  // [logical pages] physical id or -1
    int64_t held = 0;            // entries != -1
    int64_t scan_from = 0;       // pages before this are settled: released or kept for good
    // Top-k hot set (paged_topk_offload.cpp); empty unless topk resident=N
    // with a tier. A page in the tier has table[L] == -1.
    std::vector<uint64_t> tier_key;    // [logical pages] owned tier slot with the page image, 0: none
    std::vector<int64_t> last_pick;    // [logical pages] step that last read the page
    std::vector<int64_t> prefetched;   // [logical pages] step that last prefetched it
    std::vector<float> cold_sums;      // [logical pages, n_kv_heads, 2, head_dim_k] key summaries
    std::vector<PrefixKey> prefix_key;  // [logical pages] its prefix-cache key, where prefix_known
    std::vector<uint8_t> prefix_known;  // [logical pages] 1: left the prefix index when it moved out
    int64_t step = 0;                  // attend calls on this layer
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
  };

  bool valid(SeqId seq) const;
  bool valid(SeqId seq, int layer) const;
  int64_t capacity(const Sequence& s) const;  // tokens every layer has pages for
  void release_unseen(Sequence& s, int layer);
  // Prefix cache (paged_prefix.cpp).
  void register_full_pages(Sequence& s, const int32_t* ids, int n_new);
  bool page_needed(int layer, int64_t page, int64_t next_q) const;
  bool prefix_usable(const std::vector<uint64_t>& chains, int64_t n_pages) const;
  Status take_prefix(Sequence& s, const std::vector<uint64_t>& chains, int64_t n_pages);
  // Offload tier (paged_offload.cpp).
  bool in_tier(const PrefixKey& key) const;
  void offload_page(const PrefixKey& key, int32_t page);  // the page manager's eviction hook
  // Pins the keys' slots (prefetched first); empty when one is missing.
  std::vector<PinnedPage> pin_tier_pages(const std::vector<PrefixKey>& keys);
  // Copies a pinned slot into a freshly allocated page and registers it.
  void restore_page(const PrefixKey& key, const PinnedPage& slot, int32_t page);
  void count_tier_misses(const std::vector<uint64_t>& chains, int64_t n_pages);
  // Top-k hot set (paged_topk_offload.cpp): with resident=N and a tier, a
  // top-k layer keeps at most N pages (or the step's picks, sinks and window
  // if more) in the pool; the others live in owned tier slots.
  bool topk_hot_set(const PolicySpec& p) const {
    return p.kind == PolicyKind::TopK && p.resident > 0 && tier_ && summaries_;
  }
  // Selects, moves cold pages out, brings the picks in, prefetches the next likely picks.
  AttentionPlan plan_topk_hot(int layer, SeqId seq, int64_t kv_len, const float* q, int n_new,
                              int n_head);
  Status offload_topk_page(LayerState& ls, int64_t page);  // by logical page
  bool restore_topk_page(LayerState& ls, int64_t page);
  void drop_topk_tier(LayerState& ls);  // frees the layer's owned tier slots

  KVCacheConfig cfg_;
  std::unique_ptr<KvPool> pool_;
  PageManager pages_;
  std::unique_ptr<PageSummaries> summaries_;  // key min/max per page; only with a TopK layer
  std::unique_ptr<HostTier> tier_;            // null: evicted pages are dropped
  std::vector<uint8_t> slot_image_;           // [tier slot bytes] scratch for offloading
  int64_t pages_offloaded_ = 0;
  int64_t pages_restored_ = 0;
  int64_t tier_misses_ = 0;
  uint64_t next_topk_key_ = 1;  // owned tier keys: a counter, 0 means none
  int64_t topk_offloaded_ = 0;
  int64_t topk_restored_ = 0;
  int64_t topk_prefetched_ = 0;
  int64_t topk_prefetch_hits_ = 0;
  int64_t topk_offload_refused_ = 0;
  int64_t topk_restore_failed_ = 0;
  std::vector<Sequence> seqs_;
  int64_t peak_used_ = 0;
  // attend() statistics: each call adds its own under stats_mu_, so calls
  // for different sequences may run concurrently.
  mutable std::mutex stats_mu_;
  int64_t pages_read_ = 0;
  int64_t head_pages_read_ = 0;  // per-kv-head (top-k) lists: entries / n_kv_heads pages
  int64_t pages_present_ = 0;
  std::array<double, 5> attention_seconds_{};  // by PolicyKind
  int64_t window_pages_read_ = 0;       // same split as pages_read_ / head_pages_read_
  int64_t head_window_pages_read_ = 0;
  uint64_t salt_ = 0;  // cache_salt and every layer's policy
  PrefixChains chains_;  // exact ids of the token prefixes of registered pages
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
};

}  // namespace stride
