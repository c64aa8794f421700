#include "kv/shared_tier.h"

#include <algorithm>

#include "kv/kv_pages_needed.h"
#include "kv/kv_stats.h"
#include "kv/offload_tier.h"
#include "kv/page_manager.h"
#include "kv/prefix_chains.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

Expected<std::unique_ptr<SharedTier>> SharedTier::create(const SharedTierParts& parts,
                                                         std::unique_ptr<SharedPageStore> store,
                                                         const std::string& secret, const std::string& key_prefix) {
  if (!store) return InvalidArgument("shared KV tier: no store");
  if (!parts.cfg.prefix_cache) return InvalidArgument("shared KV tier: needs the prefix cache (cache_reuse)");
  if (secret.size() < 16) return InvalidArgument("shared KV tier: the secret must have at least 16 characters");
  return std::make_unique<SharedTier>(parts, std::move(store), secret, key_prefix);
}

SharedTier::SharedTier(const SharedTierParts& parts, std::unique_ptr<SharedPageStore> store, const std::string& secret,
                       const std::string& key_prefix)
    : parts_(parts), store_(std::move(store)) {
  const int64_t summary = parts_.summaries ? parts_.summaries->page_bytes() : 0;
  layout_.identity = shared_kv_identity(kv_identity_text(parts_.cfg) + "|summary=" + std::to_string(summary));
  layout_.n_layer = (uint32_t)parts_.cfg.n_layer;
  layout_.page_size = (uint32_t)parts_.cfg.page_size;
  layout_.layer_bytes = (uint64_t)(parts_.pool.page_image_bytes() + summary);
  keys_ = std::make_unique<SharedPageKeys>(secret, layout_.identity, key_prefix);
}

std::vector<PageDigest> SharedTier::keys_of(std::span<const int32_t> prompt, int64_t max_pages) const {
  const size_t ps = (size_t)parts_.cfg.page_size;
  std::vector<PageDigest> keys((size_t)max_pages);
  PageDigest key = SharedPageKeys::root();
  for (int64_t i = 0; i < max_pages; ++i) {
    key = keys_->next(key, prompt.subspan((size_t)i * ps, ps));
    keys[(size_t)i] = key;
  }
  return keys;
}

bool SharedTier::page_local(uint64_t chain, int64_t page, int64_t next_q) const {
  if (chain == kNoPrefixChain) return false;
  const KvManagerConfig& cfg = parts_.cfg;
  for (int l = 0; l < cfg.n_layer; ++l)
    if (page_needed(cfg.layer_policies[(size_t)l], cfg.page_size, page, next_q) &&
        parts_.pages.lookup({chain, l}) < 0 && !parts_.offload.contains({chain, l}))
      return false;
  return true;
}

int64_t SharedTier::import_pages(std::span<const int32_t> prompt, std::vector<uint64_t>& chains,
                                 const std::vector<PageDigest>& keys) {
  const KvManagerConfig& cfg = parts_.cfg;
  PageManager& pages = parts_.pages;
  const int64_t max_pages = (int64_t)chains.size();
  int64_t first = 0;
  // Local when every layer that needs it at the prompt's end has it (a
  // windowed layer's old pages are not fetched again).
  const int64_t next_q = max_pages * cfg.page_size;
  while (first < max_pages && page_local(chains[(size_t)first], first, next_q)) ++first;
  if (first == max_pages) return 0;
  // The prompt's resident pages are held while importing, so the pages the
  // import allocates never evict them.
  std::vector<int32_t> held;
  for (int64_t i = 0; i < first; ++i)
    for (int l = 0; l < cfg.n_layer; ++l)
      if (const int32_t page = pages.lookup({chains[(size_t)i], l}); page >= 0) {
        pages.retain(page);
        held.push_back(page);
      }
  // Whole pages (every layer) that fit beside two pages per layer for the
  // rest of the prompt; evicting other cached pages is fine, evicting the
  // pages just imported is not (they are the most recently parked).
  const int64_t room = ((int64_t)pages.n_free() - 2 * cfg.n_layer) / cfg.n_layer;
  const int64_t want = std::min(max_pages - first, room);
  int64_t imported = 0;
  if (want > 0) {
    std::vector<std::string> names;
    names.reserve((size_t)want);
    for (int64_t i = first; i < first + want; ++i) names.push_back(keys_->name(keys[(size_t)i]));
    const std::vector<std::string> values = store_->lookup_prefix(names);
    const size_t ps = (size_t)cfg.page_size;
    const size_t image_bytes = (size_t)parts_.pool.page_image_bytes();
    for (size_t j = 0; j < values.size(); ++j) {
      const int64_t i = first + (int64_t)j;
      const std::span<const int32_t> tokens = prompt.subspan((size_t)i * ps, ps);
      const auto payload = decode_shared_page(layout_, keys[(size_t)i], tokens, values[j]);
      if (!payload.ok()) {
        store_->reject(names[j]);
        break;
      }
      const uint64_t parent = i == 0 ? kPrefixChainRoot : chains[(size_t)i - 1];
      const uint64_t chain = parts_.chains.intern(parent, tokens);
      chains[(size_t)i] = chain;
      for (int l = 0; l < cfg.n_layer; ++l) {
        if (pages.lookup({chain, l}) >= 0) continue;
        std::vector<int32_t> page;
        if (!pages.allocate(1, page).ok()) break;  // fits: counted above
        const std::span<const uint8_t> layer =
            payload->subspan((size_t)l * layout_.layer_bytes, (size_t)layout_.layer_bytes);
        parts_.pool.load_page(page[0], layer.first(image_bytes));
        if (parts_.summaries) parts_.summaries->load_page(page[0], layer.subspan(image_bytes));
        pages.register_page({chain, l}, page[0]);
        pages.release(page[0]);  // cached, unreferenced: the prefix lookup takes it
      }
      ++imported;
    }
    store_->counters().hits += imported;
  }
  for (const int32_t page : held) pages.release(page);
  return imported;
}

void SharedTier::publish(const KvSequence& s, int64_t index, std::span<const int32_t> tokens) {
  const KvManagerConfig& cfg = parts_.cfg;
  SharedTierCounters& counters = store_->counters();
  std::vector<int32_t> pages((size_t)cfg.n_layer);
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::vector<int32_t>& table = s.layers[(size_t)l].pages.table;
    pages[(size_t)l] = index < (int64_t)table.size() ? table[(size_t)index] : -1;
    if (pages[(size_t)l] < 0) return;  // a layer released it already: nothing whole to share
  }
  if (!counters.up) {
    ++counters.dropped;
    return;
  }
  const size_t image_bytes = (size_t)parts_.pool.page_image_bytes();
  std::vector<uint8_t> payload(layout_.payload_bytes());  // [n_layer, layer_bytes]
  for (int l = 0; l < cfg.n_layer; ++l) {
    const std::span<uint8_t> layer(payload.data() + (size_t)l * layout_.layer_bytes, (size_t)layout_.layer_bytes);
    parts_.pool.save_page(pages[(size_t)l], layer.first(image_bytes));
    if (parts_.summaries) parts_.summaries->save_page(pages[(size_t)l], layer.subspan(image_bytes));
  }
  store_->publish(keys_->name(s.shared_chain), encode_shared_page(layout_, s.shared_chain, tokens, payload));
}

void SharedTier::add_to(KvStats& st) const {
  const SharedTierCounters& c = store_->counters();
  st.shared_tier_up = c.up;
  st.shared_tier_hits = c.hits;
  st.shared_tier_misses = c.misses;
  st.shared_tier_errors = c.errors;
  st.shared_tier_published = c.published;
  st.shared_tier_dropped = c.dropped;
  st.shared_tier_bytes_in = c.bytes_in;
  st.shared_tier_bytes_out = c.bytes_out;
}

}  // namespace stride
