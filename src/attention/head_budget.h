#pragma once
// Per-head top-k budgets (DuoAttention-style): a calibration pass measures how
// much of each (layer, kv head)'s attention falls outside the sinks and the
// local window; heads that look near (streaming heads) then read sinks +
// window only, and the pages they would have picked go to the heads that
// retrieve. The total read is plain top-k's at the same sparsity.
#include <cstdint>
#include <vector>

namespace stride {

// Shares of the picks from a profile's distant mass ([entries]; one entry per
// (layer, kv head)). share[i] < 0: entry i does not take part (a layer that is
// not top-k). Of the entries that take part, the ceil(retrieval * n) with the
// most distant mass (ties to the lower index) are retrieval heads and share
// in proportion to their distant mass (at least a tiny positive share); the
// others are streaming heads, share 0.
std::vector<double> head_shares_from_mass(const std::vector<double>& distant_mass, const std::vector<uint8_t>& takes_part,
                                          double retrieval);

// Picks per entry when the entries with share >= 0 pool their budget: each
// would pick `picks` groups under plain top-k, so the pool is picks x their
// count (at most cap x their count). It is split in proportion to the shares
// (largest remainder, ties to the lower index), no entry above `cap` (its
// candidates); what capped entries cannot take goes to the others in
// proportion, and once every positive share is capped, equally to the
// zero-share entries. Entries with share < 0 get `picks`.
std::vector<int64_t> split_head_picks(const std::vector<double>& shares, int64_t picks, int64_t cap);

}  // namespace stride
