#include "kv/kv_pages_needed.h"

#include <algorithm>
#include <vector>

namespace stride {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Step starts evaluated at most: the pages kept for good (sinks, strided
// blocks, global ranges, dense) only grow with the length, and the window's
// share depends on the start's offset within a page, which repeats at least
// every page_size steps; so the last starts hold the maximum.
constexpr int64_t kMaxStarts = 64;

// Pages among [first_page, ceil(q0 / page_size)) with a key that a query >= q0
// may attend (policy_keeps): a sequence that starts at first_page (a shard,
// add_sequence_at) holds none before it, its sinks included. Windows and
// sinks are intervals of keys, so their pages are counted in closed form;
// strided policies are checked key by key.
int64_t pages_kept(const PolicySpec& p, int page_size, int64_t q0, int64_t first_page) {
  const int64_t n_pages = ceil_div(q0, page_size);
  if (q0 <= 0 || n_pages <= first_page) return 0;
  switch (p.kind) {
    case PolicyKind::Dense:
    case PolicyKind::TopK: return n_pages - first_page;
    case PolicyKind::Window:
    case PolicyKind::RSWA: {
      // Keys (q0 - window, q0), and for R-SWA [0, sinks) as well.
      const int64_t window_page = std::max<int64_t>(0, q0 - p.window + 1) / page_size;
      const int64_t sink_pages = p.kind == PolicyKind::RSWA ? ceil_div(std::min(p.sinks, q0), page_size) : 0;
      const int64_t sinks_held = std::max<int64_t>(0, std::min(sink_pages, window_page) - first_page);
      return n_pages - std::max(window_page, first_page) + sinks_held;
    }
    case PolicyKind::Strided: break;
  }
  int64_t kept = 0;
  for (int64_t L = first_page; L < n_pages; ++L) {
    const int64_t first = L * page_size, last = std::min<int64_t>(first + page_size, q0) - 1;
    for (int64_t k = last; k >= first; --k)  // latest keys first: the ones most likely kept
      if (policy_keeps(p, k, q0)) {
        ++kept;
        break;
      }
  }
  return kept;
}

int64_t layer_pages_held(const PolicySpec& p, int page_size, int64_t first_page, int64_t from, int64_t n, int chunk) {
  if (n <= 0 || page_size <= 0) return 0;
  chunk = std::max(chunk, 1);
  const int64_t n_steps = ceil_div(n, chunk);
  int64_t most = 0;
  for (int64_t s = std::max<int64_t>(0, n_steps - kMaxStarts); s < n_steps; ++s) {
    const int64_t q0 = from + s * chunk;
    const int64_t end = std::min(q0 + chunk, from + n);
    const int64_t written = ceil_div(end, page_size) - ceil_div(q0, page_size);  // pages the step adds
    most = std::max(most, pages_kept(p, page_size, q0, first_page) + written);
  }
  return most;
}

}  // namespace

bool page_needed(const PolicySpec& p, int page_size, int64_t page, int64_t next_q) {
  const int64_t first = page * page_size;
  // Latest slots first: the ones most likely kept.
  for (int64_t pos = first + page_size - 1; pos >= first; --pos)
    if (policy_keeps(p, pos, next_q)) return true;
  return false;
}

int64_t layer_pages_for_growth(const PolicySpec& p, int page_size, int64_t from, int64_t n, int chunk) {
  return layer_pages_held(p, page_size, 0, from, n, chunk);
}

int64_t shard_pages_for_growth(std::span<const PolicySpec> layers, int page_size, int64_t first_pos, int64_t from,
                               int64_t n, int chunk) {
  if (page_size <= 0) return 0;
  const int64_t first_page = first_pos / page_size;
  // Layers sharing a policy share the count (most models have one or two).
  std::vector<std::pair<const PolicySpec*, int64_t>> seen;
  int64_t total = 0;
  for (const PolicySpec& p : layers) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& e) { return *e.first == p; });
    if (it == seen.end()) {
      seen.emplace_back(&p, layer_pages_held(p, page_size, first_page, from, n, chunk));
      it = seen.end() - 1;
    }
    total += it->second;
  }
  return total;
}

int64_t pages_for_growth(std::span<const PolicySpec> layers, int page_size, int64_t from, int64_t n, int chunk) {
  return shard_pages_for_growth(layers, page_size, 0, from, n, chunk);
}

}  // namespace stride
