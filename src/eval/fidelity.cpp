#include "eval/fidelity.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "engine/step_runner.h"
#include "kv/scoped_sequence.h"

namespace stride {

namespace {

// out = log_softmax(x) in double.
void log_softmax(const float* x, int n, std::vector<double>& out) {
  out.resize(n);
  double mx = -INFINITY;
  for (int i = 0; i < n; ++i) mx = std::max(mx, (double)x[i]);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp((double)x[i] - mx);
  const double lse = mx + std::log(sum);
  for (int i = 0; i < n; ++i) out[i] = (double)x[i] - lse;
}


}  // namespace

void FidelityAccumulator::add(const float* dense, const float* policy, int n_vocab,
                              int32_t next_token) {
  log_softmax(dense, n_vocab, lp_dense_);
  log_softmax(policy, n_vocab, lp_policy_);
  double sq = 0, kl = 0;
  int arg_d = 0, arg_p = 0;
  for (int i = 0; i < n_vocab; ++i) {
    const double d = (double)dense[i] - policy[i];
    sq += d * d;
    kl += std::exp(lp_dense_[i]) * (lp_dense_[i] - lp_policy_[i]);
    if (dense[i] > dense[arg_d]) arg_d = i;
    if (policy[i] > policy[arg_p]) arg_p = i;
  }
  sq_ += sq;
  elems_ += n_vocab;
  kl_ += kl;
  agree_ += arg_d == arg_p;
  ++n_;
  if (next_token >= 0 && next_token < n_vocab) {
    nll_dense_ -= lp_dense_[next_token];
    nll_policy_ -= lp_policy_[next_token];
    nll_dense_pos_.push_back((float)-lp_dense_[next_token]);
    nll_policy_pos_.push_back((float)-lp_policy_[next_token]);
    ++n_targets_;
  }
}

FidelityPoint FidelityAccumulator::point() const {
  FidelityPoint p;
  p.length = n_;
  if (n_ == 0) return p;
  p.mse = sq_ / (double)elems_;
  p.kl = kl_ / (double)n_;
  p.top1 = (double)agree_ / (double)n_;
  p.ppl_dense = n_targets_ ? std::exp(nll_dense_ / (double)n_targets_) : 0;
  p.ppl_policy = n_targets_ ? std::exp(nll_policy_ / (double)n_targets_) : 0;
  return p;
}

Expected<std::vector<std::vector<FidelityPoint>>> compare_engines(
    Engine& dense, const std::vector<Engine*>& policies, const std::vector<int32_t>& ids,
    std::vector<int64_t> lengths, int chunk, const std::function<void(int64_t)>& on_progress,
    std::vector<FidelityAccumulator>* accumulators) {
  std::sort(lengths.begin(), lengths.end());
  if (lengths.empty() || lengths.front() < 2) return InvalidArgument("validate: lengths must be >= 2");
  if ((int64_t)ids.size() < lengths.back())
    return InvalidArgument("validate: the text has " + std::to_string(ids.size()) +
                           " tokens, fewer than the longest length " + std::to_string(lengths.back()));
  const int n_vocab = dense.config().n_vocab;
  for (Engine* e : policies)
    if (e->config().n_vocab != n_vocab) return InvalidArgument("validate: the engines differ");
  chunk = std::max(1, chunk);
  const size_t n_pol = policies.size();
  STRIDE_ASSIGN_OR_RETURN(KvManager::SeqId sd, dense.kv().add_sequence());
  ScopedSequence seq_d(dense.kv(), sd);
  std::vector<std::unique_ptr<ScopedSequence>> seqs;
  std::vector<KvStats> before;
  for (Engine* e : policies) {
    STRIDE_ASSIGN_OR_RETURN(KvManager::SeqId sp, e->kv().add_sequence());
    seqs.push_back(std::make_unique<ScopedSequence>(e->kv(), sp));
    before.push_back(e->kv().stats());
  }

  std::vector<float> ld((size_t)chunk * n_vocab), lp((size_t)chunk * n_vocab);
  std::vector<FidelityAccumulator> acc(n_pol);
  std::vector<std::vector<FidelityPoint>> out(n_pol);
  size_t next_len = 0;
  for (int64_t pos = 0; pos < lengths.back();) {
    // A chunk never crosses a reported length, so each point is exact.
    const int n = (int)std::min<int64_t>(chunk, lengths[next_len] - pos);
    STRIDE_RETURN_IF_ERROR(run_sequence(dense.model(), dense.kv(), seq_d.id(), ids.data() + pos, n, true,
                                                 ld.data(), dense.pool()));
    for (size_t e = 0; e < n_pol; ++e) {
      Engine& pe = *policies[e];
      STRIDE_RETURN_IF_ERROR(run_sequence(pe.model(), pe.kv(), seqs[e]->id(), ids.data() + pos, n, true,
                                                lp.data(), pe.pool()));
      for (int i = 0; i < n; ++i) {
        const int64_t t = pos + i;
        // Position t predicts token t + 1 (which may lie just past this length).
        acc[e].add(ld.data() + (size_t)i * n_vocab, lp.data() + (size_t)i * n_vocab, n_vocab,
                   t + 1 < (int64_t)ids.size() ? ids[t + 1] : -1);
      }
    }
    pos += n;
    if (on_progress) on_progress(pos);
    if (pos == lengths[next_len]) {
      for (size_t e = 0; e < n_pol; ++e) {
        FidelityPoint p = acc[e].point();
        const KvStats st = policies[e]->kv().stats();
        const int64_t present = st.pages_present - before[e].pages_present;
        p.pages_read_share =
            present > 0 ? (double)(st.pages_read - before[e].pages_read) / (double)present : 0;
        out[e].push_back(p);
      }
      ++next_len;
    }
  }
  if (accumulators) *accumulators = std::move(acc);
  return out;
}

std::vector<double> bucket_perplexity(const std::vector<float>& nll, int64_t bucket) {
  std::vector<double> out;
  bucket = std::max<int64_t>(1, bucket);
  for (size_t i = 0; i < nll.size(); i += (size_t)bucket) {
    const size_t end = std::min(nll.size(), i + (size_t)bucket);
    double s = 0;
    for (size_t j = i; j < end; ++j) s += nll[j];
    out.push_back(std::exp(s / (double)(end - i)));
  }
  return out;
}

}  // namespace stride
