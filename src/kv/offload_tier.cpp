#include "kv/offload_tier.h"

#include <cassert>

#include "kv/kv_stats.h"
#include "kv/page_manager.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

OffloadTier::OffloadTier(std::unique_ptr<HostTier> tier, KvPool& pool, PageManager& pages, PageSummaries* summaries)
    : tier_(std::move(tier)), pool_(pool), pages_(pages), summaries_(summaries) {
  if (!tier_) return;
  slot_image_.resize((size_t)tier_->slot_bytes());
  pages_.set_on_evict([this](const PrefixKey& key, int32_t page) { offload_page(key, page); });
}

int64_t OffloadTier::slots_total() const { return tier_ ? tier_->stats().slots_total : 0; }

bool OffloadTier::contains(const PrefixKey& key) const { return tier_ && tier_->contains(prefix_key_id(key)); }

void OffloadTier::offload_page(const PrefixKey& key, int32_t page) {
  const std::span<uint8_t> image(slot_image_);
  const int64_t page_bytes = pool_.page_image_bytes();
  pool_.save_page(page, image.first((size_t)page_bytes));
  if (summaries_) summaries_->save_page(page, image.subspan((size_t)page_bytes));
  // Fails only when every slot is pinned by a restore in progress: the page
  // is then dropped, as it would be without a tier.
  if (tier_->put(prefix_key_id(key), image).ok()) ++offloaded_;
}

std::vector<PinnedPage> OffloadTier::pin(const std::vector<PrefixKey>& keys) {
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

std::optional<PinnedPage> OffloadTier::pin(const PrefixKey& key) {
  return tier_ ? tier_->pin(prefix_key_id(key)) : std::nullopt;
}

void OffloadTier::restore_page(const PrefixKey& key, const PinnedPage& slot, int32_t page) {
  const std::span<const uint8_t> image = slot.bytes();
  const int64_t page_bytes = pool_.page_image_bytes();
  pool_.load_page(page, image.first((size_t)page_bytes));
  if (summaries_) summaries_->load_page(page, image.subspan((size_t)page_bytes));
  const bool registered = pages_.register_page(key, page);
  assert(registered);
  (void)registered;
  // The pool holds it again; the slot is freed once unpinned.
  tier_->erase(prefix_key_id(key));
  ++restored_;
}

void OffloadTier::add_to(KvStats& st) const {
  st.pages_offloaded = offloaded_;
  st.pages_restored = restored_;
  st.tier_misses = misses_;
  if (!tier_) return;
  const HostTierStats ts = tier_->stats();
  st.tier_slots_used = ts.slots_used;
  st.tier_slots_total = ts.slots_total;
  st.tier_hits = ts.hits;
  st.tier_slots_owned = ts.slots_owned;
}

}  // namespace stride
