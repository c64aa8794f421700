#include "attention/head_budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace stride {

std::vector<double> head_shares_from_mass(const std::vector<double>& distant_mass, const std::vector<uint8_t>& takes_part,
                                          double retrieval) {
  std::vector<double> shares(distant_mass.size(), -1.0);
  std::vector<size_t> order;
  for (size_t i = 0; i < distant_mass.size(); ++i)
    if (i < takes_part.size() && takes_part[i]) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return distant_mass[a] > distant_mass[b]; });
  const size_t n_retrieval =
      std::min(order.size(), (size_t)std::ceil(std::clamp(retrieval, 0.0, 1.0) * (double)order.size() - 1e-9));
  for (size_t r = 0; r < order.size(); ++r)
    shares[order[r]] = r < n_retrieval ? std::max(distant_mass[order[r]], 1e-6) : 0.0;
  return shares;
}

namespace {

// Splits `pool` among `active` in proportion to w, none above cap: entries
// whose proportional share reaches cap are set to cap and leave, until the
// rest fit; then largest remainder. Returns what could not be placed.
int64_t fill_proportional(std::vector<size_t> active, const std::vector<double>& w, int64_t pool, int64_t cap,
                          std::vector<int64_t>& out) {
  while (!active.empty() && pool > 0) {
    const double total = std::accumulate(active.begin(), active.end(), 0.0, [&](double s, size_t i) { return s + w[i]; });
    if (!(total > 0.0)) break;
    std::vector<size_t> left;
    for (const size_t i : active) {
      if ((double)pool * w[i] / total >= (double)cap) {
        out[i] = cap;
      } else {
        left.push_back(i);
      }
    }
    if (left.size() < active.size()) {
      pool -= cap * (int64_t)(active.size() - left.size());
      active = std::move(left);
      continue;
    }
    std::vector<std::pair<double, size_t>> rest;  // (-fraction, index): largest first, ties to the lower index
    int64_t placed = 0;
    for (const size_t i : active) {
      const double exact = (double)pool * w[i] / total;
      out[i] = (int64_t)std::floor(exact);
      placed += out[i];
      rest.push_back({-(exact - std::floor(exact)), i});
    }
    std::sort(rest.begin(), rest.end());
    for (size_t r = 0; r < rest.size() && placed < pool; ++r, ++placed) ++out[rest[r].second];
    return pool - placed;
  }
  return std::max<int64_t>(0, pool);
}

}  // namespace

std::vector<int64_t> split_head_picks(const std::vector<double>& shares, int64_t picks, int64_t cap) {
  cap = std::max<int64_t>(0, cap);
  picks = std::clamp<int64_t>(picks, 0, cap);
  std::vector<int64_t> out(shares.size(), picks);
  std::vector<size_t> positive, zero;
  for (size_t i = 0; i < shares.size(); ++i) {
    if (shares[i] < 0.0) continue;
    out[i] = 0;
    (shares[i] > 0.0 ? positive : zero).push_back(i);
  }
  const int64_t pool = picks * (int64_t)(positive.size() + zero.size());
  const int64_t left = fill_proportional(positive, shares, pool, cap, out);
  if (left > 0) {
    const std::vector<double> equal(shares.size(), 1.0);
    fill_proportional(zero, equal, left, cap, out);
  }
  return out;
}

}  // namespace stride
