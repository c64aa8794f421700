#include "attention/kv_cache.h"

#include <algorithm>
#include <limits>
#include <string>

#include "attention/paged_kv_cache.h"
#include "kv/host_tier.h"
#include "kv/kv_pool.h"
#include "kv/page_summary.h"

namespace stride {

namespace {

Status check_policy(const PolicySpec& p, int layer, int page_size) {
  const std::string where = "KVCache: layer " + std::to_string(layer) + " policy ";
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

Expected<std::unique_ptr<KVCache>> KVCache::create(const KVCacheConfig& cfg) {
  if (cfg.n_layer <= 0 || cfg.n_kv_heads <= 0 || cfg.head_dim_k <= 0 || cfg.head_dim_v <= 0)
    return InvalidArgument("KVCache: n_layer, n_kv_heads and head dims must be positive");
  if (cfg.page_size <= 0) return InvalidArgument("KVCache: page_size must be positive");
  if ((int)cfg.layer_policies.size() != cfg.n_layer)
    return InvalidArgument("KVCache: expected " + std::to_string(cfg.n_layer) +
                           " layer policies, got " + std::to_string(cfg.layer_policies.size()));
  for (int l = 0; l < cfg.n_layer; ++l) STRIDE_RETURN_IF_ERROR(check_policy(cfg.layer_policies[l], l, cfg.page_size));

  const KvPoolShape shape{cfg.n_kv_heads, cfg.head_dim_k, cfg.head_dim_v, cfg.page_size, cfg.storage};
  const int64_t n_pages = cfg.budget_bytes / shape.bytes_per_page();
  if (n_pages < 1)
    return InvalidArgument("KVCache: budget of " + std::to_string(cfg.budget_bytes) +
                           " bytes is less than one page (" +
                           std::to_string(shape.bytes_per_page()) + " bytes)");
  const int32_t capped = (int32_t)std::min<int64_t>(n_pages, std::numeric_limits<int32_t>::max());
  if (cfg.offload_bytes < 0) return InvalidArgument("KVCache: negative offload_bytes");
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
  return std::unique_ptr<KVCache>(std::make_unique<PagedKVCache>(cfg, std::move(pool), std::move(tier)));
}

}  // namespace stride
