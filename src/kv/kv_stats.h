#pragma once
// What the KV manager counts: pool occupancy, pages attention read, the
// prefix cache, the offload tier and the top-k hot set.
#include <array>
#include <cstdint>

#include "attention/policy.h"

namespace stride {

struct KvStats {
  int64_t pages_total = 0;
  int64_t pages_used = 0;
  int64_t peak_pages_used = 0;
  int64_t bytes_per_page = 0;
  // Both summed over the query blocks of every committed layer plan (a decode
  // step is one block): pages a block read, and pages its sequence held on that layer.
  int64_t pages_read = 0;
  int64_t pages_present = 0;
  // Wall time of attention (selection + kernel), by the layer's policy kind.
  std::array<double, kPolicyKinds> attention_seconds{};
  // Of pages_read: pages holding a key inside the local window (p - window, p]
  // of a query p of the block (window, rswa, strided and top-k policies).
  int64_t window_pages_read = 0;
  // Prefix cache: registered pages (referenced or not), the unreferenced ones
  // among them (reclaimable: pages_used does not count them), pages evicted.
  int64_t pages_cached = 0;
  int64_t pages_reclaimable = 0;
  int64_t pages_evicted = 0;
  // add_sequence_with_prefix calls: prompt tokens looked up and tokens reused
  // (hit rate = hit_tokens / query_tokens), and the same counted in calls.
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_queries = 0;
  int64_t prefix_hits = 0;
  // Offload tier (all 0 without one): pages copied to the tier on eviction and
  // restored from it; its slots in use and in all; needed prefix pages found
  // in the tier (hits) and in neither the pool nor the tier (misses, counted
  // over the longest candidate prefix of each lookup).
  int64_t pages_offloaded = 0;
  int64_t pages_restored = 0;
  int64_t tier_slots_used = 0;
  int64_t tier_slots_total = 0;
  int64_t tier_hits = 0;
  int64_t tier_misses = 0;
  // Top-k hot set (topk resident=N with a tier; 0 otherwise): pages moved
  // from the pool to the tier and brought back for a selection; tier slots
  // asked to prefetch (pages ranked right after the cut) and restores of a
  // page prefetched the step before; offloads refused because every tier slot
  // was owned or pinned (the page then stays in the pool: nothing is lost);
  // restores that found neither a page reserved by prepare() nor a free one
  // (the step then fails with ResourceExhausted); tier slots owned by top-k pages.
  int64_t topk_pages_offloaded = 0;
  int64_t topk_pages_restored = 0;
  int64_t topk_pages_prefetched = 0;
  int64_t topk_prefetch_hits = 0;
  int64_t topk_offload_refused = 0;
  int64_t topk_restore_failed = 0;
  int64_t tier_slots_owned = 0;
};

}  // namespace stride
