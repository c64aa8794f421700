#include "attention/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention/rope_shift.h"

namespace stride {

void attention_reference(const PolicySpec& policy, const AttentionParams& p, int n_kv_heads,
                         int head_dim_k, int head_dim_v, const float* q, int n_q, int64_t q_pos0,
                         const float* k, const float* v, int64_t n_kv, float* out) {
  const int group = p.n_head / n_kv_heads;
  std::vector<double> scores(n_kv);
  std::vector<float> q_sink(head_dim_k);
  for (int i = 0; i < n_q; ++i) {
    const int64_t qpos = q_pos0 + i;
    for (int hq = 0; hq < p.n_head; ++hq) {
      const int hk = hq / group;
      const float* qv = q + ((int64_t)i * p.n_head + hq) * head_dim_k;
      // Sink keys see the query as if it sat at qpos - delta (StreamingLLM cache positions).
      for (int t = 0; t < head_dim_k; ++t) q_sink[t] = qv[t];
      if (const int64_t d = rswa_sink_shift(policy, qpos); d != 0) rope_rotate_by(q_sink.data(), head_dim_k, -d, *p.rope);

      double mx = -INFINITY;
      for (int64_t j = 0; j < n_kv; ++j) {
        if (!policy_attends(policy, qpos, j)) {
          scores[j] = -INFINITY;
          continue;
        }
        const float* qq = (policy.kind == PolicyKind::RSWA && j < policy.sinks) ? q_sink.data() : qv;
        const float* kv = k + (j * n_kv_heads + hk) * head_dim_k;
        double s = 0;
        for (int t = 0; t < head_dim_k; ++t) s += (double)qq[t] * kv[t];
        s *= attention_scale(p, head_dim_k);
        if (p.softcap > 0.f) s = p.softcap * std::tanh(s / p.softcap);
        scores[j] = s;
        if (s > mx) mx = s;
      }
      float* o = out + ((int64_t)i * p.n_head + hq) * head_dim_v;
      for (int t = 0; t < head_dim_v; ++t) o[t] = 0.f;
      if (mx == -INFINITY) continue;
      const double sink = attention_sink_logit(p, hq);
      mx = std::max(mx, sink);
      double denom = std::exp(sink - mx);  // the sink's share: no value
      std::vector<double> acc(head_dim_v, 0.0);
      for (int64_t j = 0; j < n_kv; ++j) {
        if (scores[j] == -INFINITY) continue;
        const double w = std::exp(scores[j] - mx);
        denom += w;
        const float* vv = v + (j * n_kv_heads + hk) * head_dim_v;
        for (int t = 0; t < head_dim_v; ++t) acc[t] += w * vv[t];
      }
      for (int t = 0; t < head_dim_v; ++t) o[t] = (float)(acc[t] / denom);
    }
  }
}

void attention_reference_masked(const AttentionParams& p, int n_kv_heads, int head_dim_k,
                                int head_dim_v, const float* q, int n_q, const float* k,
                                const float* v, int64_t n_kv, const KeyVisibility& visible,
                                float* out) {
  const int group = p.n_head / n_kv_heads;
  std::vector<double> scores(n_kv), acc(head_dim_v);
  for (int i = 0; i < n_q; ++i)
    for (int hq = 0; hq < p.n_head; ++hq) {
      const int hk = hq / group;
      const float* qv = q + ((int64_t)i * p.n_head + hq) * head_dim_k;
      double mx = -INFINITY;
      for (int64_t j = 0; j < n_kv; ++j) {
        scores[j] = -INFINITY;
        if (!visible(i, hq, j)) continue;
        const float* kv = k + (j * n_kv_heads + hk) * head_dim_k;
        double s = 0;
        for (int t = 0; t < head_dim_k; ++t) s += (double)qv[t] * kv[t];
        s *= attention_scale(p, head_dim_k);
        if (p.softcap > 0.f) s = p.softcap * std::tanh(s / p.softcap);
        scores[j] = s;
        mx = std::max(mx, s);
      }
      float* o = out + ((int64_t)i * p.n_head + hq) * head_dim_v;
      std::fill(acc.begin(), acc.end(), 0.0);
      const double sink = attention_sink_logit(p, hq);
      double denom = 0;
      if (mx != -INFINITY) {
        mx = std::max(mx, sink);
        denom = std::exp(sink - mx);  // the sink's share: no value
      }
      for (int64_t j = 0; j < n_kv && mx != -INFINITY; ++j) {
        if (scores[j] == -INFINITY) continue;
        const double w = std::exp(scores[j] - mx);
        denom += w;
        const float* vv = v + (j * n_kv_heads + hk) * head_dim_v;
        for (int t = 0; t < head_dim_v; ++t) acc[t] += w * vv[t];
      }
      for (int t = 0; t < head_dim_v; ++t) o[t] = denom > 0 ? (float)(acc[t] / denom) : 0.f;
    }
}

}  // namespace stride
