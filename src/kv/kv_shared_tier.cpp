// The shared tier of the KV manager (kv/shared/shared_page_store.h): full
// prefix pages go to a store other replicas read (Redis), and a prompt whose
// prefix misses locally takes the pages the store holds before computing the
// rest. An imported page becomes an ordinary cached page (registered under
// its exact prefix id, no sequence referencing it), so the usual prefix
// lookup takes it; every value is verified first (decode_shared_page), so a
// wrong or damaged value is a miss, never a wrong page.
#include <algorithm>

#include "kv/kv_manager.h"

namespace stride {

Status KvManager::attach_shared_tier(std::unique_ptr<SharedPageStore> store, const std::string& secret,
                                     const std::string& key_prefix) {
  if (!store) return InvalidArgument("shared KV tier: no store");
  if (!cfg_.prefix_cache) return InvalidArgument("shared KV tier: needs the prefix cache (cache_reuse)");
  if (secret.size() < 16) return InvalidArgument("shared KV tier: the secret must have at least 16 characters");
  const int64_t summary = summaries_ ? summaries_->page_bytes() : 0;
  shared_layout_.identity = shared_kv_identity(kv_identity_ + "|summary=" + std::to_string(summary));
  shared_layout_.n_layer = (uint32_t)cfg_.n_layer;
  shared_layout_.page_size = (uint32_t)cfg_.page_size;
  shared_layout_.layer_bytes = (uint64_t)(pool_->page_image_bytes() + summary);
  shared_keys_ = std::make_unique<SharedPageKeys>(secret, shared_layout_.identity, key_prefix);
  shared_ = std::move(store);
  return Status::Ok();
}

std::vector<PageDigest> KvManager::shared_keys_of(std::span<const int32_t> prompt, int64_t max_pages) const {
  const size_t ps = (size_t)cfg_.page_size;
  std::vector<PageDigest> keys((size_t)max_pages);
  PageDigest key = SharedPageKeys::root();
  for (int64_t i = 0; i < max_pages; ++i) {
    key = shared_keys_->next(key, prompt.subspan((size_t)i * ps, ps));
    keys[(size_t)i] = key;
  }
  return keys;
}

bool KvManager::page_local(uint64_t chain, int64_t page, int64_t next_q) const {
  if (chain == kNoPrefixChain) return false;
  for (int l = 0; l < cfg_.n_layer; ++l)
    if (page_needed(l, page, next_q) && pages_.lookup({chain, l}) < 0 && !in_tier({chain, l})) return false;
  return true;
}

int64_t KvManager::import_shared_pages(std::span<const int32_t> prompt, std::vector<uint64_t>& chains,
                                       const std::vector<PageDigest>& keys) {
  const int64_t max_pages = (int64_t)chains.size();
  int64_t first = 0;
  // Local when every layer that needs it at the prompt's end has it (a
  // windowed layer's old pages are not fetched again).
  const int64_t next_q = max_pages * cfg_.page_size;
  while (first < max_pages && page_local(chains[(size_t)first], first, next_q)) ++first;
  if (first == max_pages) return 0;
  // The prompt's resident pages are held while importing, so the pages the
  // import allocates never evict them.
  std::vector<int32_t> held;
  for (int64_t i = 0; i < first; ++i)
    for (int l = 0; l < cfg_.n_layer; ++l)
      if (const int32_t page = pages_.lookup({chains[(size_t)i], l}); page >= 0) {
        pages_.retain(page);
        held.push_back(page);
      }
  // Whole pages (every layer) that fit beside two pages per layer for the
  // rest of the prompt; evicting other cached pages is fine, evicting the
  // pages just imported is not (they are the most recently parked).
  const int64_t room = ((int64_t)pages_.n_free() - 2 * cfg_.n_layer) / cfg_.n_layer;
  const int64_t want = std::min(max_pages - first, room);
  int64_t imported = 0;
  if (want > 0) {
    std::vector<std::string> names;
    names.reserve((size_t)want);
    for (int64_t i = first; i < first + want; ++i) names.push_back(shared_keys_->name(keys[(size_t)i]));
    const std::vector<std::string> values = shared_->lookup_prefix(names);
    const size_t ps = (size_t)cfg_.page_size;
    const size_t image_bytes = (size_t)pool_->page_image_bytes();
    for (size_t j = 0; j < values.size(); ++j) {
      const int64_t i = first + (int64_t)j;
      const std::span<const int32_t> tokens = prompt.subspan((size_t)i * ps, ps);
      const auto payload = decode_shared_page(shared_layout_, keys[(size_t)i], tokens, values[j]);
      if (!payload.ok()) {
        shared_->reject(names[j]);
        break;
      }
      const uint64_t parent = i == 0 ? kPrefixChainRoot : chains[(size_t)i - 1];
      const uint64_t chain = chains_.intern(parent, tokens);
      chains[(size_t)i] = chain;
      for (int l = 0; l < cfg_.n_layer; ++l) {
        if (pages_.lookup({chain, l}) >= 0) continue;
        std::vector<int32_t> page;
        if (!pages_.allocate(1, page).ok()) break;  // fits: counted above
        const std::span<const uint8_t> layer = payload->subspan((size_t)l * shared_layout_.layer_bytes,
                                                                 (size_t)shared_layout_.layer_bytes);
        pool_->load_page(page[0], layer.first(image_bytes));
        if (summaries_) summaries_->load_page(page[0], layer.subspan(image_bytes));
        pages_.register_page({chain, l}, page[0]);
        pages_.release(page[0]);  // cached, unreferenced: the prefix lookup takes it
      }
      ++imported;
    }
    shared_->counters().hits += imported;
  }
  for (const int32_t page : held) pages_.release(page);
  return imported;
}

void KvManager::publish_shared_page(const Sequence& s, int64_t index, std::span<const int32_t> tokens) {
  SharedTierCounters& counters = shared_->counters();
  std::vector<int32_t> pages((size_t)cfg_.n_layer);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const std::vector<int32_t>& table = s.layers[l].pages.table;
    pages[(size_t)l] = index < (int64_t)table.size() ? table[(size_t)index] : -1;
    if (pages[(size_t)l] < 0) return;  // a layer released it already: nothing whole to share
  }
  if (!counters.up) {
    ++counters.dropped;
    return;
  }
  const size_t image_bytes = (size_t)pool_->page_image_bytes();
  std::vector<uint8_t> payload(shared_layout_.payload_bytes());  // [n_layer, layer_bytes]
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const std::span<uint8_t> layer(payload.data() + (size_t)l * shared_layout_.layer_bytes,
                                   (size_t)shared_layout_.layer_bytes);
    pool_->save_page(pages[(size_t)l], layer.first(image_bytes));
    if (summaries_) summaries_->save_page(pages[(size_t)l], layer.subspan(image_bytes));
  }
  shared_->publish(shared_keys_->name(s.shared_chain),
                   encode_shared_page(shared_layout_, s.shared_chain, tokens, payload));
}

}  // namespace stride
