#pragma once
// Where a sequence sharded by position over `world` ranks is cut: rank r
// holds [r * S, (r + 1) * S), the last rank the rest (and the generated
// tokens), for a run of S tokens that stays put when the prompt grows, so a
// longer prompt with the same prefix finds each rank's cached pages
// (kv_manager.h's cached_shard_end). A prompt of (world - 1) * S tokens or
// fewer is cut balanced instead, since the fixed run would leave the last
// ranks nothing: boundaries on whole kernel segments (pages when the prompt
// has fewer segments than ranks) where every rank's prefill costs about the
// same (shard_cost.h), so under dense attention the first ranks take more
// tokens than the last, whose queries read more keys.
//
// The automatic S splits the longest context evenly, in whole kernel
// segments (kSegmentPages pages): floor(max_context / world) rounded down to
// a segment, so every prompt up to the context past (world - 1) * S keeps
// its boundaries, a prompt of the whole context is balanced, and the
// boundaries fall where the one-host kernel cuts its segments.
#include <cstdint>
#include <vector>

#include "kv/shard_cost.h"

namespace stride {

// --shard-tokens not given: derive S from the context (automatic_shard_tokens).
constexpr int64_t kAutoShardTokens = -1;

// S for a set of `world` ranks under a context of max_context tokens; 0 (the
// balanced cut) when a rank's share is less than one segment.
int64_t automatic_shard_tokens(int64_t max_context, int world, int page_size);

// The S a shard set uses: `requested` (0: balanced, > 0: that many tokens
// rounded up to pages) or, for kAutoShardTokens, the automatic one.
int64_t resolve_shard_tokens(int64_t requested, int64_t max_context, int world, int page_size);

// Where an n-token prompt is cut: world + 1 positions, rank r holding
// [b[r], b[r + 1]), b[0] = 0 and b[world] = n. Under shard_tokens (a resolved
// S) rank r < world - 1 holds [r * S, (r + 1) * S) with S rounded up to pages
// when n > (world - 1) * S; else the balanced cut (balanced_boundaries) with
// no rank above S.
std::vector<int64_t> shard_boundaries(int64_t n, int world, int page_size, int64_t shard_tokens,
                                      const ShardCostModel& cost);

// The cut whose costliest rank costs the least, no rank holding more than
// `most` tokens (0: no bound; the fixed run S, so the pools the layout was
// sized for hold it), boundaries on whole segments (kSegmentPages pages;
// whole pages when the prompt has fewer segments than ranks or `most` is
// not whole segments); of the cuts that cost as little, the one whose
// earlier ranks hold the most. A prompt of fewer pages than ranks leaves the
// last ranks empty (b[r] == b[r + 1]).
std::vector<int64_t> balanced_boundaries(int64_t n, int world, int page_size, const ShardCostModel& cost,
                                         int64_t most = 0);

// The most tokens a rank holds of an n-token prompt under any cost model,
// for sizing a pool before the model is loaded: the largest shard of the
// steepest cost's cut (steepest_shard_cost) and one segment more for the
// cut's granularity, at most n.
int64_t largest_shard_tokens(int64_t n, int world, int page_size, int64_t shard_tokens);

}  // namespace stride
