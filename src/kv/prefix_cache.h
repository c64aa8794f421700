#pragma once
// The prefix cache: where KV pages are cached by the exact token prefix they
// hold, and where a new sequence takes the longest cached prefix. Full pages
// are registered per (prefix id, layer) as they are committed (the id names
// the exact tokens: PrefixChains); a prefix is usable when every layer has
// the pages its policy keeps for the next query (vLLM's rule for sliding
// windows), in the pool or in the offload tier (offload_tier.h), from which
// take() brings them back. The pages themselves and their reference counts
// are the page manager's (page_manager.h); this class owns the prefix ids.
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "kv/kv_config.h"
#include "kv/prefix_chains.h"
#include "kv/sequence_table.h"

namespace stride {

class OffloadTier;
class PageManager;
class SharedTier;
struct KvStats;

class PrefixCache {
 public:
  // cfg, pages and offload outlive this.
  PrefixCache(const KvManagerConfig& cfg, PageManager& pages, OffloadTier& offload, size_t chain_capacity);
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  bool enabled() const { return cfg_.prefix_cache; }
  // The prefix ids, for whoever names pages by them (sessions, the shared tier).
  PrefixChains& chains() { return chains_; }

  // Counts a lookup of a prompt of n_tokens tokens.
  void count_query(int64_t n_tokens);
  // [n_pages] the ids of the first n_pages whole pages of tokens; kNoPrefixChain
  // from the first page no registered prefix has.
  std::vector<uint64_t> find_chains(std::span<const int32_t> tokens, int64_t n_pages);
  // Counts, with a tier, the needed pages of the first n_pages that neither
  // the pool nor the tier holds.
  void count_tier_misses(const std::vector<uint64_t>& chains, int64_t n_pages);
  // Starts s (fresh) on the longest usable prefix of chains; the pages taken
  // (0: none). On error nothing changed besides s's tables.
  Expected<int64_t> take_longest(KvSequence& s, const std::vector<uint64_t>& chains);
  // One shard's run of a sequence spread by position (kv_shard_sequence.cpp):
  // [n_pages] the ids of the first n_pages pages of tokens, the first
  // `interned` made where unknown (the shard registers its pages under
  // them), the rest found as find_chains() does.
  std::vector<uint64_t> shard_chains(std::span<const int32_t> tokens, int64_t interned, int64_t n_pages);
  // Whether pages [first_page, n_pages) hold, on every layer, the pages its
  // policy keeps for the query at n_pages * page_size.
  bool run_usable(const std::vector<uint64_t>& chains, int64_t first_page, int64_t n_pages) const {
    return usable(chains, first_page, n_pages);
  }
  // Starts s (fresh, starting at first_page) on those pages, as take_longest
  // does from page 0; with n_pages == first_page it takes none, but s's
  // later full pages are registered under chains[first_page - 1].
  Status take_run(KvSequence& s, const std::vector<uint64_t>& chains, int64_t first_page, int64_t n_pages);
  // Registers the full pages s's n_new committed tokens (ids; null: unknown)
  // complete, and publishes those computed here to the shared tier (when given).
  void register_full_pages(KvSequence& s, const int32_t* ids, int n_new, SharedTier* shared);
  // prefix_queries, prefix_hits and their tokens.
  void add_to(KvStats& st) const;

 private:
  bool needed(int layer, int64_t page, int64_t next_q) const;
  bool usable(const std::vector<uint64_t>& chains, int64_t first_page, int64_t n_pages) const;
  // All or nothing: ResourceExhausted, nothing changed, when the pool cannot
  // take the pages to restore from the tier.
  // Pages before first_page stay not held (-1).
  Status take(KvSequence& s, const std::vector<uint64_t>& chains, int64_t first_page, int64_t n_pages);

  const KvManagerConfig& cfg_;
  PageManager& pages_;
  OffloadTier& offload_;
  PrefixChains chains_;  // exact ids of the token prefixes of registered pages
  int64_t queries_ = 0, query_tokens_ = 0, hits_ = 0, hit_tokens_ = 0;
};

}  // namespace stride
