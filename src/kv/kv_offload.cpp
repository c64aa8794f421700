// The offload tier of the KV manager. When the page manager evicts a cached
// prefix page to make room, the page's image (K, V, int8 scales, positions)
// and, with a top-k layer, its key summaries are copied to a host-tier slot
// named by prefix_key_id(key). A later prefix lookup counts such pages as
// available; take_prefix pins them, allocates pool pages, copies them back
// bit for bit and registers them again (kv_prefix.cpp).
#include <cassert>
#include <cstring>

#include "kv/kv_manager.h"

namespace stride {

bool KvManager::in_tier(const PrefixKey& key) const {
  return tier_ && tier_->contains(prefix_key_id(key));
}

void KvManager::offload_page(const PrefixKey& key, int32_t page) {
  if (!tier_) return;
  const std::span<uint8_t> image(slot_image_);
  const int64_t page_bytes = pool_->page_image_bytes();
  pool_->save_page(page, image.first((size_t)page_bytes));
  if (summaries_) summaries_->save_page(page, image.subspan((size_t)page_bytes));
  // Fails only when every slot is pinned by a restore in progress: the page
  // is then dropped, as it would be without a tier.
  if (tier_->put(prefix_key_id(key), image).ok()) ++counters_.pages_offloaded;
}

std::vector<PinnedPage> KvManager::pin_tier_pages(const std::vector<PrefixKey>& keys) {
  std::vector<uint64_t> ids;
  ids.reserve(keys.size());
  for (const PrefixKey& k : keys) ids.push_back(prefix_key_id(k));
  tier_->prefetch(ids);  // file-backed tiers: start the reads before the copies
  std::vector<PinnedPage> pinned;
  pinned.reserve(keys.size());
  for (const uint64_t id : ids) {
    std::optional<PinnedPage> p = tier_->pin(id);
    if (!p) return {};
    pinned.push_back(std::move(*p));
  }
  return pinned;
}

void KvManager::restore_page(const PrefixKey& key, const PinnedPage& slot, int32_t page) {
  const std::span<const uint8_t> image = slot.bytes();
  const int64_t page_bytes = pool_->page_image_bytes();
  pool_->load_page(page, image.first((size_t)page_bytes));
  if (summaries_) summaries_->load_page(page, image.subspan((size_t)page_bytes));
  const bool registered = pages_.register_page(key, page);
  assert(registered);
  (void)registered;
  // The pool holds it again; the slot is freed once unpinned.
  tier_->erase(prefix_key_id(key));
  ++counters_.pages_restored;
}

void KvManager::count_tier_misses(const std::vector<uint64_t>& chains, int64_t n_pages) {
  if (!tier_) return;
  const int64_t next_q = n_pages * cfg_.page_size;
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = 0; i < n_pages; ++i) {
      const PrefixKey key{chains[(size_t)i], l};
      if (page_needed(l, i, next_q) && pages_.lookup(key) < 0 && !in_tier(key)) ++counters_.tier_misses;
    }
}

}  // namespace stride
