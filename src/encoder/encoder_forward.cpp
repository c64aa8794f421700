#include "encoder/encoder_forward.h"

#include <cmath>
#include <cstring>

#include "encoder/encoder_ops.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/ops_parallel.h"

namespace stride {

namespace {

const float* f32(const TensorView& t) { return reinterpret_cast<const float*>(t.data); }

Status check_ids(const EncoderModel& m, const std::vector<int32_t>& ids) {
  if (ids.empty()) return InvalidArgument("an encoder input has no tokens");
  if ((int64_t)ids.size() > m.max_tokens()) {
    return InvalidArgument("an encoder input has " + std::to_string(ids.size()) + " tokens, more than the model's " +
                           std::to_string(m.max_tokens()));
  }
  for (int32_t t : ids) {
    if (t < 0 || t >= m.config().n_vocab) {
      return InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary (" +
                             std::to_string(m.config().n_vocab) + ")");
    }
  }
  return Status::Ok();
}

// y = x · Wᵀ + b over n rows (reference: double accumulation).
void linear_ref(const TensorView& w, const TensorView& b, const float* x, float* y, int64_t n) {
  const int64_t in = w.cols(), out = w.rows();
  const float* W = f32(w);
  const float* B = f32(b);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = B[o];
      for (int64_t i = 0; i < in; ++i) s += (double)W[o * in + i] * x[r * in + i];
      y[r * out + o] = (float)s;
    }
  }
}

}  // namespace

Expected<std::vector<float>> encoder_forward(const EncoderModel& model, const std::vector<std::vector<int32_t>>& seqs,
                                             ThreadPool& pool) {
  const BertConfig& c = model.config();
  const BertWeights& W = model.weights();
  int64_t n = 0;
  for (const auto& ids : seqs) {
    STRIDE_RETURN_IF_ERROR(check_ids(model, ids));
    n += (int64_t)ids.size();
  }
  if (n == 0) return InvalidArgument("no encoder inputs");
  const int64_t E = c.n_embd, F = c.n_ff;
  std::vector<float> x((size_t)(n * E));                 // [n, E] residual stream
  std::vector<float> q(x.size()), k(x.size()), v(x.size()), att(x.size()), o(x.size());  // [n, E]
  std::vector<float> up((size_t)(n * F));                // [n, F]

  // Embeddings: word + position + token type 0, then LayerNorm.
  for (int64_t s = 0, row = 0; s < (int64_t)seqs.size(); ++s) {
    for (size_t p = 0; p < seqs[(size_t)s].size(); ++p, ++row) {
      const float* we = f32(W.tok_embd) + (int64_t)seqs[(size_t)s][p] * E;
      const float* pe = f32(W.pos_embd) + (int64_t)p * E;
      const float* te = f32(W.type_embd);
      float* xr = x.data() + row * E;
      for (int64_t i = 0; i < E; ++i) xr[i] = we[i] + pe[i] + te[i];
    }
  }
  layernorm(x.data(), f32(W.embd_norm_w), f32(W.embd_norm_b), x.data(), n, E, c.norm_eps, pool);

  const float scale = 1.0f / std::sqrt((float)c.head_dim());
  for (const BertLayerWeights& L : W.layers) {
    matmul(L.wq, x.data(), q.data(), n, pool);  // [n, n_head, hd]
    matmul(L.wk, x.data(), k.data(), n, pool);
    matmul(L.wv, x.data(), v.data(), n, pool);
    add_rows(q.data(), f32(L.bq), n, E, pool);
    add_rows(k.data(), f32(L.bk), n, E, pool);
    add_rows(v.data(), f32(L.bv), n, E, pool);
    // Attention never crosses sequences.
    int64_t row = 0;
    for (const auto& ids : seqs) {
      const int len = (int)ids.size();
      bidirectional_attention(q.data() + row * E, k.data() + row * E, v.data() + row * E, att.data() + row * E, len,
                              c.n_head, c.head_dim(), E, scale, pool);
      row += len;
    }
    matmul(L.wo, att.data(), o.data(), n, pool);  // [n, E]
    add_rows(o.data(), f32(L.bo), n, E, pool);
    add_inplace(x.data(), o.data(), n * E, pool);
    layernorm(x.data(), f32(L.attn_norm_w), f32(L.attn_norm_b), x.data(), n, E, c.norm_eps, pool);

    matmul(L.w_up, x.data(), up.data(), n, pool);  // [n, F]
    add_rows(up.data(), f32(L.b_up), n, F, pool);
    gelu_erf(up.data(), n * F, pool);
    matmul(L.w_down, up.data(), o.data(), n, pool);  // [n, E]
    add_rows(o.data(), f32(L.b_down), n, E, pool);
    add_inplace(x.data(), o.data(), n * E, pool);
    layernorm(x.data(), f32(L.ffn_norm_w), f32(L.ffn_norm_b), x.data(), n, E, c.norm_eps, pool);
  }
  return x;
}

Expected<std::vector<float>> encoder_forward_ref(const EncoderModel& model, const std::vector<int32_t>& ids) {
  STRIDE_RETURN_IF_ERROR(check_ids(model, ids));
  const BertConfig& c = model.config();
  const BertWeights& W = model.weights();
  const int64_t n = (int64_t)ids.size(), E = c.n_embd, F = c.n_ff;
  std::vector<float> x((size_t)(n * E)), q(x.size()), k(x.size()), v(x.size()), att(x.size()), o(x.size());
  std::vector<float> up((size_t)(n * F));
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t i = 0; i < E; ++i) {
      x[(size_t)(p * E + i)] = f32(W.tok_embd)[(int64_t)ids[(size_t)p] * E + i] + f32(W.pos_embd)[p * E + i] +
                               f32(W.type_embd)[i];
    }
  }
  layernorm_ref(x.data(), f32(W.embd_norm_w), f32(W.embd_norm_b), x.data(), n, E, c.norm_eps);
  const float scale = 1.0f / std::sqrt((float)c.head_dim());
  for (const BertLayerWeights& L : W.layers) {
    linear_ref(L.wq, L.bq, x.data(), q.data(), n);
    linear_ref(L.wk, L.bk, x.data(), k.data(), n);
    linear_ref(L.wv, L.bv, x.data(), v.data(), n);
    bidirectional_attention_ref(q.data(), k.data(), v.data(), att.data(), (int)n, c.n_head, c.head_dim(), E, scale);
    linear_ref(L.wo, L.bo, att.data(), o.data(), n);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    layernorm_ref(x.data(), f32(L.attn_norm_w), f32(L.attn_norm_b), x.data(), n, E, c.norm_eps);
    linear_ref(L.w_up, L.b_up, x.data(), up.data(), n);
    gelu_erf_ref(up.data(), n * F);
    linear_ref(L.w_down, L.b_down, up.data(), o.data(), n);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    layernorm_ref(x.data(), f32(L.ffn_norm_w), f32(L.ffn_norm_b), x.data(), n, E, c.norm_eps);
  }
  return x;
}

Expected<std::vector<std::vector<float>>> encoder_embed(const EncoderModel& model,
                                                        const std::vector<std::vector<int32_t>>& seqs,
                                                        ThreadPool& pool) {
  STRIDE_ASSIGN_OR_RETURN(std::vector<float> hidden, encoder_forward(model, seqs, pool));
  const int64_t E = model.config().n_embd;
  std::vector<std::vector<float>> out;
  out.reserve(seqs.size());
  int64_t row = 0;
  for (const auto& ids : seqs) {
    PooledRows pooled(model.pooling(), E);
    pooled.add(hidden.data() + row * E, (int64_t)ids.size());
    out.push_back(pooled.result(model.normalize()));
    row += (int64_t)ids.size();
  }
  return out;
}

}  // namespace stride
