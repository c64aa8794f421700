#include "kv/prefix_cache.h"

#include <algorithm>

#include "kv/kv_pages_needed.h"
#include "kv/kv_stats.h"
#include "kv/offload_tier.h"
#include "kv/page_manager.h"
#include "kv/shared_tier.h"

namespace stride {

PrefixCache::PrefixCache(const KvManagerConfig& cfg, PageManager& pages, OffloadTier& offload, size_t chain_capacity)
    : cfg_(cfg),
      pages_(pages),
      offload_(offload),
      chains_(chain_capacity, prefix_salt(kv_salt_text(cfg)), cfg.prefix_hash) {}

bool PrefixCache::needed(int layer, int64_t page, int64_t next_q) const {
  return page_needed(cfg_.layer_policies[(size_t)layer], cfg_.page_size, page, next_q);
}

void PrefixCache::count_query(int64_t n_tokens) {
  ++queries_;
  query_tokens_ += n_tokens;
}

std::vector<uint64_t> PrefixCache::find_chains(std::span<const int32_t> tokens, int64_t n_pages) {
  const int ps = cfg_.page_size;
  std::vector<uint64_t> chains((size_t)n_pages);
  uint64_t chain = kPrefixChainRoot;
  for (int64_t i = 0; i < n_pages; ++i) {
    chain = chains_.find(chain, tokens.subspan((size_t)(i * ps), (size_t)ps));
    chains[(size_t)i] = chain;
  }
  return chains;
}

void PrefixCache::count_tier_misses(const std::vector<uint64_t>& chains, int64_t n_pages) {
  if (!offload_.host()) return;
  const int64_t next_q = n_pages * cfg_.page_size;
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = 0; i < n_pages; ++i) {
      const PrefixKey key{chains[(size_t)i], l};
      if (needed(l, i, next_q) && pages_.lookup(key) < 0 && !offload_.contains(key)) offload_.count_miss();
    }
}

std::vector<uint64_t> PrefixCache::shard_chains(std::span<const int32_t> tokens, int64_t interned, int64_t n_pages) {
  const int ps = cfg_.page_size;
  std::vector<uint64_t> chains((size_t)n_pages);
  uint64_t chain = kPrefixChainRoot;
  for (int64_t i = 0; i < n_pages; ++i) {
    const std::span<const int32_t> page = tokens.subspan((size_t)(i * ps), (size_t)ps);
    chain = i < interned ? chains_.intern(chain, page) : chains_.find(chain, page);
    chains[(size_t)i] = chain;
  }
  return chains;
}

bool PrefixCache::usable(const std::vector<uint64_t>& chains, int64_t first_page, int64_t n_pages) const {
  const int64_t next_q = n_pages * cfg_.page_size;
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = n_pages - 1; i >= first_page; --i)  // the deepest page fails first
      if (needed(l, i, next_q) && pages_.lookup({chains[(size_t)i], l}) < 0 &&
          !offload_.contains({chains[(size_t)i], l}))
        return false;
  return true;
}

Expected<int64_t> PrefixCache::take_longest(KvSequence& s, const std::vector<uint64_t>& chains) {
  for (int64_t n = (int64_t)chains.size(); n >= 1; --n) {
    if (!usable(chains, 0, n)) continue;
    STRIDE_RETURN_IF_ERROR(take(s, chains, 0, n));
    ++hits_;
    hit_tokens_ += n * cfg_.page_size;
    return n;
  }
  return int64_t{0};
}

Status PrefixCache::take_run(KvSequence& s, const std::vector<uint64_t>& chains, int64_t first_page,
                             int64_t n_pages) {
  STRIDE_RETURN_IF_ERROR(take(s, chains, first_page, n_pages));
  if (n_pages > first_page) {
    ++hits_;
    hit_tokens_ += (n_pages - first_page) * cfg_.page_size;
  }
  return Status::Ok();
}

Status PrefixCache::take(KvSequence& s, const std::vector<uint64_t>& chains, int64_t first_page, int64_t n_pages) {
  const int64_t next_q = n_pages * cfg_.page_size;
  std::vector<PrefixKey> cold;        // needed pages to restore from the tier
  std::vector<size_t> cold_slot;      // their place: layer * n_pages + logical page
  int32_t revived = 0;                // resident pages no sequence references yet
  for (int l = 0; l < cfg_.n_layer; ++l)
    for (int64_t i = first_page; i < n_pages; ++i) {
      if (!needed(l, i, next_q)) continue;
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
    pinned = offload_.pin(cold);
    if (pinned.size() != cold.size()) return Internal("offload tier: a prefix page vanished during lookup");
  }
  for (int l = 0; l < cfg_.n_layer; ++l) {
    PageTable& pt = s.layers[(size_t)l].pages;
    pt.table.assign((size_t)n_pages, -1);  // pages the policy no longer needs stay -1
    pt.held = 0;
    pt.scan_from = first_page;  // nothing before it to release
    for (int64_t i = first_page; i < n_pages; ++i) {
      if (!needed(l, i, next_q)) continue;
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
    for (KvLayerState& ls : s.layers)
      for (int32_t& page : ls.pages.table)
        if (page >= 0) pages_.release(page);
    s.layers.assign((size_t)cfg_.n_layer, KvLayerState{});
    return got;
  }
  for (size_t c = 0; c < cold.size(); ++c) {
    offload_.restore_page(cold[c], pinned[c], fresh[c]);
    s.layers[cold_slot[c] / (size_t)n_pages].pages.table[cold_slot[c] % (size_t)n_pages] = fresh[c];
  }
  s.length = next_q;
  s.chain = n_pages > 0 ? chains[(size_t)n_pages - 1] : kPrefixChainRoot;
  s.hashed_pages = n_pages;
  s.open_ids.clear();
  return Status::Ok();
}

void PrefixCache::register_full_pages(KvSequence& s, const int32_t* ids, int n_new, SharedTier* shared) {
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
    const bool computed_here = s.hashed_pages < s.layers[0].pages.size() && pages_.lookup({s.chain, 0}) < 0;
    for (int l = 0; l < cfg_.n_layer; ++l) {
      const std::vector<int32_t>& table = s.layers[(size_t)l].pages.table;
      // A page shared from the cache is registered already; a duplicate
      // computed beside it keeps the first registration.
      if (s.hashed_pages < (int64_t)table.size() && table[(size_t)s.hashed_pages] >= 0)
        pages_.register_page({s.chain, l}, table[(size_t)s.hashed_pages]);
    }
    if (shared) {
      s.shared_chain = shared->next_key(s.shared_chain, page_ids);
      if (computed_here) shared->publish(s, s.hashed_pages, page_ids);
    }
    ++s.hashed_pages;
    done += (size_t)ps;
  }
  s.open_ids.erase(s.open_ids.begin(), s.open_ids.begin() + (std::ptrdiff_t)done);
}

void PrefixCache::add_to(KvStats& st) const {
  st.prefix_queries = queries_;
  st.prefix_query_tokens = query_tokens_;
  st.prefix_hits = hits_;
  st.prefix_hit_tokens = hit_tokens_;
}

}  // namespace stride
