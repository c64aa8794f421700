#include "model/reference_forward.h"

#include <cmath>

#include "kernels/matmul.h"
#include "kernels/matmul_reference.h"
#include "kernels/ops.h"
#include "model/moe_reference.h"

namespace stride {

namespace {

const float* f32(const TensorView& t) { return reinterpret_cast<const float*>(t.data); }

// Rotates one head vector [head_dim] to position `pos`.
void rope_one(std::vector<float>& v, int64_t pos, const AttentionParams& p, int head_dim) {
  int32_t p32 = (int32_t)pos;
  rope_ref(v.data(), &p32, 1, 1, head_dim, *p.rope);
}

}  // namespace

Expected<std::vector<float>> reference_forward(const Transformer& model,
                                               const std::vector<PolicySpec>& policies,
                                               const std::vector<int32_t>& tokens,
                                               bool int8_activations) {
  auto matmul_ref = [int8_activations](const TensorView& w, const float* x, float* y, int64_t n) {
    const bool quantized = w.type != DType::F32 && w.type != DType::F16 && w.type != DType::BF16;
    if (int8_activations && quantized) {
      matmul_ref_int8_acts(w, x, y, n);
    } else {
      stride::matmul_ref(w, x, y, n);
    }
  };
  const ModelConfig& c = model.config();
  const int n = (int)tokens.size();
  if ((int)policies.size() != c.n_layer) return InvalidArgument("one policy per layer is needed");
  STRIDE_ASSIGN_OR_RETURN(ModelWeights w, bind_weights(model.source()));
  const int64_t E = c.n_embd, hd = c.head_dim, hdv = c.head_dim_v;
  const int H = c.n_head, KVH = c.n_head_kv, group = H / KVH;

  std::vector<float> x(n * E), h(n * E), o(n * E);
  if (!embed_rows_ref(w.tok_embd, tokens.data(), n, c.embed_scale, x.data())) {
    return InvalidArgument("token id outside the embedding table");
  }
  std::vector<float> q(n * H * hd), k(n * KVH * hd), v(n * KVH * hdv), att(n * H * hdv);
  std::vector<float> gate(n * c.n_ff), up(n * c.n_ff);

  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    const AttentionParams ap = model.attention_params(il);
    const PolicySpec& pol = policies[il];
    rmsnorm_ref(x.data(), f32(L.attn_norm), h.data(), n, E, c.norm_eps);
    matmul_ref(L.wq, h.data(), q.data(), n);
    matmul_ref(L.wk, h.data(), k.data(), n);
    matmul_ref(L.wv, h.data(), v.data(), n);
    for (int t = 0; t < n; ++t) {
      for (int64_t i = 0; L.bq.valid() && i < H * hd; ++i) q[t * H * hd + i] += f32(L.bq)[i];
      for (int64_t i = 0; L.bk.valid() && i < KVH * hd; ++i) k[t * KVH * hd + i] += f32(L.bk)[i];
      for (int64_t i = 0; L.bv.valid() && i < KVH * hdv; ++i) v[t * KVH * hdv + i] += f32(L.bv)[i];
    }
    if (c.qk_norm) {
      rmsnorm_ref(q.data(), f32(L.q_norm), q.data(), (int64_t)n * H, hd, c.norm_eps);
      rmsnorm_ref(k.data(), f32(L.k_norm), k.data(), (int64_t)n * KVH, hd, c.norm_eps);
    }
    const bool relative = pol.kind == PolicyKind::RSWA && pol.positions == PositionMode::CacheRelative;
    // Attention, pair by pair. q and k are still un-rotated here.
    for (int t = 0; t < n; ++t) {
      std::vector<int> visible;
      for (int s = 0; s <= t; ++s) {
        if (policy_attends(pol, t, s)) visible.push_back(s);
      }
      const int64_t q_rel = relative ? (int64_t)visible.size() - 1 : t;
      for (int hh = 0; hh < H; ++hh) {
        const int kvh = hh / group;
        std::vector<float> qv(q.begin() + (t * H + hh) * hd, q.begin() + (t * H + hh + 1) * hd);
        rope_one(qv, q_rel, ap, (int)hd);
        std::vector<double> scores(visible.size());
        double mx = -INFINITY;
        for (size_t j = 0; j < visible.size(); ++j) {
          const int s = visible[j];
          std::vector<float> kv(k.begin() + (s * KVH + kvh) * hd, k.begin() + (s * KVH + kvh + 1) * hd);
          rope_one(kv, relative ? (int64_t)j : s, ap, (int)hd);
          double dot = 0;
          for (int64_t i = 0; i < hd; ++i) dot += (double)qv[i] * kv[i];
          double sc = dot * ap.scale;
          if (ap.softcap > 0) sc = ap.softcap * std::tanh(sc / ap.softcap);
          scores[j] = sc;
          mx = std::max(mx, sc);
        }
        // An attention sink (gpt-oss) joins the denominator with no value.
        const double sink = attention_sink_logit(ap, hh);
        mx = std::max(mx, sink);
        double denom = std::isinf(sink) ? 0.0 : std::exp(sink - mx);
        for (double& sc : scores) denom += (sc = std::exp(sc - mx));
        float* out = &att[(t * H + hh) * hdv];
        for (int64_t i = 0; i < hdv; ++i) {
          double acc = 0;
          for (size_t j = 0; j < visible.size(); ++j) acc += scores[j] * v[(visible[j] * KVH + kvh) * hdv + i];
          out[i] = (float)(acc / denom);
        }
      }
    }
    matmul_ref(L.wo, att.data(), o.data(), n);
    for (int t = 0; L.bo.valid() && t < n; ++t)
      for (int64_t i = 0; i < E; ++i) o[t * E + i] += f32(L.bo)[i];
    if (L.post_attn_norm.valid()) rmsnorm_ref(o.data(), f32(L.post_attn_norm), o.data(), n, E, c.norm_eps);
    for (int64_t i = 0; i < n * E; ++i) x[i] += o[i];

    rmsnorm_ref(x.data(), f32(L.ffn_norm), h.data(), n, E, c.norm_eps);
    if (L.moe.active()) {
      moe_ffn_reference(c, L.moe, h.data(), o.data(), n, matmul_ref);
    } else {
      matmul_ref(L.w_gate, h.data(), gate.data(), n);
      matmul_ref(L.w_up, h.data(), up.data(), n);
      if (c.act == Activation::GeluTanh) {
        gelu_tanh_mul_ref(gate.data(), up.data(), gate.data(), (int64_t)n * c.n_ff);
      } else {
        silu_mul_ref(gate.data(), up.data(), gate.data(), (int64_t)n * c.n_ff);
      }
      matmul_ref(L.w_down, gate.data(), o.data(), n);
    }
    if (L.post_ffn_norm.valid()) rmsnorm_ref(o.data(), f32(L.post_ffn_norm), o.data(), n, E, c.norm_eps);
    for (int64_t i = 0; i < n * E; ++i) x[i] += o[i];
  }
  rmsnorm_ref(x.data(), f32(w.output_norm), h.data(), n, E, c.norm_eps);
  std::vector<float> logits((size_t)n * c.n_vocab);
  matmul_ref(w.output, h.data(), logits.data(), n);
  if (c.final_logit_softcap > 0) {
    for (float& l : logits) l = c.final_logit_softcap * std::tanh(l / c.final_logit_softcap);
  }
  return logits;
}

}  // namespace stride
