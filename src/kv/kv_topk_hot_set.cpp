// The top-k hot set of the KV manager (policy topk:...,resident=N with an
// offload tier). A top-k layer reads a few pages per step but may need any of
// them later, so without a limit every page stays in the pool and the pool
// grows with the context. With resident=N a layer keeps at most N pages of a
// sequence in the pool; the others live in the tier:
//
//   * Every select() picks pages over all of them: a page in the tier keeps
//     its key summary in RAM (LayerState::cold_sums), so it is scored exactly
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
// remove_sequence frees the slots (or hands them to the cache space, above).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kv/kv_manager.h"
#include "attention/topk_selector.h"

namespace stride {

namespace {
constexpr int kPrefetchGroups = 4;  // groups ranked after the cut to prefetch, per block and kv head
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

int64_t KvManager::topk_held_after_reserve(const Sequence& s, int layer, int n_new) const {
  const LayerState& ls = s.layers[layer];
  const int64_t n_logical = ceil_div(s.length + n_new, cfg_.page_size);
  return ls.held + std::max<int64_t>(0, n_logical - (int64_t)ls.table.size());
}

// A move out fails when the page has no tier slot yet and the tier has no
// room for another owned slot. Decided for the whole batch: at most every
// page the hot-set layers hold could need one.
bool KvManager::tier_may_refuse(std::span<const StepRequest> batch) const {
  if (!tier_) return false;
  const HostTierStats ts = tier_->stats();
  int64_t could_need = 0;
  for (const StepRequest& r : batch)
    for (int l = 0; l < cfg_.n_layer; ++l)
      if (topk_hot_set(cfg_.layer_policies[l])) could_need += topk_held_after_reserve(seqs_[r.seq], l, r.n_new);
  return could_need > ts.slots_total - ts.slots_owned;
}

// The pool pages select() may take on a hot-set layer this step. It brings
// back at most `bring` pages (picks by score now in the tier), after moving
// out least recently picked pages until it has freed enough to stay within
// max(N, sinks + window + picks); a move frees nothing when the tier refuses
// it or another sequence shares the page ("risky"). So it needs at most
//   min(bring, max(0, hold - held) + risky)
// pages beyond those its moves free, and prepare() reserves exactly that:
// select() never finds the pool empty.
int64_t KvManager::topk_spare_bound(const Sequence& s, int layer, int n_new, bool tier_may_refuse) const {
  const PolicySpec& p = cfg_.layer_policies[layer];
  const LayerState& ls = s.layers[layer];
  if (ls.pages_in_tier == 0) return 0;
  const int ps = cfg_.page_size;
  const int64_t n_logical = ceil_div(s.length + n_new, ps);
  const int64_t held = topk_held_after_reserve(s, layer, n_new);
  int64_t picks = 0;  // summed over the step's query blocks and kv heads
  const int qb = policy_q_block(p, n_new);
  for (int q = 0; q < n_new; q += qb) {
    const int64_t q_first = s.length + q, q_last = q_first + std::min(qb, n_new - q) - 1;
    const TopkBlockBudget b = topk_block_budget(p, ps, n_logical, q_first, q_last);
    picks += (int64_t)cfg_.n_kv_heads * (b.keep - b.n_fixed) * b.geo.group_pages;
  }
  const int64_t bring = std::min(ls.pages_in_tier, picks);
  // Sinks and the first query's window are never moved (as in plan_topk_hot).
  const TopkGeometry geo = topk_geometry(p, ps, n_logical, s.length);
  const int64_t sink_end = std::min(n_logical, geo.n_sink * geo.group_pages);
  const int64_t local_from = std::min(n_logical, geo.local_from * geo.group_pages);
  const int64_t fixed = sink_end + (n_logical - std::max(local_from, sink_end));
  const int64_t hold = std::max<int64_t>(p.resident, std::min(n_logical, fixed + picks));
  int64_t risky = 0;
  const int64_t cold_end = std::min<int64_t>({local_from, s.length / ps, (int64_t)ls.table.size()});
  for (int64_t L = sink_end; L < cold_end; ++L) {
    const int32_t page = ls.table[(size_t)L];
    if (page < 0) continue;
    const bool unslotted = (size_t)L >= ls.tier_key.size() || ls.tier_key[(size_t)L] == 0;
    risky += pages_.ref_count(page) > 1 || (tier_may_refuse && unslotted);
  }
  return std::min(bring, std::max<int64_t>(0, hold - held) + risky);
}

Expected<AttentionPlan> KvManager::plan_topk_hot(int layer, SeqId seq, int64_t kv_len, const float* q,
                                                int n_new, int n_head, float scale,
                                                std::vector<int32_t>& spares) {
  Sequence& s = seqs_[seq];
  LayerState& ls = s.layers[layer];
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int ps = cfg_.page_size;
  const size_t n_logical = ls.table.size();
  const size_t sum_floats = (size_t)cfg_.n_kv_heads * 2 * cfg_.head_dim_k;  // one page's summaries
  ls.tier_key.resize(n_logical, 0);
  ls.last_pick.resize(n_logical, -1);
  ls.prefetched.resize(n_logical, -1);
  ls.cold_sums.resize(n_logical * sum_floats);
  ls.prefix_key.resize(n_logical);
  ls.prefix_known.resize(n_logical, 0);
  ++ls.step;

  const TopkColdPages cold{&ls.tier_key, ls.cold_sums.data()};
  const TopkSelection sel =
      select_topk(policy, ls.table, ps, kv_len, s.length, n_new, policy_q_block(policy, n_new), *summaries_, q,
                  n_head, cfg_.n_kv_heads, &cold, kPrefetchGroups, scale);

  std::vector<uint8_t> picked(n_logical, 0);  // [logical pages]
  std::vector<int64_t> bring;                 // picked pages now in the tier
  for (const int64_t L : sel.pages) {
    if (picked[(size_t)L]) continue;
    picked[(size_t)L] = 1;
    ls.last_pick[(size_t)L] = ls.step;
    if (ls.table[(size_t)L] < 0) bring.push_back(L);
  }

  // Room first: move out the least recently picked pages the step does not need.
  const int64_t over = ls.held + (int64_t)bring.size() - policy.resident;
  if (over > 0) {
    const TopkGeometry geo = topk_geometry(policy, ps, (int64_t)n_logical, s.length);
    const int64_t sink_end = geo.n_sink * geo.group_pages;
    // Pages before the first query's window are whole and committed.
    const int64_t cold_end = std::min(geo.local_from * geo.group_pages, s.length / ps);
    std::vector<int64_t> candidates;
    for (int64_t L = sink_end; L < cold_end; ++L)
      if (ls.table[(size_t)L] >= 0 && !picked[(size_t)L]) candidates.push_back(L);
    std::sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) {
      return std::pair(ls.last_pick[(size_t)a], a) < std::pair(ls.last_pick[(size_t)b], b);
    });
    // Until `over` pool pages are free again; a refused page stays (counted)
    // and the next is tried, as a page that has its slot already moves freely.
    int64_t freed = 0;
    for (size_t i = 0; i < candidates.size() && freed < over; ++i) {
      bool page_freed = false;
      if (offload_topk_page(ls, candidates[i], &page_freed).ok()) freed += page_freed;
    }
  }
  for (const int64_t L : bring) STRIDE_RETURN_IF_ERROR(restore_topk_page(ls, L, spares));

  // Next step's likely picks: warm their tier slots now.
  std::vector<uint64_t> keys;
  for (const int64_t L : sel.next_pages) {
    if (ls.table[(size_t)L] >= 0 || ls.tier_key[(size_t)L] == 0 || ls.prefetched[(size_t)L] == ls.step) continue;
    ls.prefetched[(size_t)L] = ls.step;
    keys.push_back(ls.tier_key[(size_t)L]);
  }
  if (!keys.empty()) counters_.topk_pages_prefetched += tier_->prefetch(keys, TierSpace::Owned);
  return topk_plan(sel, ls.table, ps, kv_len);
}

Status KvManager::offload_topk_page(LayerState& ls, int64_t L, bool* freed) {
  const int32_t page = ls.table[(size_t)L];
  if (freed) *freed = false;
  if (page < 0) return Status::Ok();
  if (ls.tier_key[(size_t)L] == 0) {
    // Slot: page image (K, V, scales, positions), then the page's summaries.
    const std::span<uint8_t> image(slot_image_);
    const int64_t page_bytes = pool_->page_image_bytes();
    pool_->save_page(page, image.first((size_t)page_bytes));
    summaries_->save_page(page, image.subspan((size_t)page_bytes));
    const uint64_t key = next_topk_key_++;
    const Status put = tier_->put(key, image, TierSpace::Owned);
    if (!put.ok()) {
      ++counters_.topk_offload_refused;
      return put;
    }
    ls.tier_key[(size_t)L] = key;
  }
  const size_t sum_floats = (size_t)cfg_.n_kv_heads * 2 * cfg_.head_dim_k;
  std::memcpy(ls.cold_sums.data() + (size_t)L * sum_floats, summaries_->min(page, 0), sum_floats * sizeof(float));
  // A registered page leaves the prefix index rather than staying parked in
  // the pool (which would then grow); its slot joins the tier's cache space
  // under that key when the sequence ends (drop_topk_tier).
  if (freed) *freed = pages_.ref_count(page) == 1;
  PrefixKey key;
  if (pages_.release_forget(page, &key)) {
    ls.prefix_key[(size_t)L] = key;
    ls.prefix_known[(size_t)L] = 1;
  }
  ls.table[(size_t)L] = -1;
  --ls.held;
  ++ls.pages_in_tier;
  ++counters_.topk_pages_offloaded;
  return Status::Ok();
}

// Into a page prepare() reserved for this layer, else one this layer's moves
// just freed (topk_spare_bound counts on no more); failing both, the step
// fails with a Status (a selected page is never silently skipped).
Status KvManager::restore_topk_page(LayerState& ls, int64_t L, std::vector<int32_t>& spares) {
  std::optional<PinnedPage> slot = tier_->pin(ls.tier_key[(size_t)L], TierSpace::Owned);
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
  const int64_t page_bytes = pool_->page_image_bytes();
  pool_->load_page(page, image.first((size_t)page_bytes));
  summaries_->load_page(page, image.subspan((size_t)page_bytes));
  ls.table[(size_t)L] = page;
  ++ls.held;
  --ls.pages_in_tier;
  ++counters_.topk_pages_restored;
  if (ls.prefetched[(size_t)L] == ls.step - 1) ++counters_.topk_prefetch_hits;
  counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  return Status::Ok();
}

void KvManager::drop_topk_tier(LayerState& ls) {
  if (!tier_) return;
  for (size_t L = 0; L < ls.tier_key.size(); ++L) {
    if (ls.tier_key[L] == 0) continue;
    // A page that left the prefix index stays in the tier as a cached prefix
    // page (evictable now), unless the pool holds that key again.
    const bool keep = L < ls.prefix_known.size() && ls.prefix_known[L] && pages_.lookup(ls.prefix_key[L]) < 0;
    if (!keep || !tier_->disown(ls.tier_key[L], prefix_key_id(ls.prefix_key[L])))
      tier_->erase(ls.tier_key[L], TierSpace::Owned);
    ls.tier_key[L] = 0;
  }
  ls.pages_in_tier = 0;
}

}  // namespace stride
