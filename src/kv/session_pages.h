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
class SequenceTable;
class TopkHotSet;
struct KvStats;

class SessionPages {
 public:
  using SeqId = int32_t;
  // All outlive this; summaries: null without a top-k layer; hot: null without a top-k hot set.
  SessionPages(const KvManagerConfig& cfg, KvPool& pool, PageManager& pages, PageSummaries* summaries,
               OffloadTier& offload, PrefixChains& chains, SequenceTable& seqs, const TopkHotSet* hot,
               KvStats& counters)
      : cfg_(cfg), pool_(pool), pages_(pages), summaries_(summaries), offload_(offload), chains_(chains),
        seqs_(seqs), hot_(hot), counters_(counters) {}
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

  // A live sequence's pages copied out whole, the partly written last page
  // included (kv_sequence_image.cpp). Unsupported with a top-k hot set.
  Expected<KvSequenceImage> export_sequence(SeqId seq);
  // A new sequence on copies of an exported one's pages, as long as it was:
  // each layer takes the pages its policy keeps for the next query. The
  // exporting manager must have the same KV layout and, when this one has
  // top-k layers, key summaries on every layer (summarize_every_layer);
  // summaries are not rebuilt from stored keys, which storage rounded.
  // ResourceExhausted when the pool cannot take the pages; nothing changes
  // on error.
  Expected<SeqId> import_sequence(const KvSequenceImage& image);

 private:
  // Bytes of one page in a snapshot (pool image + top-k summary).
  int64_t page_bytes() const;

  const KvManagerConfig& cfg_;
  KvPool& pool_;
  PageManager& pages_;
  PageSummaries* summaries_;
  OffloadTier& offload_;
  PrefixChains& chains_;
  SequenceTable& seqs_;
  const TopkHotSet* hot_;
  KvStats& counters_;
};

}  // namespace stride
