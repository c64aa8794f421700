// Prefix caching of the KV manager: full pages are registered per (prefix id,
// layer) as they are committed (the id names the exact tokens: PrefixChains); a new sequence starts on the longest
// prefix of whole pages that every layer can use. A windowed layer only needs
// the pages its policy keeps for the next query (vLLM's rule for sliding
// windows), so pages it released long ago need not be cached any more.
#include <algorithm>

#include "kv/kv_manager.h"

namespace stride {

void KvManager::register_full_pages(Sequence& s, const int32_t* ids, int n_new) {
  if (!cfg_.prefix_cache || !s.chain_known || n_new <= 0) return;
  if (!ids) {
    // Tokens of unknown identity: no later page can be keyed.
    s.chain_known = false;
    s.open_ids = {};
    return;
  }
  const int ps = cfg_.page_size;
  s.open_ids.insert(s.open_ids.end(), ids, ids + n_new);
  size_t done = 0;
  while (s.open_ids.size() - done >= (size_t)ps) {
    const std::span<const int32_t> page_ids(s.open_ids.data() + done, (size_t)ps);
    s.chain = chains_.intern(s.chain, page_ids);
    // Shared only when this sequence computed the page the cache holds (a
    // page found cached was published by whoever computed it).
    const bool computed_here = s.hashed_pages < s.layers[0].pages.size() &&
                               pages_.lookup({s.chain, 0}) < 0;
    for (int l = 0; l < cfg_.n_layer; ++l) {
      const std::vector<int32_t>& table = s.layers[l].pages.table;
      // A page shared from the cache is registered already; a duplicate
      // computed beside it keeps the first registration.
      if (s.hashed_pages < (int64_t)table.size() && table[s.hashed_pages] >= 0)
        pages_.register_page({s.chain, l}, table[s.hashed_pages]);
    }
    if (shared_) {
      s.shared_chain = shared_keys_->next(s.shared_chain, page_ids);
      if (computed_here) publish_shared_page(s, s.hashed_pages, page_ids);
    }
    ++s.hashed_pages;
    done += (size_t)ps;
  }
  s.open_ids.erase(s.open_ids.begin(), s.open_ids.begin() + (std::ptrdiff_t)done);
}

// Does the layer's policy keep any slot of logical page `page` for the query at next_q?
bool KvManager::page_needed(int layer, int64_t page, int64_t next_q) const {
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int64_t first = page * cfg_.page_size;
  // Latest slots first: the ones most likely kept.
  for (int64_t pos = first + cfg_.page_size - 1; pos >= first; --pos)
    if (policy_keeps(policy, pos, next_q)) return true;
  return false;
}

bool KvManager::prefix_usable(const std::vector<uint64_t>& chains, int64_t n_pages) const {
  const int64_t next_q = n_pages * cfg_.page_size;
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = n_pages - 1; i >= 0; --i)  // the deepest page fails first
      if (page_needed(l, i, next_q) && pages_.lookup({chains[(size_t)i], l}) < 0 &&
          !in_tier({chains[(size_t)i], l}))
        return false;
  return true;
}

// All or nothing: when the pool cannot take the pages to restore from the
// tier, ResourceExhausted and nothing changes.
Status KvManager::take_prefix(Sequence& s, const std::vector<uint64_t>& chains, int64_t n_pages) {
  const int64_t next_q = n_pages * cfg_.page_size;
  std::vector<PrefixKey> cold;        // needed pages to restore from the tier
  std::vector<size_t> cold_slot;      // their place: layer * n_pages + logical page
  int32_t revived = 0;                // resident pages no sequence references yet
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = 0; i < n_pages; ++i) {
      if (!page_needed(l, i, next_q)) continue;
      const PrefixKey key{chains[(size_t)i], l};
      const int32_t page = pages_.lookup(key);
      if (page >= 0) {
        revived += pages_.ref_count(page) == 0;
      } else {
        cold.push_back(key);
        cold_slot.push_back((size_t)l * (size_t)n_pages + (size_t)i);
      }
    }
  // Retaining the resident pages takes them off the reclaimable list first.
  const int32_t room = pages_.n_free() - revived;
  if ((int64_t)cold.size() > room)
    return ResourceExhausted("KV pool exhausted: restoring " + std::to_string(cold.size()) +
                             " offloaded prefix pages needs as many free pages, " +
                             std::to_string(std::max(room, 0)) + " free of " + std::to_string(pages_.n_total()));
  // Pinned before allocating: evictions the allocation causes go to the tier
  // and must not push out the slots about to be restored.
  std::vector<PinnedPage> pinned;
  if (!cold.empty()) {
    pinned = pin_tier_pages(cold);
    if (pinned.size() != cold.size()) return Internal("offload tier: a prefix page vanished during lookup");
  }
  for (int l = 0; l < cfg_.n_layer; ++l) {
    PageTable& pt = s.layers[l].pages;
    pt.table.assign((size_t)n_pages, -1);  // pages the policy no longer needs stay -1
    pt.held = 0;
    pt.scan_from = 0;
    for (int64_t i = 0; i < n_pages; ++i) {
      if (!page_needed(l, i, next_q)) continue;
      ++pt.held;  // cold ones too: filled below
      const int32_t page = pages_.lookup({chains[(size_t)i], l});
      if (page < 0) continue;
      pages_.retain(page);  // revives it if no sequence referenced it
      pt.table[(size_t)i] = page;
    }
  }
  std::vector<int32_t> fresh;
  const Status got = pages_.allocate((int32_t)cold.size(), fresh);  // fits: checked above
  if (!got.ok()) {
    for (LayerState& ls : s.layers)
      for (int32_t& page : ls.pages.table)
        if (page >= 0) pages_.release(page);
    s.layers.assign((size_t)cfg_.n_layer, LayerState{});
    return got;
  }
  for (size_t c = 0; c < cold.size(); ++c) {
    restore_page(cold[c], pinned[c], fresh[c]);
    s.layers[cold_slot[c] / (size_t)n_pages].pages.table[cold_slot[c] % (size_t)n_pages] = fresh[c];
  }
  s.length = next_q;
  s.chain = chains[(size_t)n_pages - 1];
  s.hashed_pages = n_pages;
  s.open_ids.clear();
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return Status::Ok();
}

Expected<KvManager::PrefixHit> KvManager::add_sequence_with_prefix(std::span<const int32_t> prompt) {
  STRIDE_ASSIGN_OR_RETURN(const SeqId id, add_sequence());
  PrefixHit hit;
  hit.seq = id;
  if (!cfg_.prefix_cache) return hit;
  ++counters_.prefix_queries;
  counters_.prefix_query_tokens += (int64_t)prompt.size();
  // The last prompt token is always computed: its logits are needed.
  const int ps = cfg_.page_size;
  const int64_t max_pages = prompt.empty() ? 0 : ((int64_t)prompt.size() - 1) / ps;
  // Exact ids of the prompt's page prefixes; kNoPrefixChain from the first
  // page no registered prefix has (no page is registered under it, so every
  // lookup below misses).
  std::vector<uint64_t> chains((size_t)max_pages);
  uint64_t chain = kPrefixChainRoot;
  for (int64_t i = 0; i < max_pages; ++i) {
    chain = chains_.find(chain, prompt.subspan((size_t)(i * ps), (size_t)ps));
    chains[(size_t)i] = chain;
  }
  std::vector<PageDigest> shared_keys;
  if (shared_ && max_pages > 0) {
    shared_keys = shared_keys_of(prompt, max_pages);
    import_shared_pages(prompt, chains, shared_keys);
  }
  count_tier_misses(chains, max_pages);
  for (int64_t n = max_pages; n >= 1; --n) {
    if (!prefix_usable(chains, n)) continue;
    const Status taken = take_prefix(seqs_[id], chains, n);
    if (!taken.ok()) {
      seqs_[id] = Sequence{};  // the new sequence goes again; nothing else changed
      return taken;
    }
    if (shared_) seqs_[id].shared_chain = shared_keys[(size_t)n - 1];
    hit.reused_tokens = n * ps;
    ++counters_.prefix_hits;
    counters_.prefix_hit_tokens += hit.reused_tokens;
    break;
  }
  return hit;
}

}  // namespace stride
