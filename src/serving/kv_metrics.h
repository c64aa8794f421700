#pragma once
// The metric of each KV manager counter (kv/kv_stats.h): its name, kind and
// help, as `/metrics`, `stride run --json` and the tools publish it.
#include <cstddef>
#include <cstdint>
#include <iterator>

#include "kv/kv_stats.h"

namespace stride::serving {

struct KvMetric {
  const char* name;
  const char* kind;  // "gauge" or "counter"
  const char* help;
  int64_t KvStats::*field;
};

inline constexpr KvMetric kKvMetrics[] = {
    {"stride_kv_cache_pages_capacity", "gauge", "KV pages in the pool.", &KvStats::pages_total},
    {"stride_kv_cache_pages_used", "gauge", "KV pages in use.", &KvStats::pages_used},
    {"stride_kv_cache_pages_peak", "gauge", "Most KV pages ever in use (watermark).", &KvStats::peak_pages_used},
    {"stride_kv_cache_page_bytes", "gauge", "Bytes per KV page (all layers share a size).", &KvStats::bytes_per_page},
    // Summed over the query blocks of every committed layer plan (a decode step is one block).
    {"stride_attention_pages_read_total", "counter", "KV pages attention read, summed over query blocks.",
     &KvStats::pages_read},
    {"stride_attention_pages_present_total", "counter",
     "KV pages the attending sequences held with a key a query of the block may see (causal), summed over query "
     "blocks.",
     &KvStats::pages_present},
    // Of pages_read: pages holding a key in the local window (p - window, p] of a query p of the block.
    {"stride_attention_window_pages_read_total", "counter",
     "Of the KV pages attention read, those holding a key in the local window of the block's last query.",
     &KvStats::window_pages_read},
    {"stride_kv_cache_pages_cached", "gauge", "KV pages held by the prefix cache (in use or reclaimable).",
     &KvStats::pages_cached},
    {"stride_kv_cache_pages_reclaimable", "gauge",
     "Cached KV pages no sequence references (free for allocation, evicted least recently used first).",
     &KvStats::pages_reclaimable},
    {"stride_kv_cache_pages_evicted_total", "counter", "Cached KV pages evicted to make room.",
     &KvStats::pages_evicted},
    {"stride_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
     &KvStats::prefix_query_tokens},
    {"stride_prefix_cache_hits_total", "counter", "Prompt tokens reused from the prefix cache.",
     &KvStats::prefix_hit_tokens},
    {"stride_prefix_cache_lookups_total", "counter", "Prefix cache lookups (one per new sequence).",
     &KvStats::prefix_queries},
    {"stride_prefix_cache_lookup_hits_total", "counter", "Prefix cache lookups that reused some pages.",
     &KvStats::prefix_hits},
    {"stride_kv_forks_total", "counter", "Sequences forked from another (parallel sampling's branches).",
     &KvStats::forks},
    {"stride_kv_fork_pages_shared_total", "counter", "KV pages a forked sequence took from its parent, shared.",
     &KvStats::fork_pages_shared},
    {"stride_kv_fork_pages_copied_total", "counter", "Partly written KV pages copied for a forked sequence.",
     &KvStats::fork_pages_copied},
    // Offload tier (all 0 without one).
    {"stride_kv_offload_pages_offloaded_total", "counter",
     "Cached KV pages copied to the offload tier when evicted from the pool.", &KvStats::pages_offloaded},
    {"stride_kv_offload_pages_restored_total", "counter",
     "KV pages brought back from the offload tier on a prefix hit.", &KvStats::pages_restored},
    {"stride_kv_offload_slots_used", "gauge", "Offload tier slots (one KV page each) in use.",
     &KvStats::tier_slots_used},
    {"stride_kv_offload_slots_capacity", "gauge", "Offload tier slots in all (0: no tier).",
     &KvStats::tier_slots_total},
    {"stride_kv_offload_hits_total", "counter", "Needed prefix pages found in the offload tier.", &KvStats::tier_hits},
    {"stride_kv_offload_misses_total", "counter",
     "Needed prefix pages found neither in the pool nor in the offload tier.", &KvStats::tier_misses},
    // Top-k hot set (topk resident=N with a tier; 0 otherwise).
    {"stride_kv_topk_pages_offloaded_total", "counter",
     "Top-k pages moved from the pool to the offload tier (hot set over resident=N).", &KvStats::topk_pages_offloaded},
    {"stride_kv_topk_pages_restored_total", "counter",
     "Top-k pages brought back from the offload tier because the selector picked them.", &KvStats::topk_pages_restored},
    {"stride_kv_topk_pages_prefetched_total", "counter",
     "Top-k pages ranked just after a step's cut and prefetched for the next step.", &KvStats::topk_pages_prefetched},
    {"stride_kv_topk_prefetch_hits_total", "counter", "Top-k restores of a page prefetched on the step before.",
     &KvStats::topk_prefetch_hits},
    {"stride_kv_topk_offload_refused_total", "counter",
     "Top-k pages kept in the pool because the offload tier had no free slot.", &KvStats::topk_offload_refused},
    {"stride_kv_topk_restore_failed_total", "counter",
     "Picked top-k pages that found neither a reserved nor a free pool page (the step failed).",
     &KvStats::topk_restore_failed},
    {"stride_kv_topk_tier_slots_owned", "gauge", "Offload tier slots owned by top-k pages.",
     &KvStats::tier_slots_owned},
    // Shared tier (kv_shared_tier: Redis; all 0 without one).
    {"stride_kv_shared_tier_up", "gauge", "1 while the shared KV tier (Redis) answers.", &KvStats::shared_tier_up},
    {"stride_kv_shared_tier_hits_total", "counter", "Prefix pages imported from the shared KV tier (verified).",
     &KvStats::shared_tier_hits},
    {"stride_kv_shared_tier_misses_total", "counter", "Prefix pages asked of the shared KV tier and not found.",
     &KvStats::shared_tier_misses},
    {"stride_kv_shared_tier_errors_total", "counter",
     "Shared KV tier errors: connection failures, timeouts, corrupt or foreign values.", &KvStats::shared_tier_errors},
    {"stride_kv_shared_tier_published_total", "counter", "Pages written to the shared KV tier.",
     &KvStats::shared_tier_published},
    {"stride_kv_shared_tier_dropped_total", "counter",
     "Pages not published: the queue was full or the shared KV tier was down.", &KvStats::shared_tier_dropped},
    {"stride_kv_shared_tier_bytes_in_total", "counter", "Bytes read from the shared KV tier.",
     &KvStats::shared_tier_bytes_in},
    {"stride_kv_shared_tier_bytes_out_total", "counter", "Bytes written to the shared KV tier.",
     &KvStats::shared_tier_bytes_out},
};
// Every int64 counter of KvStats (they lead the struct) has its metric.
static_assert(std::size(kKvMetrics) * sizeof(int64_t) == offsetof(KvStats, attention_seconds),
              "a KvStats counter has no metric in kKvMetrics");

// Calls f(name, kind, help, value) for every metric, in the table's order.
template <typename F>
void for_each_kv_metric(const KvStats& st, F&& f) {
  for (const KvMetric& m : kKvMetrics) f(m.name, m.kind, m.help, st.*m.field);
}

}  // namespace stride::serving
