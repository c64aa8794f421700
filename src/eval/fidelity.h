#pragma once
// What a sparse policy costs in quality: the same tokens through a dense
// engine and a policy engine, compared position by position. Logits are
// consumed chunk by chunk and only running sums are kept, so 32K tokens do
// not need n_tokens x n_vocab floats.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"

namespace stride {

struct FidelityPoint {
  int64_t length = 0;        // tokens scored (the first `length` of the text)
  double mse = 0;            // mean over positions and vocabulary of (dense - policy)^2
  double kl = 0;             // mean over positions of KL(dense || policy), nats
  double top1 = 0;           // share of positions whose argmax agrees
  double ppl_dense = 0;      // exp(mean NLL of token t + 1 at positions t < length)
  double ppl_policy = 0;
  double pages_read_share = 0;  // policy engine: pages read / pages present (KvStats)
};

// Running sums over positions; add() takes one position's two logit rows.
class FidelityAccumulator {
 public:
  // next_token < 0: the last position (no target, no perplexity term).
  void add(const float* dense, const float* policy, int n_vocab, int32_t next_token);
  FidelityPoint point() const;
  int64_t positions() const { return n_; }
  // NLL of the target at every position that had one (for perplexity against position).
  const std::vector<float>& nll_dense() const { return nll_dense_pos_; }
  const std::vector<float>& nll_policy() const { return nll_policy_pos_; }

 private:
  int64_t n_ = 0, n_targets_ = 0, agree_ = 0;
  double sq_ = 0, kl_ = 0, nll_dense_ = 0, nll_policy_ = 0;
  int64_t elems_ = 0;
  std::vector<double> lp_dense_, lp_policy_;  // [n_vocab] scratch
  std::vector<float> nll_dense_pos_, nll_policy_pos_;  // [positions with a target]
};

// Perplexity per bucket of `bucket` consecutive positions (the last may be shorter).
std::vector<double> bucket_perplexity(const std::vector<float>& nll, int64_t bucket);

// Feeds ids[0, max(lengths)) through the dense engine and every policy
// engine in lockstep, chunk by chunk (one fresh sequence each; dense runs
// once), and reports for each policy the metrics over the first L tokens for
// each L in `lengths`: result[policy][length]. on_progress(tokens done) is optional.
Expected<std::vector<std::vector<FidelityPoint>>> compare_engines(
    Engine& dense, const std::vector<Engine*>& policies, const std::vector<int32_t>& ids,
    std::vector<int64_t> lengths, int chunk, const std::function<void(int64_t)>& on_progress = {},
    std::vector<FidelityAccumulator>* accumulators = nullptr);

}  // namespace stride
