#pragma once
// How many pool pages a sequence needs: the one answer that admission, the
// engine's default pool size and `stride plan` share. It follows from the
// policy predicate alone (policy_keeps), exactly as the KV manager holds and
// releases pages: during a step that starts at length q0 a layer holds the
// pages with a key some query >= q0 may still attend, plus every page the
// step writes (prepare() reserves them on every layer; commit() releases
// what the policy no longer keeps).
#include <cstdint>
#include <span>

#include "attention/policy.h"

namespace stride {

// The most pages one layer holds while a sequence grows from `from` to
// `from + n` tokens in steps of at most `chunk` tokens. Constant time per
// step start for dense, window, R-SWA and top-k; strided policies cost
// O(pages x page_size) per start (64 starts at most).
int64_t layer_pages_for_growth(const PolicySpec& p, int page_size, int64_t from, int64_t n, int chunk);

// Whether a layer with policy p keeps any slot of logical page `page` for
// the query at next_q: the pages a prefix hit, a saved session or a cut
// sequence must still have.
bool page_needed(const PolicySpec& p, int page_size, int64_t page, int64_t next_q);

// The same summed over the layers.
int64_t pages_for_growth(std::span<const PolicySpec> layers, int page_size, int64_t from, int64_t n, int chunk);

// The same for a sequence whose first position is first_pos (a multiple of
// page_size: a shard, add_sequence_at): it holds no page before first_pos,
// so neither the sinks of R-SWA nor any key a policy keeps for good there.
int64_t shard_pages_for_growth(std::span<const PolicySpec> layers, int page_size, int64_t first_pos, int64_t from,
                               int64_t n, int chunk);

}  // namespace stride
