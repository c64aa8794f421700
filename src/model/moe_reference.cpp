#include "model/moe_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/ops.h"
#include "model/moe_activation.h"

namespace stride {

namespace {

// out[n_embd] = down(act(gate(x)) * up(x)) for one token.
std::vector<float> expert_ref(const ModelConfig& c, const ExpertWeights& w, const float* x,
                              const ReferenceMatmul& matmul) {
  const int64_t ff = w.gate.rows();
  std::vector<float> gate((size_t)ff), up((size_t)ff), out((size_t)c.n_embd);
  matmul(w.gate, x, gate.data(), 1);
  matmul(w.up, x, up.data(), 1);
  add_bias_rows(gate.data(), w.gate_bias, 1, ff);
  add_bias_rows(up.data(), w.up_bias, 1, ff);
  if (c.moe.swiglu_limit > 0) {
    clamped_swiglu(c.moe, gate.data(), up.data(), ff);
  } else if (c.act == Activation::GeluTanh) {
    gelu_tanh_mul_ref(gate.data(), up.data(), gate.data(), ff);
  } else {
    silu_mul_ref(gate.data(), up.data(), gate.data(), ff);
  }
  matmul(w.down, gate.data(), out.data(), 1);
  add_bias_rows(out.data(), w.down_bias, 1, c.n_embd);
  return out;
}

}  // namespace

void moe_ffn_reference(const ModelConfig& c, const MoeWeights& w, const float* h, float* y, int n,
                       const ReferenceMatmul& matmul) {
  const MoeConfig& m = c.moe;
  const int64_t E = c.n_embd;
  std::vector<float> logits((size_t)m.n_expert);
  for (int t = 0; t < n; ++t) {
    const float* x = h + (int64_t)t * E;
    matmul(w.router, x, logits.data(), 1);
    add_bias_rows(logits.data(), w.router_bias, 1, m.n_expert);
    std::vector<int> order((size_t)m.n_expert);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
    order.resize((size_t)m.n_expert_used);
    // Softmax over every expert, or over the chosen ones only (renormalised,
    // or gpt-oss's top-k-then-softmax: the same numbers).
    const bool over_all = m.gating == MoeGating::SoftmaxThenTopK && !m.norm_topk_prob;
    const double top = logits[order[0]];
    double denom = 0;
    for (int e = 0; e < m.n_expert; ++e) {
      if (over_all || std::find(order.begin(), order.end(), e) != order.end()) denom += std::exp(logits[e] - top);
    }
    std::vector<double> acc((size_t)E, 0.0);
    for (int e : order) {
      const double weight = std::exp(logits[e] - top) / denom;
      const std::vector<float> out = expert_ref(c, w.experts[(size_t)e], x, matmul);
      for (int64_t i = 0; i < E; ++i) acc[i] += weight * out[i];
    }
    if (w.has_shared()) {
      const float* g = reinterpret_cast<const float*>(w.shared_gate.data);
      double dot = 0;
      for (int64_t i = 0; i < E; ++i) dot += (double)x[i] * g[i];
      const double scale = 1.0 / (1.0 + std::exp(-dot));
      const std::vector<float> out = expert_ref(c, w.shared, x, matmul);
      for (int64_t i = 0; i < E; ++i) acc[i] += scale * out[i];
    }
    for (int64_t i = 0; i < E; ++i) y[(int64_t)t * E + i] = (float)acc[i];
  }
}

}  // namespace stride
