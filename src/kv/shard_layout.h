#pragma once
// Where a sequence sharded by position over `world` ranks is cut: rank r
// holds [r * S, (r + 1) * S), the last rank the rest (and the generated
// tokens), for a run of S tokens that stays put when the prompt grows, so a
// longer prompt with the same prefix finds each rank's cached pages
// (kv_manager.h's cached_shard_end). A prompt of (world - 1) * S tokens or
// fewer is cut balanced instead (ceil(n / world) rounded up to pages), since
// the fixed run would leave the last ranks nothing.
//
// The automatic S splits the longest context evenly, in whole kernel
// segments (kSegmentPages pages): floor(max_context / world) rounded down to
// a segment, so every prompt up to the context past (world - 1) * S keeps
// its boundaries, a prompt of the whole context is balanced, and the
// boundaries fall where the one-host kernel cuts its segments.
#include <cstdint>

namespace stride {

// --shard-tokens not given: derive S from the context (automatic_shard_tokens).
constexpr int64_t kAutoShardTokens = -1;

// S for a set of `world` ranks under a context of max_context tokens; 0 (the
// balanced cut) when a rank's share is less than one segment.
int64_t automatic_shard_tokens(int64_t max_context, int world, int page_size);

// The S a shard set uses: `requested` (0: balanced, > 0: that many tokens
// rounded up to pages) or, for kAutoShardTokens, the automatic one.
int64_t resolve_shard_tokens(int64_t requested, int64_t max_context, int world, int page_size);

// The tokens every rank but the last holds of an n-token prompt under
// shard_tokens (a resolved S): S rounded up to pages when n > (world - 1) * S,
// else the balanced ceil(n / world) rounded up to pages.
int64_t shard_stride(int64_t n, int world, int page_size, int64_t shard_tokens);

}  // namespace stride
