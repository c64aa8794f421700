// Sampler chain, in llama.cpp's order: logit bias -> penalties -> (greedy | top-k -> top-p ->
// min-p -> temperature -> softmax -> seeded draw).
//
// candidates_ holds (logit, id). Filters shrink the live prefix [0, n); a
// prefix [0, sorted) may be known to be in descending order. Nothing sorts the
// whole vocabulary (49k-262k): top-k uses partial_sort, top-p buckets.
#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ops.h"
#include "sampler/penalties.h"

namespace stride {

namespace {

using Candidate = std::pair<float, int32_t>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Descending logit; ties go to the lower id (so greedy picks the lowest id).
bool better(const Candidate& a, const Candidate& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

// Uniform in [0, 1) from 53 random bits: identical on every standard library,
// unlike std::uniform_real_distribution.
double uniform01(std::mt19937_64& rng) { return (double)(rng() >> 11) * 0x1.0p-53; }

// The id of the largest logit, the lowest id on ties; NaN never wins, and
// when nothing beats -inf the answer is id 0 (as `better` orders them).
int32_t argmax_logit(const float* logits, int n) {
  float best = kNegInf;
  int32_t id = 0;
  for (int i = 0; i < n; ++i) {
    if (logits[i] > best) {  // false for NaN
      best = logits[i];
      id = i;
    }
  }
  return id;
}

float max_logit(const std::vector<Candidate>& c, size_t n, size_t sorted) {
  if (sorted > 0) return c[0].first;
  float mx = kNegInf;
  for (size_t i = 0; i < n; ++i) mx = std::max(mx, c[i].first);
  return mx;
}

// Extends the sorted prefix of c[0, n) to at least `want` entries (or n).
void grow_sorted(std::vector<Candidate>& c, size_t n, size_t& sorted, size_t want) {
  want = std::min(n, want);
  if (want <= sorted) return;
  // c[sorted, n) are all <= c[0, sorted): sorting inside the rest is enough.
  std::partial_sort(c.begin() + (std::ptrdiff_t)sorted, c.begin() + (std::ptrdiff_t)want,
                    c.begin() + (std::ptrdiff_t)n, better);
  sorted = want;
}

// Smallest descending prefix with cumulative probability >= top_p (>= 1 entry).
// After top-k the candidates are sorted and a walk suffices. Otherwise, like
// llama.cpp, bucket by distance below the max logit: buckets before the one
// where the cumulative mass crosses top_p are kept whole, only that bucket is
// sorted. O(n) on a 262k vocabulary, where nth_element or sorting is not.
size_t top_p_cut(std::vector<Candidate>& c, size_t n, size_t& sorted, float top_p) {
  const float mx = max_logit(c, n, sorted);
  if (!(mx > kNegInf)) return n;
  auto weight = [mx](const Candidate& x) { return (double)std::exp(x.first - mx); };

  size_t first = 0, last = n;  // the range the final walk covers
  double acc = 0.0;            // mass of c[0, first)
  double target = 0.0;
  if (sorted >= n) {
    for (size_t i = 0; i < n; ++i) target += weight(c[i]);
    target *= (double)top_p;
  } else {
    constexpr int kBuckets = 512;
    constexpr float kRange = 32.0f;  // logits further below the max share the last bucket
    const float scale = (float)kBuckets / kRange;
    auto bucket_of = [&](const Candidate& x) {
      const float d = (mx - x.first) * scale;  // monotone in the logit: buckets keep order
      return d < (float)(kBuckets - 1) ? (int)d : kBuckets - 1;
    };
    std::vector<double> bucket_mass(kBuckets, 0.0);
    for (size_t i = 0; i < n; ++i) bucket_mass[(size_t)bucket_of(c[i])] += weight(c[i]);
    for (double m : bucket_mass) target += m;
    target *= (double)top_p;
    int cut = 0;
    while (cut < kBuckets - 1 && acc + bucket_mass[(size_t)cut] < target) {
      acc += bucket_mass[(size_t)cut++];
    }
    const auto begin = c.begin();
    const auto upto = std::partition(begin, begin + (std::ptrdiff_t)n,
                                     [&](const Candidate& x) { return bucket_of(x) <= cut; });
    const auto before = std::partition(begin, upto,
                                       [&](const Candidate& x) { return bucket_of(x) < cut; });
    std::sort(before, upto, better);
    first = (size_t)(before - begin);
    last = (size_t)(upto - begin);
  }
  size_t i = first;
  while (i < last) {
    acc += weight(c[i]);
    ++i;
    if (acc >= target) break;
  }
  // c[0, i) is in order only when the walk started at the front.
  sorted = first == 0 ? i : 0;
  return std::max<size_t>(i, 1);
}

// Keeps p >= min_p * p_max, i.e. exp(logit - max) >= min_p (>= 1 entry).
size_t min_p_cut(std::vector<Candidate>& c, size_t n, size_t& sorted, float min_p) {
  if (sorted == 0) grow_sorted(c, n, sorted, 1);  // the max goes first: it always stays
  const double mx = c[0].first;
  auto keep = [&](const Candidate& x) { return std::exp((double)x.first - mx) >= (double)min_p; };
  size_t i = 1;
  while (i < sorted && keep(c[i])) ++i;
  if (i < sorted) {  // the cut falls inside the sorted prefix
    sorted = i;
    return i;
  }
  const auto mid = std::partition(c.begin() + (std::ptrdiff_t)sorted,
                                  c.begin() + (std::ptrdiff_t)n, keep);
  return (size_t)(mid - c.begin());
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

size_t Sampler::weigh(const float* logits, int n_vocab, const std::vector<int32_t>& history, double* total,
                      bool* certain) {
  auto& c = candidates_;
  *certain = true;
  *total = 1.0;
  if (params_.temperature <= 0.0f && params_.logit_bias.empty() && !penalties_active(params_)) {
    // Plain greedy: one pass over the logits, no candidate list of the whole vocabulary.
    const int32_t id = argmax_logit(logits, n_vocab);
    c.assign(1, {std::isnan(logits[id]) ? kNegInf : logits[id], id});
    return 1;
  }
  c.resize((size_t)n_vocab);
  for (int i = 0; i < n_vocab; ++i) {
    c[(size_t)i] = {std::isnan(logits[i]) ? kNegInf : logits[i], i};  // NaN would break ordering
  }
  // A masked token (-inf) stays masked whatever its bias.
  for (const LogitBias& b : params_.logit_bias) {
    if (b.id >= 0 && b.id < n_vocab) c[(size_t)b.id].first += b.bias;
  }
  if (penalties_active(params_)) {
    for (const TokenCount& tc : recent_token_counts(params_, history, n_vocab)) {
      c[(size_t)tc.id].first = penalize(params_, c[(size_t)tc.id].first, tc.count);
    }
  }
  if (params_.temperature <= 0.0f) {
    std::iter_swap(c.begin(), std::min_element(c.begin(), c.end(), better));
    return 1;
  }

  size_t n = c.size();
  size_t sorted = 0;  // c[0, sorted) is the descending top of c[0, n)
  if (params_.top_k > 0 && (size_t)params_.top_k < n) {
    n = (size_t)params_.top_k;
    std::partial_sort(c.begin(), c.begin() + (std::ptrdiff_t)n, c.end(), better);
    sorted = n;
  }
  if (params_.top_p < 1.0f) n = top_p_cut(c, n, sorted, params_.top_p);
  sorted = std::min(sorted, n);
  if (params_.min_p > 0.0f) n = min_p_cut(c, n, sorted, params_.min_p);
  sorted = std::min(sorted, n);

  // Temperature, softmax (unnormalized weights).
  const double mx = max_logit(c, n, sorted);
  if (!(mx > (double)kNegInf)) {  // everything masked: fall back to the lowest id
    std::iter_swap(c.begin(), std::min_element(c.begin(), c.begin() + (std::ptrdiff_t)n, better));
    return 1;
  }
  const double inv_t = 1.0 / (double)params_.temperature;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const float w = (float)std::exp(((double)c[i].first - mx) * inv_t);
    c[i].first = w;  // the logit is no longer needed
    sum += w;
  }
  *certain = false;
  *total = sum;
  return n;
}

int32_t Sampler::sample(const float* logits, int n_vocab, const std::vector<int32_t>& history) {
  if (n_vocab <= 0) return -1;
  double total = 0.0;
  bool certain = false;
  const size_t n = weigh(logits, n_vocab, history, &total, &certain);
  const auto& c = candidates_;
  if (certain) return c[0].second;
  const double u = uniform01(rng_) * total;
  double cum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    cum += c[i].first;
    if (u < cum) return c[i].second;
  }
  return c[n - 1].second;  // unreachable unless rounding: cum ends exactly at total
}

TokenDistribution Sampler::distribution(const float* logits, int n_vocab, const std::vector<int32_t>& history) {
  TokenDistribution d;
  if (n_vocab <= 0) return d;
  double total = 0.0;
  bool certain = false;
  const size_t n = weigh(logits, n_vocab, history, &total, &certain);
  d.ids.resize(n);
  d.probs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    d.ids[i] = candidates_[i].second;
    d.probs[i] = certain ? 1.0 : (double)candidates_[i].first / total;
  }
  return d;
}

int32_t Sampler::draw(const TokenDistribution& d) {
  if (d.ids.empty()) return -1;
  if (d.ids.size() == 1) return d.ids[0];
  const double u = uniform01(rng_);
  double cum = 0.0;
  for (size_t i = 0; i < d.ids.size(); ++i) {
    cum += d.probs[i];
    if (u < cum) return d.ids[i];
  }
  return d.ids.back();
}

double Sampler::uniform() { return uniform01(rng_); }

double TokenDistribution::prob_of(int32_t id) const {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return probs[i];
  return 0.0;
}

void log_softmax(const float* logits, int n, std::vector<float>& out) {
  out.resize(n > 0 ? (size_t)n : 0);
  if (n <= 0) return;
  const double lse = log_sum_exp(logits, n);
  for (int i = 0; i < n; ++i) out[(size_t)i] = log_prob(logits[i], lse);
}

}  // namespace stride
