// Construction, sequences and counters of the KV manager; the step itself
// (prepare, write, select, commit) is kv_step.cpp.
#include "kv/kv_manager.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <string>

#include "kv/store/host_tier.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"

namespace stride {

namespace {

Status check_policy(const PolicySpec& p, int layer, int page_size) {
  const std::string where = "KV manager: layer " + std::to_string(layer) + " policy ";
  if ((p.kind == PolicyKind::Window || p.kind == PolicyKind::RSWA) && p.window <= 0)
    return InvalidArgument(where + "needs a positive window");
  if (p.kind == PolicyKind::RSWA && p.sinks < 0) return InvalidArgument(where + "has negative sinks");
  if (p.kind == PolicyKind::Strided && (p.window <= 0 || p.stride <= 0 || p.block <= 0))
    return InvalidArgument(where + "'strided' needs a positive window, stride and block");
  if (p.kind == PolicyKind::TopK) {
    if (!(p.sparsity >= 0.0 && p.sparsity < 1.0))
      return InvalidArgument(where + "'topk' needs a sparsity in [0, 1)");
    // Selection works on whole pages: a block groups block / page_size pages.
    if (p.block < 0 || (p.block > 0 && p.block % page_size != 0))
      return InvalidArgument(where + "'topk' block=" + std::to_string(p.block) +
                             " must be a multiple of the KV page size " + std::to_string(page_size));
  }
  return Status::Ok();
}

}  // namespace

Expected<std::unique_ptr<KvManager>> KvManager::create(const KvManagerConfig& cfg) {
  if (cfg.n_layer <= 0 || cfg.n_kv_heads <= 0 || cfg.head_dim_k <= 0 || cfg.head_dim_v <= 0)
    return InvalidArgument("KV manager: n_layer, n_kv_heads and head dims must be positive");
  if (cfg.page_size <= 0) return InvalidArgument("KV manager: page_size must be positive");
  if ((int)cfg.layer_policies.size() != cfg.n_layer)
    return InvalidArgument("KV manager: expected " + std::to_string(cfg.n_layer) +
                           " layer policies, got " + std::to_string(cfg.layer_policies.size()));
  for (int l = 0; l < cfg.n_layer; ++l) STRIDE_RETURN_IF_ERROR(check_policy(cfg.layer_policies[l], l, cfg.page_size));

  const KvPoolShape shape{cfg.n_kv_heads, cfg.head_dim_k, cfg.head_dim_v, cfg.page_size, cfg.storage};
  const int64_t n_pages = cfg.budget_bytes / shape.bytes_per_page();
  if (n_pages < 1)
    return InvalidArgument("KV manager: budget of " + std::to_string(cfg.budget_bytes) +
                           " bytes is less than one page (" +
                           std::to_string(shape.bytes_per_page()) + " bytes)");
  const int32_t capped = (int32_t)std::min<int64_t>(n_pages, std::numeric_limits<int32_t>::max());
  if (cfg.offload_bytes < 0) return InvalidArgument("KV manager: negative offload_bytes");
  STRIDE_ASSIGN_OR_RETURN(std::unique_ptr<KvPool> pool, KvPool::create(shape, capped));
  std::unique_ptr<HostTier> tier;
  if (cfg.offload_bytes > 0) {
    // A slot holds the page image and, with a top-k layer, the page's summaries.
    const bool topk = std::any_of(cfg.layer_policies.begin(), cfg.layer_policies.end(),
                                  [](const PolicySpec& p) { return p.kind == PolicyKind::TopK; });
    const int64_t summary = topk ? PageSummaries::page_bytes(cfg.n_kv_heads, cfg.head_dim_k) : 0;
    HostTierOptions to;
    to.capacity_bytes = cfg.offload_bytes;
    to.slot_bytes = pool->page_image_bytes() + summary;
    to.file = cfg.offload_file;
    STRIDE_ASSIGN_OR_RETURN(tier, HostTier::create(to));
  }
  return std::make_unique<KvManager>(cfg, std::move(pool), std::move(tier));
}

KvManager::KvManager(const KvManagerConfig& cfg, std::unique_ptr<KvPool> pool,
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
  kv_identity_ = salt + "|layers=" + std::to_string(cfg_.n_layer) + "|kv_heads=" + std::to_string(cfg_.n_kv_heads) +
                 "|dk=" + std::to_string(cfg_.head_dim_k) + "|dv=" + std::to_string(cfg_.head_dim_v);
  // Room for a prefix entry per resident or offloaded page, and as many again
  // for the ancestors of windowed layers' pages (their own pages released).
  const size_t tier_slots = tier_ ? (size_t)tier_->stats().slots_total : 0;
  chains_ = PrefixChains(std::max<size_t>(size_t(1) << 16, 4 * ((size_t)pool_->n_pages() + tier_slots)), salt_,
                         cfg_.prefix_hash);
  if (tier_) {
    slot_image_.resize((size_t)tier_->slot_bytes());
    pages_.set_on_evict([this](const PrefixKey& key, int32_t page) { offload_page(key, page); });
  }
  const bool hot_layer = std::any_of(cfg_.layer_policies.begin(), cfg_.layer_policies.end(),
                                     [](const PolicySpec& p) { return TopkHotSet::applies(p); });
  if (tier_ && summaries_ && hot_layer)
    hot_ = std::make_unique<TopkHotSet>(TopkHotSetParts{cfg_.page_size, cfg_.n_kv_heads, cfg_.head_dim_k, *pool_,
                                                        pages_, *summaries_, *tier_, counters_});
}

bool KvManager::valid(SeqId seq) const {
  return seq >= 0 && seq < (SeqId)seqs_.size() && seqs_[seq].active;
}

bool KvManager::valid(SeqId seq, int layer) const {
  return valid(seq) && layer >= 0 && layer < cfg_.n_layer;
}

Expected<KvManager::SeqId> KvManager::add_sequence() {
  // Reuse the lowest free id; a reused id starts from a clean state.
  SeqId id = 0;
  while (id < (SeqId)seqs_.size() && seqs_[id].active) ++id;
  if (id == (SeqId)seqs_.size()) {
    if (seqs_.size() >= (size_t)std::numeric_limits<SeqId>::max())
      return ResourceExhausted("KV manager: too many sequences");
    seqs_.emplace_back();
  }
  Sequence& s = seqs_[id];
  s = Sequence{};
  s.active = true;
  s.layers.resize(cfg_.n_layer);
  return id;
}

void KvManager::remove_sequence(SeqId seq) {
  if (!valid(seq)) return;  // removing twice is harmless
  // Deepest pages first: cached pages are evicted in release order, and a
  // deep page is useless once a page before it is gone.
  std::vector<LayerState>& layers = seqs_[seq].layers;
  size_t n_logical = 0;
  for (const LayerState& ls : layers) n_logical = std::max(n_logical, ls.pages.table.size());
  for (size_t i = n_logical; i-- > 0;)
    for (LayerState& ls : layers)
      if (i < ls.pages.table.size() && ls.pages.table[i] >= 0) pages_.release(ls.pages.table[i]);
  if (hot_)
    for (LayerState& ls : layers) hot_->drop_tier(ls.hot);
  seqs_[seq] = Sequence{};
}

int64_t KvManager::length(SeqId seq) const {
  assert(valid(seq));
  return valid(seq) ? seqs_[seq].length : 0;
}

int64_t KvManager::capacity(const Sequence& s) const {
  size_t min_pages = std::numeric_limits<size_t>::max();
  for (const LayerState& ls : s.layers) min_pages = std::min(min_pages, ls.pages.table.size());
  return s.layers.empty() ? 0 : (int64_t)min_pages * cfg_.page_size;
}

KvStats KvManager::stats() const {
  KvStats st = counters_;
  st.pages_total = pages_.n_total();
  st.pages_used = pages_.n_used();
  st.bytes_per_page = pool_->shape().bytes_per_page();
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    st.pages_read = pages_read_ + head_pages_read_ / cfg_.n_kv_heads;
    st.pages_present = pages_present_;
    st.attention_seconds = attention_seconds_;
    st.pages_read_by_policy = pages_read_by_policy_;
    st.pages_present_by_policy = pages_present_by_policy_;
    st.window_pages_read = window_pages_read_ + head_window_pages_read_ / cfg_.n_kv_heads;
  }
  st.pages_cached = pages_.n_cached();
  st.pages_reclaimable = pages_.n_reclaimable();
  st.pages_evicted = pages_.n_evicted();
  if (tier_) {
    const HostTierStats ts = tier_->stats();
    st.tier_slots_used = ts.slots_used;
    st.tier_slots_total = ts.slots_total;
    st.tier_hits = ts.hits;
    st.tier_slots_owned = ts.slots_owned;
  }
  if (shared_) {
    SharedTierCounters& c = shared_->counters();
    st.shared_tier_up = c.up;
    st.shared_tier_hits = c.hits;
    st.shared_tier_misses = c.misses;
    st.shared_tier_errors = c.errors;
    st.shared_tier_published = c.published;
    st.shared_tier_dropped = c.dropped;
    st.shared_tier_bytes_in = c.bytes_in;
    st.shared_tier_bytes_out = c.bytes_out;
  }
  return st;
}

int64_t KvManager::pages_held(SeqId seq, int layer) const {
  return valid(seq, layer) ? seqs_[seq].layers[layer].pages.held : 0;
}

const std::vector<int32_t>* KvManager::page_table(SeqId seq, int layer) const {
  return valid(seq, layer) ? &seqs_[seq].layers[layer].pages.table : nullptr;
}

}  // namespace stride
