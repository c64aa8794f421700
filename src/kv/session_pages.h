#pragma once
// Saved sessions: a prompt's pages leave through the prefix cache and come
// back into it. Going through the cache (rather than into one sequence's
// page tables) means a restored session is an ordinary prefix hit: the
// request that continues it is admitted, shares the pages by reference
// count and prefills only its suffix, exactly as after an earlier request
// with the same prompt, so its outputs are bit-identical to recomputing
// (docs/architecture.md, "Same input, same bits").
#include <cstdint>
#include <span>

#include "core/status.h"
#include "kv/kv_config.h"
#include "kv/kv_snapshot.h"

namespace stride {

class KvPool;
class OffloadTier;
class PageManager;
class PageSummaries;
class PrefixChains;

class SessionPages {
 public:
  // All outlive this; summaries: null without a top-k layer.
  SessionPages(const KvManagerConfig& cfg, KvPool& pool, PageManager& pages, PageSummaries* summaries,
               OffloadTier& offload, PrefixChains& chains)
      : cfg_(cfg), pool_(pool), pages_(pages), summaries_(summaries), offload_(offload), chains_(chains) {}
  SessionPages(const SessionPages&) = delete;
  SessionPages& operator=(const SessionPages&) = delete;

  // Copies the pages of the whole pages of `tokens` out of the prefix cache
  // (a sequence that just prefilled them holds them): for each layer the
  // pages its policy keeps for a query right after them (and one page
  // earlier, when `tokens` ends on a page boundary, where a hit stops).
  // NotFound when one was evicted.
  Expected<KvSnapshot> export_prefix(std::span<const int32_t> tokens);
  // Puts a snapshot's pages back into the prefix cache as unreferenced
  // cached pages, so the next prefix lookup of a prompt that starts with its
  // tokens takes them. Pages already cached are kept. All or nothing;
  // returns the pages loaded (0 with the prefix cache off).
  Expected<int64_t> import_prefix(const KvSnapshot& snap);

 private:
  // Bytes of one page in a snapshot (pool image + top-k summary).
  int64_t page_bytes() const;

  const KvManagerConfig& cfg_;
  KvPool& pool_;
  PageManager& pages_;
  PageSummaries* summaries_;
  OffloadTier& offload_;
  PrefixChains& chains_;
};

}  // namespace stride
