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
    const int64_t summary = keeps_summaries(cfg) ? PageSummaries::page_bytes(cfg.n_kv_heads, cfg.head_dim_k) : 0;
    HostTierOptions to;
    to.capacity_bytes = cfg.offload_bytes;
    to.slot_bytes = pool->page_image_bytes() + summary;
    to.file = cfg.offload_file;
    STRIDE_ASSIGN_OR_RETURN(tier, HostTier::create(to));
  }
  return std::make_unique<KvManager>(cfg, std::move(pool), std::move(tier));
}

namespace {

std::unique_ptr<PageSummaries> make_summaries(const KvManagerConfig& cfg, int32_t n_pages) {
  if (!keeps_summaries(cfg)) return nullptr;
  return std::make_unique<PageSummaries>(n_pages, cfg.n_kv_heads, cfg.head_dim_k);
}

// The int8 copies of full pages' keys that estimate=rerank,rerank_keys=int8 scores.
std::unique_ptr<PageKeyCodes> make_key_codes(const KvManagerConfig& cfg, int32_t n_pages) {
  const bool int8_rerank = std::any_of(cfg.layer_policies.begin(), cfg.layer_policies.end(), [](const PolicySpec& p) {
    return p.kind == PolicyKind::TopK && p.rerank_estimate && p.rerank_int8;
  });
  if (!int8_rerank || !PageKeyCodes::supported(cfg.head_dim_k)) return nullptr;
  return std::make_unique<PageKeyCodes>(n_pages, cfg.n_kv_heads, cfg.head_dim_k, cfg.page_size);
}

// Room for a prefix entry per resident or offloaded page, and as many again
// for the ancestors of windowed layers' pages (their own pages released).
size_t chain_capacity(int32_t n_pages, const OffloadTier& offload) {
  return std::max<size_t>(size_t(1) << 16, 4 * ((size_t)n_pages + (size_t)offload.slots_total()));
}

// The top-k hot set, with a tier, summaries and a layer with topk resident=N.
std::unique_ptr<TopkHotSet> make_hot_set(const KvManagerConfig& cfg, KvPool& pool, PageManager& pages,
                                         PageSummaries* summaries, const OffloadTier& offload, KvStats& counters) {
  const bool hot_layer = std::any_of(cfg.layer_policies.begin(), cfg.layer_policies.end(),
                                     [](const PolicySpec& p) { return TopkHotSet::applies(p); });
  if (!offload.host() || !summaries || !hot_layer) return nullptr;
  return std::make_unique<TopkHotSet>(TopkHotSetParts{cfg.page_size, cfg.n_kv_heads, cfg.head_dim_k, pool, pages,
                                                      *summaries, *offload.host(), counters});
}

}  // namespace

KvManager::KvManager(const KvManagerConfig& cfg, std::unique_ptr<KvPool> pool, std::unique_ptr<HostTier> tier)
    : cfg_(cfg),
      pool_(std::move(pool)),
      pages_(pool_->n_pages()),
      summaries_(make_summaries(cfg_, pool_->n_pages())),
      key_codes_(make_key_codes(cfg_, pool_->n_pages())),
      offload_(std::move(tier), *pool_, pages_, summaries_.get()),
      prefix_(cfg_, pages_, offload_, chain_capacity(pool_->n_pages(), offload_)),
      hot_(make_hot_set(cfg_, *pool_, pages_, summaries_.get(), offload_, counters_)),
      seqs_(cfg_.n_layer, cfg_.page_size),
      reservation_(cfg_, hot_.get()),
      rollback_(cfg_, pages_, summaries_.get(), hot_.get()),
      sessions_(cfg_, *pool_, pages_, summaries_.get(), offload_, prefix_.chains(), seqs_, hot_.get(), counters_),
      reads_(cfg_.page_size, cfg_.n_kv_heads) {}

Expected<KvManager::SeqId> KvManager::add_sequence() { return seqs_.add(); }

Expected<KvManager::PrefixHit> KvManager::add_sequence_with_prefix(std::span<const int32_t> prompt) {
  STRIDE_ASSIGN_OR_RETURN(const SeqId id, add_sequence());
  PrefixHit hit;
  hit.seq = id;
  if (!prefix_.enabled()) return hit;
  prefix_.count_query((int64_t)prompt.size());
  // The last prompt token is always computed: its logits are needed.
  const int64_t max_pages = prompt.empty() ? 0 : ((int64_t)prompt.size() - 1) / cfg_.page_size;
  std::vector<uint64_t> chains = prefix_.find_chains(prompt, max_pages);
  std::vector<PageDigest> shared_keys;
  if (shared_ && max_pages > 0) {
    shared_keys = shared_->keys_of(prompt, max_pages);
    shared_->import_pages(prompt, chains, shared_keys);
  }
  prefix_.count_tier_misses(chains, max_pages);
  const Expected<int64_t> taken = prefix_.take_longest(seqs_[id], chains);
  if (!taken.ok()) {
    seqs_.reset(id);  // the new sequence goes again; nothing else changed
    return taken.status();
  }
  if (*taken > 0) {
    if (shared_) seqs_[id].shared_chain = shared_keys[(size_t)*taken - 1];
    hit.reused_tokens = *taken * cfg_.page_size;
    counters_.peak_pages_used = std::max<int64_t>(counters_.peak_pages_used, pages_.n_used());
  }
  return hit;
}

void KvManager::remove_sequence(SeqId seq) {
  if (!seqs_.valid(seq)) return;  // removing twice is harmless
  // Deepest pages first: cached pages are evicted in release order, and a
  // deep page is useless once a page before it is gone.
  std::vector<KvLayerState>& layers = seqs_[seq].layers;
  size_t n_logical = 0;
  for (const KvLayerState& ls : layers) n_logical = std::max(n_logical, ls.pages.table.size());
  for (size_t i = n_logical; i-- > 0;)
    for (KvLayerState& ls : layers)
      if (i < ls.pages.table.size() && ls.pages.table[i] >= 0) pages_.release(ls.pages.table[i]);
  if (hot_)
    for (KvLayerState& ls : layers) hot_->drop_tier(ls.hot);
  seqs_.reset(seq);
}

int64_t KvManager::length(SeqId seq) const {
  assert(seqs_.valid(seq));
  return seqs_.valid(seq) ? seqs_[seq].length : 0;
}

Status KvManager::truncate(SeqId seq, int64_t length) {
  if (!seqs_.valid(seq)) return InvalidArgument("KV manager: unknown sequence " + std::to_string(seq));
  return rollback_.truncate(seqs_[seq], length);
}

Status KvManager::attach_shared_tier(std::unique_ptr<SharedPageStore> store, const std::string& secret,
                                     const std::string& key_prefix) {
  const SharedTierParts parts{cfg_, *pool_, pages_, summaries_.get(), offload_, prefix_.chains()};
  STRIDE_ASSIGN_OR_RETURN(shared_, SharedTier::create(parts, std::move(store), secret, key_prefix));
  return Status::Ok();
}

KvStats KvManager::stats() const {
  KvStats st = counters_;
  st.pages_total = pages_.n_total();
  st.pages_used = pages_.n_used();
  st.bytes_per_page = pool_->shape().bytes_per_page();
  reads_.add_to(st);
  st.pages_cached = pages_.n_cached();
  st.pages_reclaimable = pages_.n_reclaimable();
  st.pages_evicted = pages_.n_evicted();
  prefix_.add_to(st);
  offload_.add_to(st);
  if (shared_) shared_->add_to(st);
  return st;
}

}  // namespace stride
