#pragma once
// The shared tier (kv/shared/shared_page_store.h): full prefix pages go to a
// store other replicas read (Redis), and a prompt whose prefix misses locally
// takes the pages the store holds before computing the rest. An imported page
// becomes an ordinary cached page (registered under its exact prefix id, no
// sequence referencing it), so the usual prefix lookup (prefix_cache.h) takes
// it; every value is verified first (decode_shared_page), so a wrong or
// damaged value is a miss, never a wrong page. Keys are chained with
// HMAC-SHA256(secret) (kv/shared/shared_page_codec.h).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "kv/kv_config.h"
#include "kv/sequence_table.h"
#include "kv/shared/shared_page_codec.h"
#include "kv/shared/shared_page_store.h"

namespace stride {

class KvPool;
class OffloadTier;
class PageManager;
class PageSummaries;
class PrefixChains;
struct KvStats;

// What the shared tier reads and writes; all outlive it.
struct SharedTierParts {
  const KvManagerConfig& cfg;
  KvPool& pool;
  PageManager& pages;
  PageSummaries* summaries;  // null without a top-k layer
  const OffloadTier& offload;
  PrefixChains& chains;
};

class SharedTier {
 public:
  // InvalidArgument without a store, without the prefix cache or with a
  // secret under 16 characters.
  static Expected<std::unique_ptr<SharedTier>> create(const SharedTierParts& parts, std::unique_ptr<SharedPageStore> store,
                                                      const std::string& secret, const std::string& key_prefix);
  SharedTier(const SharedTierParts& parts, std::unique_ptr<SharedPageStore> store, const std::string& secret,
             const std::string& key_prefix);
  SharedTier(const SharedTier&) = delete;
  SharedTier& operator=(const SharedTier&) = delete;

  const SharedPageStore* store() const { return store_.get(); }
  // [max_pages] the shared keys of the prompt's first max_pages pages.
  std::vector<PageDigest> keys_of(std::span<const int32_t> prompt, int64_t max_pages) const;
  PageDigest next_key(const PageDigest& parent, std::span<const int32_t> tokens) const {
    return keys_->next(parent, tokens);
  }
  // Imports the pages after the local prefix that the store holds as cached
  // (unreferenced) pool pages, updating chains; returns the pages imported.
  int64_t import_pages(std::span<const int32_t> prompt, std::vector<uint64_t>& chains,
                       const std::vector<PageDigest>& keys);
  // Publishes logical page `index` of s (every layer) under s.shared_chain.
  void publish(const KvSequence& s, int64_t index, std::span<const int32_t> tokens);
  void add_to(KvStats& st) const;  // the store's shared_tier_* counters

 private:
  // Every layer whose policy needs logical page `page` for the query at
  // next_q has it in the pool or the offload tier.
  bool page_local(uint64_t chain, int64_t page, int64_t next_q) const;

  SharedTierParts parts_;
  std::unique_ptr<SharedPageStore> store_;
  std::unique_ptr<SharedPageKeys> keys_;
  SharedPageLayout layout_;
};

}  // namespace stride
