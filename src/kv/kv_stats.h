#pragma once
// What the KV manager counts, defined once: each row of STRIDE_KV_COUNTERS is
// a KvStats field and the metric `/metrics`, `stride run --json` and the
// tools publish for it (name, kind, help), so a new counter is one line.
#include <array>
#include <cstdint>

#include "attention/policy.h"

namespace stride {

// X(field, kind, metric, help); kind is gauge or counter.
#define STRIDE_KV_COUNTERS(X)                                                                                      \
  X(pages_total, gauge, "stride_kv_cache_pages_capacity", "KV pages in the pool.")                                 \
  X(pages_used, gauge, "stride_kv_cache_pages_used", "KV pages in use.")                                           \
  X(peak_pages_used, gauge, "stride_kv_cache_pages_peak", "Most KV pages ever in use (watermark).")               \
  X(bytes_per_page, gauge, "stride_kv_cache_page_bytes", "Bytes per KV page (all layers share a size).")          \
  /* Summed over the query blocks of every committed layer plan (a decode step is one block). */                   \
  X(pages_read, counter, "stride_attention_pages_read_total", "KV pages attention read, summed over query blocks.") \
  X(pages_present, counter, "stride_attention_pages_present_total",                                                \
    "KV pages the attending sequences held with a key a query of the block may see (causal), summed over query blocks.")                                            \
  /* Of pages_read: pages holding a key in the local window (p - window, p] of a query p of the block. */         \
  X(window_pages_read, counter, "stride_attention_window_pages_read_total",                                        \
    "Of the KV pages attention read, those holding a key in the local window of the block's last query.")          \
  X(pages_cached, gauge, "stride_kv_cache_pages_cached", "KV pages held by the prefix cache (in use or reclaimable).") \
  X(pages_reclaimable, gauge, "stride_kv_cache_pages_reclaimable",                                                 \
    "Cached KV pages no sequence references (free for allocation, evicted least recently used first).")            \
  X(pages_evicted, counter, "stride_kv_cache_pages_evicted_total", "Cached KV pages evicted to make room.")         \
  X(prefix_query_tokens, counter, "stride_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.") \
  X(prefix_hit_tokens, counter, "stride_prefix_cache_hits_total", "Prompt tokens reused from the prefix cache.")   \
  X(prefix_queries, counter, "stride_prefix_cache_lookups_total", "Prefix cache lookups (one per new sequence).")  \
  X(prefix_hits, counter, "stride_prefix_cache_lookup_hits_total", "Prefix cache lookups that reused some pages.") \
  /* Offload tier (all 0 without one). */                                                                          \
  X(pages_offloaded, counter, "stride_kv_offload_pages_offloaded_total",                                           \
    "Cached KV pages copied to the offload tier when evicted from the pool.")                                      \
  X(pages_restored, counter, "stride_kv_offload_pages_restored_total",                                             \
    "KV pages brought back from the offload tier on a prefix hit.")                                                \
  X(tier_slots_used, gauge, "stride_kv_offload_slots_used", "Offload tier slots (one KV page each) in use.")       \
  X(tier_slots_total, gauge, "stride_kv_offload_slots_capacity", "Offload tier slots in all (0: no tier).")        \
  X(tier_hits, counter, "stride_kv_offload_hits_total", "Needed prefix pages found in the offload tier.")          \
  X(tier_misses, counter, "stride_kv_offload_misses_total",                                                        \
    "Needed prefix pages found neither in the pool nor in the offload tier.")                                      \
  /* Top-k hot set (topk resident=N with a tier; 0 otherwise). */                                                  \
  X(topk_pages_offloaded, counter, "stride_kv_topk_pages_offloaded_total",                                         \
    "Top-k pages moved from the pool to the offload tier (hot set over resident=N).")                              \
  X(topk_pages_restored, counter, "stride_kv_topk_pages_restored_total",                                           \
    "Top-k pages brought back from the offload tier because the selector picked them.")                            \
  X(topk_pages_prefetched, counter, "stride_kv_topk_pages_prefetched_total",                                       \
    "Top-k pages ranked just after a step's cut and prefetched for the next step.")                                \
  X(topk_prefetch_hits, counter, "stride_kv_topk_prefetch_hits_total",                                             \
    "Top-k restores of a page prefetched on the step before.")                                                     \
  X(topk_offload_refused, counter, "stride_kv_topk_offload_refused_total",                                         \
    "Top-k pages kept in the pool because the offload tier had no free slot.")                                     \
  X(topk_restore_failed, counter, "stride_kv_topk_restore_failed_total",                                           \
    "Picked top-k pages that found neither a reserved nor a free pool page (the step failed).")                    \
  X(tier_slots_owned, gauge, "stride_kv_topk_tier_slots_owned", "Offload tier slots owned by top-k pages.")      \
  /* Shared tier (kv_shared_tier: Redis; all 0 without one). */                                                   \
  X(shared_tier_up, gauge, "stride_kv_shared_tier_up", "1 while the shared KV tier (Redis) answers.")              \
  X(shared_tier_hits, counter, "stride_kv_shared_tier_hits_total",                                                 \
    "Prefix pages imported from the shared KV tier (verified).")                                                  \
  X(shared_tier_misses, counter, "stride_kv_shared_tier_misses_total",                                             \
    "Prefix pages asked of the shared KV tier and not found.")                                                    \
  X(shared_tier_errors, counter, "stride_kv_shared_tier_errors_total",                                             \
    "Shared KV tier errors: connection failures, timeouts, corrupt or foreign values.")                          \
  X(shared_tier_published, counter, "stride_kv_shared_tier_published_total", "Pages written to the shared KV tier.") \
  X(shared_tier_dropped, counter, "stride_kv_shared_tier_dropped_total",                                           \
    "Pages not published: the queue was full or the shared KV tier was down.")                                    \
  X(shared_tier_bytes_in, counter, "stride_kv_shared_tier_bytes_in_total", "Bytes read from the shared KV tier.")  \
  X(shared_tier_bytes_out, counter, "stride_kv_shared_tier_bytes_out_total", "Bytes written to the shared KV tier.")

struct KvStats {
#define STRIDE_KV_FIELD(field, kind, metric, help) int64_t field = 0;
  STRIDE_KV_COUNTERS(STRIDE_KV_FIELD)
#undef STRIDE_KV_FIELD
  // Wall time of attention (selection + kernel), by the layer's policy kind
  // (published with a policy label).
  std::array<double, kPolicyKinds> attention_seconds{};
  // pages_read and pages_present split by the layer's policy kind (per-kv-head
  // lists count entries / n_kv_heads), for the read share per policy.
  std::array<double, kPolicyKinds> pages_read_by_policy{}, pages_present_by_policy{};
};

// Calls f(metric, kind, help, value) for every row of STRIDE_KV_COUNTERS.
template <typename F>
void for_each_kv_counter(const KvStats& st, F&& f) {
#define STRIDE_KV_VISIT(field, kind, metric, help) f(metric, #kind, help, st.field);
  STRIDE_KV_COUNTERS(STRIDE_KV_VISIT)
#undef STRIDE_KV_VISIT
}

}  // namespace stride
