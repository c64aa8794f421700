#include "attention/paged_kv_cache.h"

#include <algorithm>
#include <chrono>
#include <cassert>
#include <cstring>
#include <limits>
#include <string>

#include "attention/attention_kernel.h"
#include "attention/plan.h"
#include "attention/topk_selector.h"

namespace stride {

namespace {
// A query position beyond any real one: keys kept for it are kept forever.
constexpr int64_t kForever = std::numeric_limits<int64_t>::max() / 4;
}  // namespace

PagedKVCache::PagedKVCache(const KVCacheConfig& cfg, std::unique_ptr<KvPool> pool,
                           std::unique_ptr<HostTier> tier)
    : cfg_(cfg), pool_(std::move(pool)), pages_(pool_->n_pages()), tier_(std::move(tier)) {
  for (const PolicySpec& p : cfg_.layer_policies)
    if (p.kind == PolicyKind::TopK && !summaries_)
      summaries_ = std::make_unique<PageSummaries>(pool_->n_pages(), cfg_.n_kv_heads, cfg_.head_dim_k);
  // A layer's K/V depend on the policies of the layers below it too: all go in.
  std::string salt = cfg_.cache_salt + "|page=" + std::to_string(cfg_.page_size) +
                     "|" + kv_storage_name(cfg_.storage);
  for (const PolicySpec& p : cfg_.layer_policies) salt += "|" + policy_to_string(p);
  salt_ = prefix_salt(salt);
  // Room for a prefix entry per resident or offloaded page, and as many again
  // for the ancestors of windowed layers' pages (their own pages released).
  const size_t tier_slots = tier_ ? (size_t)tier_->stats().slots_total : 0;
  chains_ = PrefixChains(std::max<size_t>(size_t(1) << 16, 4 * ((size_t)pool_->n_pages() + tier_slots)), salt_,
                         cfg_.prefix_hash);
  if (tier_) {
    slot_image_.resize((size_t)tier_->slot_bytes());
    pages_.set_on_evict([this](const PrefixKey& key, int32_t page) { offload_page(key, page); });
  }
}

bool PagedKVCache::valid(SeqId seq) const {
  return seq >= 0 && seq < (SeqId)seqs_.size() && seqs_[seq].active;
}

bool PagedKVCache::valid(SeqId seq, int layer) const {
  return valid(seq) && layer >= 0 && layer < cfg_.n_layer;
}

Expected<KVCache::SeqId> PagedKVCache::add_sequence() {
  // Reuse the lowest free id; a reused id starts from a clean state.
  SeqId id = 0;
  while (id < (SeqId)seqs_.size() && seqs_[id].active) ++id;
  if (id == (SeqId)seqs_.size()) {
    if (seqs_.size() >= (size_t)std::numeric_limits<SeqId>::max())
      return ResourceExhausted("KVCache: too many sequences");
    seqs_.emplace_back();
  }
  Sequence& s = seqs_[id];
  s = Sequence{};
  s.active = true;
  s.layers.resize(cfg_.n_layer);
  return id;
}

void PagedKVCache::remove_sequence(SeqId seq) {
  if (!valid(seq)) return;  // removing twice is harmless
  // Deepest pages first: cached pages are evicted in release order, and a
  // deep page is useless once a page before it is gone.
  std::vector<LayerState>& layers = seqs_[seq].layers;
  size_t n_logical = 0;
  for (const LayerState& ls : layers) n_logical = std::max(n_logical, ls.table.size());
  for (size_t i = n_logical; i-- > 0;)
    for (LayerState& ls : layers)
      if (i < ls.table.size() && ls.table[i] >= 0) pages_.release(ls.table[i]);
  for (LayerState& ls : layers) drop_topk_tier(ls);
  seqs_[seq] = Sequence{};
}

int64_t PagedKVCache::length(SeqId seq) const {
  assert(valid(seq));
  return valid(seq) ? seqs_[seq].length : 0;
}

int64_t PagedKVCache::capacity(const Sequence& s) const {
  size_t min_pages = std::numeric_limits<size_t>::max();
  for (const LayerState& ls : s.layers) min_pages = std::min(min_pages, ls.table.size());
  return s.layers.empty() ? 0 : (int64_t)min_pages * cfg_.page_size;
}

Status PagedKVCache::reserve(SeqId seq, int n_new) {
  if (!valid(seq)) return InvalidArgument("KVCache::reserve: unknown sequence " + std::to_string(seq));
  if (n_new < 0) return InvalidArgument("KVCache::reserve: negative token count");
  Sequence& s = seqs_[seq];
  const int64_t end = s.length + n_new;
  if (end > std::numeric_limits<int32_t>::max())
    return InvalidArgument("KVCache::reserve: positions beyond int32 range");
  const int64_t pages_for_end = (end + cfg_.page_size - 1) / cfg_.page_size;
  std::vector<int64_t> need(cfg_.n_layer, 0);
  int64_t total = 0;
  for (int l = 0; l < cfg_.n_layer; ++l) {
    need[l] = std::max<int64_t>(0, pages_for_end - (int64_t)s.layers[l].table.size());
    total += need[l];
  }
  if (total == 0) return Status::Ok();
  if (total > pages_.n_free())
    return ResourceExhausted("KV pool exhausted: sequence " + std::to_string(seq) + " needs " +
                             std::to_string(total) + " more pages for " + std::to_string(n_new) +
                             " tokens, " + std::to_string(pages_.n_free()) + " free of " +
                             std::to_string(pages_.n_total()));
  std::vector<int32_t> got;
  STRIDE_RETURN_IF_ERROR(pages_.allocate((int32_t)total, got));  // all or nothing
  size_t next = 0;
  for (int l = 0; l < cfg_.n_layer; ++l) {
    LayerState& ls = s.layers[l];
    for (int64_t i = 0; i < need[l]; ++i) ls.table.push_back(got[next++]);
    ls.held += need[l];
  }
  peak_used_ = std::max<int64_t>(peak_used_, pages_.n_used());
  return Status::Ok();
}

void PagedKVCache::write(int layer, SeqId seq, const float* k, const float* v, int n_new) {
  assert(valid(seq, layer));
  if (!valid(seq, layer) || n_new <= 0) return;
  LayerState& ls = seqs_[seq].layers[layer];
  const int64_t start = seqs_[seq].length;
  const int ps = cfg_.page_size;
  assert(start + n_new <= (int64_t)ls.table.size() * ps && "write beyond reserve()");
  if (start + n_new > (int64_t)ls.table.size() * ps) return;
  const int64_t k_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_k;
  const int64_t v_row = (int64_t)cfg_.n_kv_heads * cfg_.head_dim_v;
  for (int t = 0; t < n_new;) {
    const int64_t pos = start + t;
    const int slot = (int)(pos % ps);
    const int run = std::min(n_new - t, ps - slot);  // tokens that land in this page
    const int32_t page = ls.table[pos / ps];
    assert(page >= 0);
    if (page >= 0) pool_->store(page, slot, run, k + t * k_row, k_row, v + t * v_row, v_row, pos);
    if (page >= 0 && summaries_ && cfg_.layer_policies[layer].kind == PolicyKind::TopK)
      summaries_->update(page, slot, run, k + t * k_row, k_row);
    t += run;
  }
}

// Plan entries whose page holds a key in the local window (p - window, p] of
// some query p of its block (the window hits behind
// stride_attention_window_pages_read_total); sinks, globals and top-k picks are the rest.
static int64_t window_entries(const AttentionPlan& plan, const PolicySpec& policy, int page_size) {
  if (policy.window <= 0) return 0;
  int64_t n = 0;
  for (int b = 0; b < plan.n_blocks(); ++b) {
    const int64_t q_first = plan.q_pos0 + (int64_t)b * plan.q_block;
    const int64_t window_first = q_first - policy.window + 1;
    for (int32_t e = plan.indptr[b]; e < plan.indptr[b + 1]; ++e) {
      n += plan.page_first[e] + page_size - 1 >= window_first;
    }
  }
  return n;
}

void PagedKVCache::attend(int layer, SeqId seq, const float* q, int n_new,
                          const AttentionParams& p, float* out, ThreadPool& pool) {
  const bool ok_params = p.n_head > 0 && p.n_head % cfg_.n_kv_heads == 0;
  assert(valid(seq, layer) && ok_params);
  if (n_new <= 0) return;
  if (!valid(seq, layer) || !ok_params) {
    if (p.n_head > 0)
      std::memset(out, 0, sizeof(float) * (size_t)n_new * p.n_head * cfg_.head_dim_v);
    return;
  }
  const Sequence& s = seqs_[seq];
  const LayerState& ls = s.layers[layer];
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int64_t kv_len = std::min<int64_t>(s.length + n_new, (int64_t)ls.table.size() * cfg_.page_size);
  const auto t0 = std::chrono::steady_clock::now();
  // A top-k hot set moves pages between the pool and the tier here.
  const AttentionPlan plan =
      topk_hot_set(policy) ? plan_topk_hot(layer, seq, kv_len, q, n_new, p.n_head)
      : policy.kind == PolicyKind::TopK && summaries_
          ? plan_topk(policy, ls.table, cfg_.page_size, kv_len, s.length, n_new,
                      policy_q_block(policy, n_new), *summaries_, q, p.n_head, cfg_.n_kv_heads)
          : plan_attention(policy, ls.table, cfg_.page_size, kv_len, s.length, n_new,
                           default_q_block(n_new));
#ifndef NDEBUG
  const Status plan_ok = check_plan(plan, policy, cfg_.page_size, kv_len);
  assert(plan_ok.ok());
#endif
  attention_paged(*pool_, plan, policy, p, q, out, pool);
  // This call's counts, computed before the lock: concurrent calls (other
  // sequences) only meet in the merge below.
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t read = plan.n_entries();
  const int64_t present = ls.held * plan.n_blocks();
  const int64_t window_read = window_entries(plan, policy, cfg_.page_size);
  std::lock_guard<std::mutex> lock(stats_mu_);
  attention_seconds_[(size_t)policy.kind] += seconds;
  (plan.per_head() ? head_pages_read_ : pages_read_) += read;
  pages_present_ += present;
  (plan.per_head() ? head_window_pages_read_ : window_pages_read_) += window_read;
}

// attend() reads the sequence's page table, the pool and the page summaries,
// all written only by write/reserve/commit, which the caller keeps serial;
// its statistics are merged under stats_mu_. A top-k hot set moves pages
// between the pool and the tier inside attend(), so it must stay serial.
bool PagedKVCache::concurrent_attend_safe() const {
  for (const PolicySpec& p : cfg_.layer_policies)
    if (topk_hot_set(p)) return false;
  return true;
}

void PagedKVCache::commit(SeqId seq, int n_new, const int32_t* ids) {
  assert(valid(seq));
  if (!valid(seq) || n_new <= 0) return;
  Sequence& s = seqs_[seq];
  assert(s.length + n_new <= capacity(s) && "commit beyond reserve()");
  const int64_t before = s.length;
  s.length = std::min<int64_t>(s.length + n_new, capacity(s));
  // Registered before the release below, so released pages stay cached.
  register_full_pages(s, ids, (int)(s.length - before));
  for (int l = 0; l < cfg_.n_layer; ++l) release_unseen(s, l);
}

// Frees every full page none of whose slots policy_keeps for the next query.
void PagedKVCache::release_unseen(Sequence& s, int layer) {
  LayerState& ls = s.layers[layer];
  const PolicySpec& policy = cfg_.layer_policies[layer];
  const int ps = cfg_.page_size;
  const int64_t n_full = std::min<int64_t>(s.length / ps, (int64_t)ls.table.size());
  int64_t first_unsettled = -1;
  for (int64_t L = ls.scan_from; L < n_full; ++L) {
    const int32_t page = ls.table[L];
    bool settled = true;
    if (page >= 0) {
      const int32_t* pos = pool_->positions(page);
      bool kept_now = false, kept_forever = false;
      for (int t = 0; t < ps && !kept_forever; ++t) {
        kept_now = kept_now || policy_keeps(policy, pos[t], s.length);
        kept_forever = policy_keeps(policy, pos[t], kForever);
      }
      if (!kept_now) {
        pages_.release(page);
        ls.table[L] = -1;
        --ls.held;
      } else {
        settled = kept_forever;
      }
    }
    if (!settled && first_unsettled < 0) first_unsettled = L;
  }
  ls.scan_from = first_unsettled >= 0 ? first_unsettled : std::max(ls.scan_from, n_full);
}

KVCacheStats PagedKVCache::stats() const {
  KVCacheStats st;
  st.pages_total = pages_.n_total();
  st.pages_used = pages_.n_used();
  st.peak_pages_used = peak_used_;
  st.bytes_per_page = pool_->shape().bytes_per_page();
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    st.pages_read = pages_read_ + head_pages_read_ / cfg_.n_kv_heads;
    st.pages_present = pages_present_;
    st.attention_seconds = attention_seconds_;
    st.window_pages_read = window_pages_read_ + head_window_pages_read_ / cfg_.n_kv_heads;
  }
  st.pages_cached = pages_.n_cached();
  st.pages_reclaimable = pages_.n_reclaimable();
  st.pages_evicted = pages_.n_evicted();
  st.prefix_query_tokens = prefix_query_tokens_;
  st.prefix_hit_tokens = prefix_hit_tokens_;
  st.prefix_queries = prefix_queries_;
  st.prefix_hits = prefix_hits_;
  if (tier_) {
    const HostTierStats ts = tier_->stats();
    st.pages_offloaded = pages_offloaded_;
    st.pages_restored = pages_restored_;
    st.tier_slots_used = ts.slots_used;
    st.tier_slots_total = ts.slots_total;
    st.tier_hits = ts.hits;
    st.tier_misses = tier_misses_;
    st.tier_slots_owned = ts.slots_owned;
    st.topk_pages_offloaded = topk_offloaded_;
    st.topk_pages_restored = topk_restored_;
    st.topk_pages_prefetched = topk_prefetched_;
    st.topk_prefetch_hits = topk_prefetch_hits_;
    st.topk_offload_refused = topk_offload_refused_;
    st.topk_restore_failed = topk_restore_failed_;
  }
  return st;
}

int64_t PagedKVCache::pages_held(SeqId seq, int layer) const {
  return valid(seq, layer) ? seqs_[seq].layers[layer].held : 0;
}

const std::vector<int32_t>* PagedKVCache::page_table(SeqId seq, int layer) const {
  return valid(seq, layer) ? &seqs_[seq].layers[layer].table : nullptr;
}

}  // namespace stride
