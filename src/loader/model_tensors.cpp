#include "loader/model_tensors.h"

#include <sstream>
#include <vector>

namespace stride {

namespace {

std::string shape_str(const TensorView& t) {
  std::ostringstream os;
  os << "[";
  for (int d = 0; d < t.n_dims; ++d) os << (d ? ", " : "") << t.ne[d];
  os << "]";
  return os.str();
}

std::string shape_str(const std::vector<int64_t>& ne) {
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < ne.size(); ++d) os << (d ? ", " : "") << ne[d];
  os << "]";
  return os.str();
}

// `ne` in ggml order; trailing dimensions of size 1 are ignored.
Status expect(const ModelSource& src, const std::string& name, std::vector<int64_t> ne) {
  const TensorView* t = src.tensor(name);
  if (!t) return NotFound(src.format + ": required tensor '" + name + "' is missing");
  bool match = true;
  for (int d = 0; d < 4; ++d) {
    const int64_t want = d < (int)ne.size() ? ne[d] : 1;
    if (t->ne[d] != want) match = false;
  }
  if (!match) {
    return Corrupt(src.format + ": tensor '" + name + "' has shape " + shape_str(*t) +
                   ", expected " + shape_str(ne));
  }
  return Status::Ok();
}

// Router, experts (one 3-D tensor per projection, or one 2-D tensor per expert
// as in early Mixtral files) and the optional shared expert.
Status check_moe_layer(const ModelSource& src, const ModelConfig& c, const std::string& p) {
  const MoeConfig& m = c.moe;
  const int64_t E = c.n_embd, F = m.n_ff_expert, N = m.n_expert;
  STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_gate_inp.weight", {E, N}));
  if (src.tensor(p + "ffn_gate_exps.weight")) {
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_gate_exps.weight", {E, F, N}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_up_exps.weight", {E, F, N}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_down_exps.weight", {F, E, N}));
  } else {
    for (int e = 0; e < N; ++e) {
      const std::string x = "." + std::to_string(e) + ".weight";
      STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_gate" + x, {E, F}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_up" + x, {E, F}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_down" + x, {F, E}));
    }
  }
  if (m.n_ff_shared > 0) {
    const int64_t S = m.n_ff_shared;
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_gate_shexp.weight", {E, S}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_up_shexp.weight", {E, S}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_down_shexp.weight", {S, E}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_gate_inp_shexp.weight", {E}));
  }
  return Status::Ok();
}

}  // namespace

Status check_model_tensors(const ModelSource& src) {
  const ModelConfig& c = src.config;
  for (const auto& [name, t] : src.tensors()) {
    const DTypeInfo* info = dtype_info(t.type);
    if (!info || !info->supported) {
      return Unsupported(src.format + ": tensor '" + name + "' has dtype " + dtype_name(t.type) +
                         ", which stride cannot compute with");
    }
  }
  const int64_t E = c.n_embd, V = c.n_vocab, F = c.n_ff;
  const int64_t q_dim = (int64_t)c.n_head * c.head_dim;
  const int64_t k_dim = (int64_t)c.n_head_kv * c.head_dim;
  const int64_t v_dim = (int64_t)c.n_head_kv * c.head_dim_v;
  const int64_t o_dim = (int64_t)c.n_head * c.head_dim_v;
  STRIDE_RETURN_IF_ERROR(expect(src, "token_embd.weight", {E, V}));
  STRIDE_RETURN_IF_ERROR(expect(src, "output_norm.weight", {E}));
  if (src.tensor("output.weight")) STRIDE_RETURN_IF_ERROR(expect(src, "output.weight", {E, V}));
  for (int il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_norm.weight", {E}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_q.weight", {E, q_dim}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_k.weight", {E, k_dim}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_v.weight", {E, v_dim}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_output.weight", {o_dim, E}));
    STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_norm.weight", {E}));
    if (c.moe.active()) {
      STRIDE_RETURN_IF_ERROR(check_moe_layer(src, c, p));
    } else {
      STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_gate.weight", {E, F}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_up.weight", {E, F}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "ffn_down.weight", {F, E}));
    }
    if (c.attn_qkv_bias) {
      STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_q.bias", {q_dim}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_k.bias", {k_dim}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_v.bias", {v_dim}));
    }
    if (c.qk_norm) {
      STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_q_norm.weight", {c.head_dim}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "attn_k_norm.weight", {c.head_dim}));
    }
    if (c.sandwich_norms) {
      STRIDE_RETURN_IF_ERROR(expect(src, p + "post_attention_norm.weight", {E}));
      STRIDE_RETURN_IF_ERROR(expect(src, p + "post_ffw_norm.weight", {E}));
    }
  }
  return Status::Ok();
}

}  // namespace stride
