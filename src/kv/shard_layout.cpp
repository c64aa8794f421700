#include "kv/shard_layout.h"

#include <algorithm>

#include "attention/work_partition.h"

namespace stride {

namespace {

int64_t whole_pages(int64_t tokens, int page_size) { return (tokens + page_size - 1) / page_size * page_size; }

// The cut of n tokens into `world` runs of at most `most` tokens (0: no
// bound), the inner boundaries on multiples of `unit`, whose costliest run
// costs at most `limit`, each run ending as late as it may; empty when none
// does.
std::vector<int64_t> cut_within(int64_t n, int world, int64_t unit, const ShardCostModel& cost, int64_t limit,
                                int64_t most) {
  const int64_t units = (n + unit - 1) / unit;  // the last one may be partial
  std::vector<int64_t> b{0};
  int64_t at = 0;  // units before the run
  for (int r = 0; r + 1 < world; ++r) {
    // The latest end leaving each later rank a unit; cost grows with the end.
    int64_t lo = at + 1, hi = units - (world - 1 - r);
    if (most > 0) hi = std::min(hi, at + most / unit);
    if (lo > hi || shard_prefill_cost(cost, at * unit, lo * unit) > limit) return {};
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (shard_prefill_cost(cost, at * unit, mid * unit) <= limit) lo = mid;
      else hi = mid - 1;
    }
    at = lo;
    b.push_back(at * unit);
  }
  if (shard_prefill_cost(cost, at * unit, n) > limit || (most > 0 && n - at * unit > most)) return {};
  b.push_back(n);
  return b;
}

}  // namespace

int64_t automatic_shard_tokens(int64_t max_context, int world, int page_size) {
  if (world < 2 || page_size < 1 || max_context < 1) return 0;
  const int64_t segment = (int64_t)kSegmentPages * page_size;
  return max_context / world / segment * segment;
}

int64_t resolve_shard_tokens(int64_t requested, int64_t max_context, int world, int page_size) {
  return requested == kAutoShardTokens ? automatic_shard_tokens(max_context, world, page_size) : requested;
}

std::vector<int64_t> balanced_boundaries(int64_t n, int world, int page_size, const ShardCostModel& cost,
                                         int64_t most) {
  if ((n + page_size - 1) / page_size < world) {  // too short for every rank: whole pages in rank order, the last ranks none
    std::vector<int64_t> b;
    for (int r = 0; r < world; ++r) b.push_back(std::min(n, (int64_t)r * page_size));
    b.push_back(n);
    return b;
  }
  const int64_t segment = (int64_t)kSegmentPages * page_size;
  const int64_t whole = shard_prefill_cost(cost, 0, n);  // a limit every cut meets
  // Segments when every rank can have whole ones within `most`, else pages; a `most` no page cut meets is dropped.
  int64_t unit = (n + segment - 1) / segment >= world ? segment : page_size;
  if (unit == segment && cut_within(n, world, unit, cost, whole, most).empty()) unit = page_size;
  if (cut_within(n, world, unit, cost, whole, most).empty()) most = 0;
  // The least limit some cut meets: cut_within succeeds from it upwards.
  int64_t lo = 0, hi = whole;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cut_within(n, world, unit, cost, mid, most).empty()) lo = mid + 1;
    else hi = mid;
  }
  return cut_within(n, world, unit, cost, lo, most);
}

std::vector<int64_t> shard_boundaries(int64_t n, int world, int page_size, int64_t shard_tokens,
                                      const ShardCostModel& cost) {
  const int64_t fixed = whole_pages(shard_tokens, page_size);
  // No rank takes more than the fixed run: a pool sized for the layout at the whole context holds every cut.
  if (fixed <= 0 || (world - 1) * fixed >= n) return balanced_boundaries(n, world, page_size, cost, fixed);
  std::vector<int64_t> b;
  for (int r = 0; r < world; ++r) b.push_back(r * fixed);
  b.push_back(n);
  return b;
}

int64_t largest_shard_tokens(int64_t n, int world, int page_size, int64_t shard_tokens) {
  if (world < 1 || page_size < 1 || n < 1) return n;
  const std::vector<int64_t> b = shard_boundaries(n, world, page_size, shard_tokens, steepest_shard_cost());
  int64_t largest = 0;
  for (size_t r = 0; r + 1 < b.size(); ++r) largest = std::max(largest, b[r + 1] - b[r]);
  const int64_t fixed = whole_pages(shard_tokens, page_size);
  if (fixed > 0 && (world - 1) * fixed < n) return largest;  // the fixed runs: the same for every model
  return std::min(n, largest + (int64_t)kSegmentPages * page_size);
}

}  // namespace stride
