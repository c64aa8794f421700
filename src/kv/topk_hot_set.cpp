// The top-k hot set of the KV manager (policy topk:...,resident=N with an
// offload tier). A top-k layer reads a few pages per step but may need any of
// them later, so without a limit every page stays in the pool and the pool
// grows with the context. With resident=N a layer keeps at most N pages of a
// sequence in the pool; the others live in the tier:
//
//   * Every select() picks pages over all of them: a page in the tier keeps
//     its key summary in RAM (HotSetLayer::cold_sums), so it is scored exactly
//     as if it were in the pool and the selection does not change.
//   * Pages the selection picked that are in the tier come back into fresh
//     pool pages (bit-exact page images, read through a PinnedPage) before the
//     kernel runs: into pages prepare() reserved for the step (spare_pages), so
//     a selection never finds the pool full. To make room first, the least recently picked pages that
//     are neither sinks, nor in the local window of the step's first query,
//     nor picked by this step move to the tier and their pool pages are freed.
//     After the call a layer holds at most max(N, |sinks ∪ window ∪ picks|)
//     pages: the window reaches from the first query's local window to the
//     last page written, and picks are the union over query blocks and kv heads.
//   * The groups ranked right after the cut (kPrefetchGroups per query block
//     and kv head) are the likely picks of the next step; their tier slots
//     are prefetched (madvise WILLNEED on a file-backed tier).
//
// Full pages never change, so a page keeps its tier slot while it is back in
// the pool: moving it out again only frees its pool page. A page registered
// in the prefix cache leaves the prefix index when it moves out (parked, it
// would keep its pool page); when the sequence ends its slot passes to the
// tier's Cache space under its prefix key, so a later prompt can reuse it
// like any evicted prefix page (one slot per page, no second copy). Top-k slots are
// TierSpace::Owned: the tier never evicts them (losing one would lose keys
// no recompute could bring back). When the tier has no slot left for a new
// page, the put is refused with ResourceExhausted, the page stays in the
// pool (the hot set then exceeds N) and topk_offload_refused counts it.
// drop_tier frees the slots (or hands them to the cache space, above).
#include "kv/topk_hot_set.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "attention/topk_selector.h"
#include "kv/kv_stats.h"
#include "kv/page_manager.h"
#include "kv/store/host_tier.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

namespace {
constexpr int kPrefetchGroups = 4;  // groups ranked after the cut to prefetch, per block and kv head
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

TopkHotSet::TopkHotSet(const TopkHotSetParts& parts)
    : page_size_(parts.page_size),
      n_kv_heads_(parts.n_kv_heads),
      head_dim_k_(parts.head_dim_k),
      pool_(parts.pool),
      pages_(parts.pages),
      summaries_(parts.summaries),
      tier_(parts.tier),
      counters_(parts.counters),
      slot_image_((size_t)parts.tier.slot_bytes()) {}

int64_t TopkHotSet::held_after_reserve(const PageTable& pt, int64_t length, int n_new) const {
  const int64_t n_logical = ceil_div(length + n_new, page_size_);
  return pt.held + std::max<int64_t>(0, n_logical - pt.size());
}

// A move out fails when the page has no tier slot yet and the tier has no
// room for another owned slot: at most every page the hot-set layers hold
// could need one.
bool TopkHotSet::tier_may_refuse(int64_t could_need) const {
  const HostTierStats ts = tier_.stats();
  return could_need > ts.slots_total - ts.slots_owned;
}

// The pool pages plan() may take on a hot-set layer this step. It brings
// back at most `bring` pages (picks by score now in the tier), after moving
// out least recently picked pages until it has freed enough to stay within
// max(N, sinks + window + picks); a move frees nothing when the tier refuses
// it or another sequence shares the page ("risky"). So it needs at most
//   min(bring, max(0, hold - held) + risky)
// pages beyond those its moves free, and prepare() reserves exactly that:
// select() never finds the pool empty.
int64_t TopkHotSet::spare_bound(const PolicySpec& p, const PageTable& pt, const HotSetLayer& hs, int64_t length,
                                int n_new, bool tier_may_refuse) const {
  if (hs.pages_in_tier == 0) return 0;
  const int ps = page_size_;
  const int64_t n_logical = ceil_div(length + n_new, ps);
  const int64_t held = held_after_reserve(pt, length, n_new);
  int64_t picks = 0;  // summed over the step's query blocks and kv heads
  const int qb = policy_q_block(p, n_new);
  for (int q = 0; q < n_new; q += qb) {
    const int64_t q_first = length + q, q_last = q_first + std::min(qb, n_new - q) - 1;
    const TopkBlockBudget b = topk_block_budget(p, ps, n_logical, q_first, q_last);
    picks += (int64_t)n_kv_heads_ * (b.keep - b.n_fixed) * b.geo.group_pages;
  }
  const int64_t bring = std::min(hs.pages_in_tier, picks);
  // Sinks and the first query's window are never moved (as in plan).
  const TopkGeometry geo = topk_geometry(p, ps, n_logical, length);
  const int64_t sink_end = std::min(n_logical, geo.n_sink * geo.group_pages);
  const int64_t local_from = std::min(n_logical, geo.local_from * geo.group_pages);
  const int64_t fixed = sink_end + (n_logical - std::max(local_from, sink_end));
  const int64_t hold = std::max<int64_t>(p.resident, std::min(n_logical, fixed + picks));
  int64_t risky = 0;
  const int64_t cold_end = std::min<int64_t>({local_from, length / ps, pt.size()});
  for (int64_t L = sink_end; L < cold_end; ++L) {
    const int32_t page = pt.table[(size_t)L];
    if (page < 0) continue;
    risky += pages_.ref_count(page) > 1 || (tier_may_refuse && !hs.has_slot(L));
  }
  return std::min(bring, std::max<int64_t>(0, hold - held) + risky);
}

Expected<AttentionPlan> TopkHotSet::plan(const PolicySpec& policy, PageTable& pt, HotSetLayer& hs, int64_t length,
                                         int64_t kv_len, const float* q, int n_new, int n_head, float scale,
                                         std::vector<int32_t>& spares, WorkerScratch& scratch) {
  const int ps = page_size_;
  const size_t n_logical = pt.table.size();
  hs.tier_key.resize(n_logical, 0);
  hs.last_pick.resize(n_logical, -1);
  hs.prefetched.resize(n_logical, -1);
  hs.cold_sums.resize(n_logical * summary_floats());
  hs.prefix_key.resize(n_logical);
  hs.prefix_known.resize(n_logical, 0);
  ++hs.step;

  const TopkColdPages cold{&hs.tier_key, hs.cold_sums.data()};
  const TopkSelection sel = select_topk(policy, pt.table, ps, kv_len, length, n_new, policy_q_block(policy, n_new),
                                        summaries_, q, n_head, n_kv_heads_, &cold, kPrefetchGroups, scale,
                                        &scratch);

  std::vector<uint8_t> picked(n_logical, 0);  // [logical pages]
  std::vector<int64_t> bring;                 // picked pages now in the tier
  for (const int64_t L : sel.pages) {
    if (picked[(size_t)L]) continue;
    picked[(size_t)L] = 1;
    hs.last_pick[(size_t)L] = hs.step;
    if (pt.table[(size_t)L] < 0) bring.push_back(L);
  }

  // Room first: move out the least recently picked pages the step does not need.
  const int64_t over = pt.held + (int64_t)bring.size() - policy.resident;
  if (over > 0) {
    const TopkGeometry geo = topk_geometry(policy, ps, (int64_t)n_logical, length);
    const int64_t sink_end = geo.n_sink * geo.group_pages;
    // Pages before the first query's window are whole and committed.
    const int64_t cold_end = std::min(geo.local_from * geo.group_pages, length / ps);
    std::vector<int64_t> candidates;
    for (int64_t L = sink_end; L < cold_end; ++L)
      if (pt.table[(size_t)L] >= 0 && !picked[(size_t)L]) candidates.push_back(L);
    std::sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) {
      return std::pair(hs.last_pick[(size_t)a], a) < std::pair(hs.last_pick[(size_t)b], b);
    });
    // Until `over` pool pages are free again; a refused page stays (counted)
    // and the next is tried, as a page that has its slot already moves freely.
    int64_t freed = 0;
    for (size_t i = 0; i < candidates.size() && freed < over; ++i) {
      bool page_freed = false;
      if (offload(pt, hs, candidates[i], &page_freed).ok()) freed += page_freed;
    }
  }
  for (const int64_t L : bring) STRIDE_RETURN_IF_ERROR(restore(pt, hs, L, spares));

  // Next step's likely picks: warm their tier slots now.
  std::vector<uint64_t> keys;
  for (const int64_t L : sel.next_pages) {
    if (pt.table[(size_t)L] >= 0 || hs.tier_key[(size_t)L] == 0 || hs.prefetched[(size_t)L] == hs.step) continue;
    hs.prefetched[(size_t)L] = hs.step;
    keys.push_back(hs.tier_key[(size_t)L]);
  }
  if (!keys.empty()) counters_.topk_pages_prefetched += tier_.prefetch(keys, TierSpace::Owned);
  return topk_plan(sel, pt.table, ps, kv_len);
}

Status TopkHotSet::offload(PageTable& pt, HotSetLayer& hs, int64_t L, bool* freed) {
  const int32_t page = pt.table[(size_t)L];
  if (freed) *freed = false;
  if (page < 0) return Status::Ok();
  if (hs.tier_key[(size_t)L] == 0) {
    // Slot: page image (K, V, scales, positions), then the page's summaries.
    const std::span<uint8_t> image(slot_image_);
    const int64_t page_bytes = pool_.page_image_bytes();
    pool_.save_page(page, image.first((size_t)page_bytes));
    summaries_.save_page(page, image.subspan((size_t)page_bytes));
    const uint64_t key = next_key_++;
    const Status put = tier_.put(key, image, TierSpace::Owned);
    if (!put.ok()) {
      ++counters_.topk_offload_refused;
      return put;
    }
    hs.tier_key[(size_t)L] = key;
  }
  const size_t sum_floats = summary_floats();
  std::memcpy(hs.cold_sums.data() + (size_t)L * sum_floats, summaries_.min(page, 0), sum_floats * sizeof(float));
  // A registered page leaves the prefix index rather than staying parked in
  // the pool (which would then grow); its slot joins the tier's cache space
  // under that key when the sequence ends (drop_tier).
  if (freed) *freed = pages_.ref_count(page) == 1;
  PrefixKey key;
  if (pages_.release_forget(page, &key)) {
    hs.prefix_key[(size_t)L] = key;
    hs.prefix_known[(size_t)L] = 1;
  }
  pt.unmap(L);
  ++hs.pages_in_tier;
  ++counters_.topk_pages_offloaded;
  return Status::Ok();
}

// Into a page prepare() reserved for this layer, else one this layer's moves
// just freed (spare_bound counts on no more); failing both, the step fails
// with a Status (a selected page is never silently skipped).
Status TopkHotSet::restore(PageTable& pt, HotSetLayer& hs, int64_t L, std::vector<int32_t>& spares) {
  std::optional<PinnedPage> slot = tier_.pin(hs.tier_key[(size_t)L], TierSpace::Owned);
  if (!slot) {
    ++counters_.topk_restore_failed;
    return Internal("top-k hot set: an owned tier slot is missing");  // owned slots are never evicted
  }
  int32_t page = -1;
  if (!spares.empty()) {
    page = spares.back();
    spares.pop_back();
  } else {
    std::vector<int32_t> got;
    if (!pages_.allocate(1, got).ok()) {
      ++counters_.topk_restore_failed;
      return Internal("top-k hot set: no pool page to bring a selected page back "
                      "(prepare() reserved fewer than the step needed)");
    }
    page = got[0];
  }
  const std::span<const uint8_t> image = slot->bytes();
  const int64_t page_bytes = pool_.page_image_bytes();
  pool_.load_page(page, image.first((size_t)page_bytes));
  summaries_.load_page(page, image.subspan((size_t)page_bytes));
  pt.map(L, page);
  --hs.pages_in_tier;
  ++counters_.topk_pages_restored;
  if (hs.prefetched[(size_t)L] == hs.step - 1) ++counters_.topk_prefetch_hits;
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return Status::Ok();
}

void TopkHotSet::release_slot(HotSetLayer& hs, size_t L) {
  // A page that left the prefix index stays in the tier as a cached prefix
  // page (evictable now), unless the pool holds that key again.
  const bool keep = L < hs.prefix_known.size() && hs.prefix_known[L] && pages_.lookup(hs.prefix_key[L]) < 0;
  if (!keep || !tier_.disown(hs.tier_key[L], prefix_key_id(hs.prefix_key[L])))
    tier_.erase(hs.tier_key[L], TierSpace::Owned);
  hs.tier_key[L] = 0;
}

void TopkHotSet::drop_pages_from(const PageTable& pt, HotSetLayer& hs, int64_t first) {
  const size_t keep = (size_t)std::max<int64_t>(0, first);
  for (size_t L = keep; L < hs.tier_key.size(); ++L) {
    if (hs.tier_key[L] == 0) continue;
    if (L >= pt.table.size() || pt.table[L] < 0) --hs.pages_in_tier;  // its image was only in the tier
    release_slot(hs, L);
  }
  // plan() sizes these to the table again, with a page's state starting afresh.
  if (hs.tier_key.size() > keep) {
    hs.tier_key.resize(keep);
    hs.last_pick.resize(keep);
    hs.prefetched.resize(keep);
    hs.cold_sums.resize(keep * summary_floats());
    hs.prefix_key.resize(keep);
    hs.prefix_known.resize(keep);
  }
}

Status TopkHotSet::fork_layer(const PageTable& pt, const HotSetLayer& from, HotSetLayer& to) {
  to.last_pick = from.last_pick;
  to.prefetched = from.prefetched;
  to.cold_sums = from.cold_sums;
  to.step = from.step;
  to.tier_key.assign(from.tier_key.size(), 0);
  to.prefix_key.assign(from.prefix_key.size(), PrefixKey{});
  to.prefix_known.assign(from.prefix_key.size(), 0);  // its slots are its own, never the cache's
  for (size_t L = 0; L < from.tier_key.size(); ++L) {
    if (from.tier_key[L] == 0 || (L < pt.table.size() && pt.table[L] >= 0)) continue;
    {
      std::optional<PinnedPage> slot = tier_.pin(from.tier_key[L], TierSpace::Owned);
      if (!slot) return Internal("top-k hot set: an owned tier slot is missing");  // owned slots are never evicted
      const std::span<const uint8_t> image = slot->bytes();
      if (image.size() != slot_image_.size()) return Internal("top-k hot set: a tier slot of another size");
      std::copy(image.begin(), image.end(), slot_image_.begin());
    }
    const uint64_t key = next_key_++;
    STRIDE_RETURN_IF_ERROR(tier_.put(key, slot_image_, TierSpace::Owned));
    to.tier_key[L] = key;
    ++to.pages_in_tier;
  }
  return Status::Ok();
}

void TopkHotSet::drop_tier(HotSetLayer& hs) {
  for (size_t L = 0; L < hs.tier_key.size(); ++L)
    if (hs.tier_key[L] != 0) release_slot(hs, L);
  hs.pages_in_tier = 0;
}

}  // namespace stride
