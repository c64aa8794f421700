#pragma once
// The top-k hot set (policy topk:...,resident=N with an offload tier): a
// top-k layer keeps at most N pages of a sequence in the KV pool and the
// others in owned tier slots, moving them as the selection asks
// (topk_hot_set.cpp explains how). The KV manager holds one TopkHotSet when
// it has a tier and page summaries, keeps a HotSetLayer beside each layer's
// PageTable, and calls it from prepare() (the spare bound), select() (plan),
// truncate() and remove_sequence(); nothing else touches the hot set's state.
#include <cstdint>
#include <span>
#include <vector>

#include "attention/plan.h"
#include "attention/policy.h"
#include "core/status.h"
#include "kv/page_table.h"
#include "kv/prefix_index.h"

namespace stride {

class HostTier;
class WorkerScratch;
class KvPool;
class PageManager;
class PageSummaries;
struct KvStats;

// One layer's hot-set state of one sequence; empty unless the layer is a
// hot-set layer that selected once. A page in the tier has table[L] == -1.
struct HotSetLayer {
  std::vector<uint64_t> tier_key;    // [logical pages] owned tier slot with the page image, 0: none
  std::vector<int64_t> last_pick;    // [logical pages] step that last read the page
  std::vector<int64_t> prefetched;   // [logical pages] step that last prefetched it
  std::vector<float> cold_sums;      // [logical pages, n_kv_heads, 2, head_dim_k] key summaries
  std::vector<PrefixKey> prefix_key;  // [logical pages] its prefix-cache key, where prefix_known
  std::vector<uint8_t> prefix_known;  // [logical pages] 1: left the prefix index when it moved out
  int64_t pages_in_tier = 0;         // logical pages whose image is only in the tier
  int64_t step = 0;                  // selections on this layer

  // Logical page L has an owned tier slot (it may be back in the pool too).
  bool has_slot(int64_t L) const { return (size_t)L < tier_key.size() && tier_key[(size_t)L] != 0; }
};

// What the hot set works on; all owned by the KV manager, which outlives it.
struct TopkHotSetParts {
  int page_size = 0;
  int n_kv_heads = 0;
  int head_dim_k = 0;
  KvPool& pool;
  PageManager& pages;
  PageSummaries& summaries;
  HostTier& tier;
  KvStats& counters;  // topk_* and peak_pages_used are updated here
};

class TopkHotSet {
 public:
  explicit TopkHotSet(const TopkHotSetParts& parts);
  TopkHotSet(const TopkHotSet&) = delete;
  TopkHotSet& operator=(const TopkHotSet&) = delete;

  // Whether a layer with policy p runs a hot set (given a tier and summaries).
  static bool applies(const PolicySpec& p) { return p.kind == PolicyKind::TopK && p.resident > 0; }

  // Pages the layer would hold once prepare() added the pages for n_new more
  // tokens to a sequence of `length` tokens: what its moves could need slots for.
  int64_t held_after_reserve(const PageTable& pt, int64_t length, int n_new) const;
  // Whether the tier may refuse a move when the batch's hot-set layers could
  // need `could_need` new owned slots (decided once per batch).
  bool tier_may_refuse(int64_t could_need) const;
  // What plan() may need from the pool on this layer this step, bounded
  // before the queries exist (prepare() reserves it).
  int64_t spare_bound(const PolicySpec& p, const PageTable& pt, const HotSetLayer& hs, int64_t length,
                      int n_new, bool tier_may_refuse) const;
  // Selects, moves cold pages out, brings the picks in (pages from `spares`
  // first), prefetches the next likely picks. length: tokens committed.
  Expected<AttentionPlan> plan(const PolicySpec& p, PageTable& pt, HotSetLayer& hs, int64_t length,
                               int64_t kv_len, const float* q, int n_new, int n_head, float scale,
                               std::vector<int32_t>& spares, WorkerScratch& scratch);
  // The sequence is cut back to its first `first` logical pages (truncate,
  // a step's rejected tail), before pt's table is shortened: the owned slots
  // of the pages past them go (as in drop_tier), whether those pages are in
  // the tier or back in the pool, and their state is forgotten, so a page
  // written again at such an index is saved afresh when it next moves out.
  void drop_pages_from(const PageTable& pt, HotSetLayer& hs, int64_t first);
  // The sequence ends: frees the layer's owned slots (or hands those of
  // prefix pages to the tier's cache space).
  void drop_tier(HotSetLayer& hs);
  // A fork's state of one layer (`to`, empty before): the parent's selection
  // history and key summaries, and an owned slot of its own for each page
  // whose image is only in the tier (a page back in the pool is shared, as
  // any full page, and saved afresh if the child moves it out). A refused
  // slot fails the call; `to` then holds the slots made so far (drop_tier).
  Status fork_layer(const PageTable& pt, const HotSetLayer& from, HotSetLayer& to);

 private:
  // Moves one page out; *freed: its pool page went back to the pool (it was
  // not shared with another sequence).
  Status offload(PageTable& pt, HotSetLayer& hs, int64_t L, bool* freed);  // by logical page
  Status restore(PageTable& pt, HotSetLayer& hs, int64_t L, std::vector<int32_t>& spares);
  // Frees logical page L's owned slot, or hands it to the tier's cache space
  // when the page left the prefix index; L has a slot.
  void release_slot(HotSetLayer& hs, size_t L);
  size_t summary_floats() const { return (size_t)n_kv_heads_ * 2 * head_dim_k_; }  // one page's

  int page_size_, n_kv_heads_, head_dim_k_;
  KvPool& pool_;
  PageManager& pages_;
  PageSummaries& summaries_;
  HostTier& tier_;
  KvStats& counters_;
  std::vector<uint8_t> slot_image_;  // [tier slot bytes] scratch for moving a page out
  uint64_t next_key_ = 1;            // owned tier keys: a counter, 0 means none
};

}  // namespace stride
