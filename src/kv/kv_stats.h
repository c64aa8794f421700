#pragma once
// What the KV manager counts. The metric each counter is published as (name,
// kind, help) belongs to the serving layer: serving/kv_metrics.h.
#include <array>
#include <cstdint>

#include "attention/policy.h"

namespace stride {

// The int64 counters come first and together: serving/kv_metrics.h publishes
// each of them (and checks that it names them all).
struct KvStats {
  int64_t pages_total = 0;
  int64_t pages_used = 0;
  int64_t peak_pages_used = 0;
  int64_t bytes_per_page = 0;
  // Summed over the query blocks of every committed layer plan (a decode step is one block).
  int64_t pages_read = 0;
  int64_t pages_present = 0;
  // Of pages_read: pages holding a key in the local window (p - window, p] of a query p of the block.
  int64_t window_pages_read = 0;
  int64_t pages_cached = 0;
  int64_t pages_reclaimable = 0;
  int64_t pages_evicted = 0;
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_queries = 0;
  int64_t prefix_hits = 0;
  // Forked sequences (KvManager::fork_sequence): how many, the pages they
  // share with their parent, and the open pages copied for them.
  int64_t forks = 0;
  int64_t fork_pages_shared = 0;
  int64_t fork_pages_copied = 0;
  // Offload tier (all 0 without one).
  int64_t pages_offloaded = 0;
  int64_t pages_restored = 0;
  int64_t tier_slots_used = 0;
  int64_t tier_slots_total = 0;
  int64_t tier_hits = 0;
  int64_t tier_misses = 0;
  // Top-k hot set (topk resident=N with a tier; 0 otherwise).
  int64_t topk_pages_offloaded = 0;
  int64_t topk_pages_restored = 0;
  int64_t topk_pages_prefetched = 0;
  int64_t topk_prefetch_hits = 0;
  int64_t topk_offload_refused = 0;
  int64_t topk_restore_failed = 0;
  int64_t tier_slots_owned = 0;
  // Shared tier (kv_shared_tier: Redis; all 0 without one).
  int64_t shared_tier_up = 0;
  int64_t shared_tier_hits = 0;
  int64_t shared_tier_misses = 0;
  int64_t shared_tier_errors = 0;
  int64_t shared_tier_published = 0;
  int64_t shared_tier_dropped = 0;
  int64_t shared_tier_bytes_in = 0;
  int64_t shared_tier_bytes_out = 0;
  // Wall time of attention (selection + kernel), by the layer's policy kind
  // (published with a policy label).
  std::array<double, kPolicyKinds> attention_seconds{};
  // pages_read and pages_present split by the layer's policy kind (per-kv-head
  // lists count entries / n_kv_heads), for the read share per policy.
  std::array<double, kPolicyKinds> pages_read_by_policy{}, pages_present_by_policy{};
};

}  // namespace stride
