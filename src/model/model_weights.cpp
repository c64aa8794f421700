#include "model/model_weights.h"

#include <string>

namespace stride {

namespace {

class Binder {
 public:
  explicit Binder(const ModelSource& src) : src_(src) {}

  // Requires a tensor with exactly the given row length and row count.
  Status get(const std::string& name, int64_t cols, int64_t rows, TensorView& out,
             bool required = true) {
    const TensorView* t = src_.tensor(name);
    if (!t) {
      if (!required) return Status::Ok();
      return NotFound("model is missing tensor '" + name + "'");
    }
    if (t->cols() != cols || t->rows() != rows) {
      return Corrupt("tensor '" + name + "' has shape [" + std::to_string(t->rows()) + ", " +
                     std::to_string(t->cols()) + "], expected [" + std::to_string(rows) + ", " +
                     std::to_string(cols) + "]");
    }
    if (t->row_bytes() < 0) return Corrupt("tensor '" + name + "' rows do not fill whole blocks");
    out = *t;
    return Status::Ok();
  }

  // Norms and biases are used as f32 vectors.
  Status get_vector(const std::string& name, int64_t n, TensorView& out, bool required = true) {
    STRIDE_RETURN_IF_ERROR(get(name, n, 1, out, required));
    if (out.valid() && out.type != DType::F32) {
      return Unsupported("tensor '" + name + "' must be F32, found " + dtype_name(out.type));
    }
    return Status::Ok();
  }

 private:
  const ModelSource& src_;
};

}  // namespace

Expected<PackedWeights> pack_weights(const ModelWeights& w, const ModelSource* src, ThreadPool* pool) {
  PackedWeights p;
  p.layers.resize(w.layers.size());
  std::vector<PackJob> jobs;
  for (size_t il = 0; il < w.layers.size(); ++il) {
    const LayerWeights& L = w.layers[il];
    PackedLayer& P = p.layers[il];
    for (auto [view, packed] : {std::pair{&L.wq, &P.wq}, {&L.wk, &P.wk}, {&L.wv, &P.wv}, {&L.wo, &P.wo},
                                {&L.w_gate, &P.w_gate}, {&L.w_up, &P.w_up}, {&L.w_down, &P.w_down}})
      jobs.push_back({view, packed});
    add_moe_pack_jobs(L.moe, P.moe, jobs);
  }
  jobs.push_back({&w.output, &p.output});
  STRIDE_RETURN_IF_ERROR(run_pack_jobs(std::move(jobs), src, pool));
  return p;
}

Expected<ModelWeights> bind_weights(const ModelSource& src) {
  const ModelConfig& c = src.config;
  Binder b(src);
  ModelWeights w;
  const int64_t q_dim = (int64_t)c.n_head * c.head_dim;
  const int64_t k_dim = (int64_t)c.n_head_kv * c.head_dim;
  const int64_t v_dim = (int64_t)c.n_head_kv * c.head_dim_v;
  const int64_t o_dim = (int64_t)c.n_head * c.head_dim_v;

  STRIDE_RETURN_IF_ERROR(b.get("token_embd.weight", c.n_embd, c.n_vocab, w.tok_embd));
  STRIDE_RETURN_IF_ERROR(b.get_vector("output_norm.weight", c.n_embd, w.output_norm));
  STRIDE_RETURN_IF_ERROR(b.get("output.weight", c.n_embd, c.n_vocab, w.output, false));
  if (!w.output.valid()) w.output = w.tok_embd;

  w.layers.resize(c.n_layer);
  for (int il = 0; il < c.n_layer; ++il) {
    LayerWeights& L = w.layers[il];
    const std::string p = "blk." + std::to_string(il) + ".";
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_norm.weight", c.n_embd, L.attn_norm));
    STRIDE_RETURN_IF_ERROR(b.get(p + "attn_q.weight", c.n_embd, q_dim, L.wq));
    STRIDE_RETURN_IF_ERROR(b.get(p + "attn_k.weight", c.n_embd, k_dim, L.wk));
    STRIDE_RETURN_IF_ERROR(b.get(p + "attn_v.weight", c.n_embd, v_dim, L.wv));
    STRIDE_RETURN_IF_ERROR(b.get(p + "attn_output.weight", o_dim, c.n_embd, L.wo));
    const bool bias = c.attn_qkv_bias;
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_q.bias", q_dim, L.bq, bias));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_k.bias", k_dim, L.bk, bias));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_v.bias", v_dim, L.bv, bias));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_output.bias", c.n_embd, L.bo, c.attn_out_bias));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_sinks.weight", c.n_head, L.sinks, c.attn_sinks));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_q_norm.weight", c.head_dim, L.q_norm, c.qk_norm));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "attn_k_norm.weight", c.head_dim, L.k_norm, c.qk_norm));
    STRIDE_RETURN_IF_ERROR(
        b.get_vector(p + "post_attention_norm.weight", c.n_embd, L.post_attn_norm, c.sandwich_norms));
    STRIDE_RETURN_IF_ERROR(b.get_vector(p + "ffn_norm.weight", c.n_embd, L.ffn_norm));
    if (c.moe.active()) {
      STRIDE_ASSIGN_OR_RETURN(L.moe, bind_moe_weights(src, il));
    } else {
      STRIDE_RETURN_IF_ERROR(b.get(p + "ffn_gate.weight", c.n_embd, c.n_ff, L.w_gate));
      STRIDE_RETURN_IF_ERROR(b.get(p + "ffn_up.weight", c.n_embd, c.n_ff, L.w_up));
      STRIDE_RETURN_IF_ERROR(b.get(p + "ffn_down.weight", c.n_ff, c.n_embd, L.w_down));
    }
    STRIDE_RETURN_IF_ERROR(
        b.get_vector(p + "post_ffw_norm.weight", c.n_embd, L.post_ffn_norm, c.sandwich_norms));
  }
  return w;
}

}  // namespace stride
