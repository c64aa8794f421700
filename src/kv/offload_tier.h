#pragma once
// The offload tier: where a cached prefix page goes when the pool evicts it.
// The page manager calls offload_page() (its eviction hook) for every cached
// page it evicts; the page's image (K, V, int8 scales, positions) and, with a
// top-k layer, its key summaries are copied to a host-tier slot named by
// prefix_key_id(key). A later prefix lookup counts such pages as available;
// the prefix cache (prefix_cache.h) pins them, and restore_page() copies
// them back into pool pages bit for bit and registers them again.
// Without a host tier every call is a no-op and evicted pages are dropped.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kv/prefix_index.h"
#include "kv/store/host_tier.h"

namespace stride {

class KvPool;
class PageManager;
class PageSummaries;
struct KvStats;

class OffloadTier {
 public:
  // tier: null for none. summaries: null without a top-k layer. The pool,
  // page manager and summaries outlive this.
  OffloadTier(std::unique_ptr<HostTier> tier, KvPool& pool, PageManager& pages, PageSummaries* summaries);
  OffloadTier(const OffloadTier&) = delete;
  OffloadTier& operator=(const OffloadTier&) = delete;

  HostTier* host() const { return tier_.get(); }  // null: no tier
  int64_t slots_total() const;
  bool contains(const PrefixKey& key) const;
  // Pins the keys' slots (prefetched first); empty when one is missing.
  std::vector<PinnedPage> pin(const std::vector<PrefixKey>& keys);
  std::optional<PinnedPage> pin(const PrefixKey& key);
  // Copies a pinned slot into a freshly allocated page and registers it.
  void restore_page(const PrefixKey& key, const PinnedPage& slot, int32_t page);
  // A page a prefix lookup needed was neither in the pool nor here.
  void count_miss() { ++misses_; }
  // pages_offloaded, pages_restored, tier_misses and the tier's own figures.
  void add_to(KvStats& st) const;

 private:
  void offload_page(const PrefixKey& key, int32_t page);  // the page manager's eviction hook

  std::unique_ptr<HostTier> tier_;
  KvPool& pool_;
  PageManager& pages_;
  PageSummaries* summaries_;
  std::vector<uint8_t> slot_image_;  // [tier slot bytes] scratch for offloading
  int64_t offloaded_ = 0, restored_ = 0, misses_ = 0;
};

}  // namespace stride
