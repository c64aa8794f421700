#pragma once
// The KVCache implementation: a shared paged pool, a PageManager, and per
// sequence one page table per layer (pages are per layer because windowed
// layers release pages while dense layers keep theirs). Full pages are
// registered in the prefix cache per (chained hash, layer), so a layer that
// released old pages can still share the ones its policy needs
// (paged_prefix.cpp). With an offload tier, evicted cached pages move to host
// memory and are restored on a later hit (paged_offload.cpp).
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/kv_cache.h"
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
  };
  struct Sequence {
    bool active = false;
    int64_t length = 0;
    std::vector<LayerState> layers;  // [n_layer]
    // Prefix chain: the hash of the first hashed_pages full pages, and the
    // ids of the tokens after them (the open page).
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

  KVCacheConfig cfg_;
  std::unique_ptr<KvPool> pool_;
  PageManager pages_;
  std::unique_ptr<PageSummaries> summaries_;  // key min/max per page; only with a TopK layer
  std::unique_ptr<HostTier> tier_;            // null: evicted pages are dropped
  std::vector<uint8_t> slot_image_;           // [tier slot bytes] scratch for offloading
  int64_t pages_offloaded_ = 0;
  int64_t pages_restored_ = 0;
  int64_t tier_misses_ = 0;
  std::vector<Sequence> seqs_;
  int64_t peak_used_ = 0;
  int64_t pages_read_ = 0;
  int64_t head_pages_read_ = 0;  // per-kv-head (top-k) lists: entries / n_kv_heads pages
  int64_t pages_present_ = 0;
  std::array<double, 5> attention_seconds_{};  // by PolicyKind
  int64_t window_pages_read_ = 0;       // same split as pages_read_ / head_pages_read_
  int64_t head_window_pages_read_ = 0;
  uint64_t salt_ = 0;  // cache_salt and every layer's policy
  int64_t prefix_query_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t prefix_queries_ = 0;
  int64_t prefix_hits_ = 0;
};

}  // namespace stride
