#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops.h"

namespace stride {

namespace {

const float* f32(const TensorView& t) { return reinterpret_cast<const float*>(t.data); }

void add_bias(float* y, const TensorView& bias, int n_rows, int64_t dim) {
  if (!bias.valid()) return;
  for (int r = 0; r < n_rows; ++r) add_inplace(y + (int64_t)r * dim, f32(bias), dim);
}

}  // namespace

Expected<std::unique_ptr<Transformer>> Transformer::create(std::unique_ptr<ModelSource> source) {
  if (!source) return InvalidArgument("no model source");
  std::unique_ptr<Transformer> t(new Transformer());
  STRIDE_ASSIGN_OR_RETURN(t->w_, bind_weights(*source));
  t->source_ = std::move(source);
  return t;
}

AttentionParams Transformer::attention_params(int layer) const {
  const ModelConfig& c = config();
  AttentionParams p;
  p.n_head = c.n_head;
  p.scale = c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt((float)c.head_dim);
  p.softcap = c.attn_logit_softcap;
  p.rope_base = c.is_windowed(layer) ? c.rope_base_local : c.rope_base;
  p.rope_freq_scale = c.rope_freq_scale;
  p.rope_dim = c.rope_dim > 0 ? c.rope_dim : c.head_dim;
  p.rope_neox = c.rope_neox;
  return p;
}

void Transformer::ensure_scratch(int n) {
  if (n <= scratch_tokens_) return;
  const ModelConfig& c = config();
  const size_t N = (size_t)n;
  pos_.resize(N);
  x_.resize(N * c.n_embd);
  h_.resize(N * c.n_embd);
  q_.resize(N * c.n_head * c.head_dim);
  k_.resize(N * c.n_head_kv * c.head_dim);
  v_.resize(N * c.n_head_kv * c.head_dim_v);
  att_.resize(N * c.n_head * c.head_dim_v);
  o_.resize(N * c.n_embd);
  gate_.resize(N * c.n_ff);
  up_.resize(N * c.n_ff);
  scratch_tokens_ = n;
}

Status Transformer::forward(KVCache& kv, KVCache::SeqId seq, const int32_t* tokens, int n,
                            bool all_logits, float* logits, ThreadPool& pool) {
  if (n <= 0) return InvalidArgument("forward: no tokens");
  const int64_t n_vocab = config().n_vocab;
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab) {
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " is outside the vocabulary (" +
                             std::to_string(n_vocab) + ")");
    }
  }
  for (int done = 0; done < n;) {
    const int m = std::min(max_chunk_, n - done);
    const bool last = done + m == n;
    float* out = all_logits ? logits + (int64_t)done * n_vocab : logits;
    // Intermediate chunks of a last-token-only call need no logits at all.
    STRIDE_RETURN_IF_ERROR(
        forward_chunk(kv, seq, tokens + done, m, all_logits, (all_logits || last) ? out : nullptr, pool));
    done += m;
  }
  return Status::Ok();
}

Status Transformer::forward_chunk(KVCache& kv, KVCache::SeqId seq, const int32_t* tokens, int n,
                                  bool all_logits, float* logits, ThreadPool& pool) {
  const ModelConfig& c = config();
  STRIDE_RETURN_IF_ERROR(kv.reserve(seq, n));
  ensure_scratch(n);

  const int64_t E = c.n_embd;
  const int64_t qd = (int64_t)c.n_head * c.head_dim;
  const int64_t kd = (int64_t)c.n_head_kv * c.head_dim;
  const int64_t vd = (int64_t)c.n_head_kv * c.head_dim_v;
  const int64_t F = c.n_ff;
  const int64_t pos0 = kv.length(seq);
  for (int i = 0; i < n; ++i) pos_[i] = (int32_t)(pos0 + i);

  float* x = x_.data();  // [n, E]
  if (!embed_rows(w_.tok_embd, tokens, n, c.embed_scale, x)) {
    return InvalidArgument("token id outside the embedding table");
  }

  for (int il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w_.layers[il];
    const AttentionParams ap = attention_params(il);

    // Attention block.
    rmsnorm(x, f32(L.attn_norm), h_.data(), n, E, c.norm_eps);
    matmul(L.wq, h_.data(), q_.data(), n, pool);  // [n, n_head, hd]
    matmul(L.wk, h_.data(), k_.data(), n, pool);  // [n, n_kv, hd]
    matmul(L.wv, h_.data(), v_.data(), n, pool);  // [n, n_kv, hd_v]
    add_bias(q_.data(), L.bq, n, qd);
    add_bias(k_.data(), L.bk, n, kd);
    add_bias(v_.data(), L.bv, n, vd);
    if (c.qk_norm) {
      rmsnorm(q_.data(), f32(L.q_norm), q_.data(), (int64_t)n * c.n_head, c.head_dim, c.norm_eps);
      rmsnorm(k_.data(), f32(L.k_norm), k_.data(), (int64_t)n * c.n_head_kv, c.head_dim, c.norm_eps);
    }
    rope(q_.data(), pos_.data(), n, c.n_head, c.head_dim, ap.rope_dim, ap.rope_base,
         ap.rope_freq_scale, ap.rope_neox);
    rope(k_.data(), pos_.data(), n, c.n_head_kv, c.head_dim, ap.rope_dim, ap.rope_base,
         ap.rope_freq_scale, ap.rope_neox);
    kv.write(il, seq, k_.data(), v_.data(), n);
    kv.attend(il, seq, q_.data(), n, ap, att_.data(), pool);  // [n, n_head, hd_v]
    matmul(L.wo, att_.data(), o_.data(), n, pool);           // [n, E]
    if (L.post_attn_norm.valid()) rmsnorm(o_.data(), f32(L.post_attn_norm), o_.data(), n, E, c.norm_eps);
    add_inplace(x, o_.data(), (int64_t)n * E);

    // Feed-forward block.
    rmsnorm(x, f32(L.ffn_norm), h_.data(), n, E, c.norm_eps);
    matmul(L.w_gate, h_.data(), gate_.data(), n, pool);  // [n, F]
    matmul(L.w_up, h_.data(), up_.data(), n, pool);      // [n, F]
    if (c.act == Activation::GeluTanh) {
      gelu_tanh_mul(gate_.data(), up_.data(), gate_.data(), (int64_t)n * F);
    } else {
      silu_mul(gate_.data(), up_.data(), gate_.data(), (int64_t)n * F);
    }
    matmul(L.w_down, gate_.data(), o_.data(), n, pool);  // [n, E]
    if (L.post_ffn_norm.valid()) rmsnorm(o_.data(), f32(L.post_ffn_norm), o_.data(), n, E, c.norm_eps);
    add_inplace(x, o_.data(), (int64_t)n * E);
  }
  kv.commit(seq, n);

  if (!logits) return Status::Ok();
  // Only the rows whose logits are wanted go through the output head.
  const int first = all_logits ? 0 : n - 1;
  const int rows = n - first;
  rmsnorm(x + (int64_t)first * E, f32(w_.output_norm), h_.data(), rows, E, c.norm_eps);
  matmul(w_.output, h_.data(), logits, rows, pool);  // [rows, n_vocab]
  if (c.final_logit_softcap > 0) softcap(logits, (int64_t)rows * c.n_vocab, c.final_logit_softcap);
  return Status::Ok();
}

}  // namespace stride
