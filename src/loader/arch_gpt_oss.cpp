#include "loader/arch_gpt_oss.h"

#include <cstring>
#include <vector>

#include "loader/model_source.h"

namespace stride {

namespace {

constexpr float kSwigluLimit = 7.f;    // gpt-oss's clamp (config.json swiglu_limit)
constexpr float kSwigluAlpha = 1.702f;  // and its sigmoid slope (swiglu_alpha)

size_t element_bytes(DType t) { return t == DType::F32 ? 4 : (t == DType::F16 || t == DType::BF16) ? 2 : 0; }

// A new tensor of `shape` (ggml order) and t's element type, in src's buffers.
TensorView owned_like(ModelSource& src, const TensorView& t, const std::string& name,
                      std::array<int64_t, 4> shape, int n_dims) {
  TensorView v;
  v.name = name;
  v.type = t.type;
  v.n_dims = n_dims;
  v.ne = shape;
  v.nbytes = (int64_t)element_bytes(t.type) * shape[0] * shape[1] * shape[2] * shape[3];
  v.data = src.own_buffer((size_t)v.nbytes);
  return v;
}

uint8_t* bytes(TensorView& v) { return const_cast<uint8_t*>(v.data); }

Expected<TensorView> take(std::map<std::string, TensorView>& hf, const std::string& name) {
  auto it = hf.find(name);
  if (it == hf.end()) return NotFound("HF folder: gpt-oss tensor '" + name + "' is missing");
  TensorView t = it->second;
  hf.erase(it);
  if (element_bytes(t.type) == 0) {
    return Unsupported("HF folder: '" + name + "' has dtype " + std::string(dtype_name(t.type)) +
                       " (gpt-oss experts must be F32, F16 or BF16)");
  }
  return t;
}

// gate_up [E, n_embd, 2F] (ne {2F, n_embd, E}) -> gate and up [E, F, n_embd].
Status split_gate_up(ModelSource& src, std::map<std::string, TensorView>& hf, const std::string& hp,
                     const std::string& gp) {
  STRIDE_ASSIGN_OR_RETURN(TensorView gu, take(hf, hp + "gate_up_proj"));
  if (gu.n_dims != 3 || gu.ne[0] % 2 != 0) return Corrupt("HF folder: " + gu.name + " must be [E, n_embd, 2F]");
  const int64_t F2 = gu.ne[0], D = gu.ne[1], E = gu.ne[2], F = F2 / 2;
  const size_t b = element_bytes(gu.type);
  TensorView gate = owned_like(src, gu, gp + "ffn_gate_exps.weight", {D, F, E, 1}, 3);
  TensorView up = owned_like(src, gu, gp + "ffn_up_exps.weight", {D, F, E, 1}, 3);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t f = 0; f < F; ++f) {
        const uint8_t* s = gu.data + ((e * D + d) * F2 + 2 * f) * b;
        std::memcpy(bytes(gate) + ((e * F + f) * D + d) * b, s, b);
        std::memcpy(bytes(up) + ((e * F + f) * D + d) * b, s + b, b);
      }
  src.add_tensor(std::move(gate));
  src.add_tensor(std::move(up));

  STRIDE_ASSIGN_OR_RETURN(TensorView bias, take(hf, hp + "gate_up_proj_bias"));
  if (bias.n_dims != 2 || bias.ne[0] != F2 || bias.ne[1] != E)
    return Corrupt("HF folder: " + bias.name + " must be [E, 2F]");
  TensorView gb = owned_like(src, bias, gp + "ffn_gate_exps.bias", {F, E, 1, 1}, 2);
  TensorView ub = owned_like(src, bias, gp + "ffn_up_exps.bias", {F, E, 1, 1}, 2);
  for (int64_t i = 0; i < E * F; ++i) {
    std::memcpy(bytes(gb) + i * b, bias.data + (2 * i) * b, b);
    std::memcpy(bytes(ub) + i * b, bias.data + (2 * i + 1) * b, b);
  }
  src.add_tensor(std::move(gb));
  src.add_tensor(std::move(ub));
  return Status::Ok();
}

// down [E, F, n_embd] (x @ W) -> [E, n_embd, F] (W x); its bias [E, n_embd] as is.
Status transpose_down(ModelSource& src, std::map<std::string, TensorView>& hf, const std::string& hp,
                      const std::string& gp) {
  STRIDE_ASSIGN_OR_RETURN(TensorView dn, take(hf, hp + "down_proj"));
  if (dn.n_dims != 3) return Corrupt("HF folder: " + dn.name + " must be [E, F, n_embd]");
  const int64_t D = dn.ne[0], F = dn.ne[1], E = dn.ne[2];
  const size_t b = element_bytes(dn.type);
  TensorView down = owned_like(src, dn, gp + "ffn_down_exps.weight", {F, D, E, 1}, 3);
  for (int64_t e = 0; e < E; ++e)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t d = 0; d < D; ++d)
        std::memcpy(bytes(down) + ((e * D + d) * F + f) * b, dn.data + ((e * F + f) * D + d) * b, b);
  src.add_tensor(std::move(down));

  STRIDE_ASSIGN_OR_RETURN(TensorView bias, take(hf, hp + "down_proj_bias"));
  if (bias.n_dims != 2 || bias.ne[0] != D || bias.ne[1] != E)
    return Corrupt("HF folder: " + bias.name + " must be [E, n_embd]");
  bias.name = gp + "ffn_down_exps.bias";
  src.add_tensor(std::move(bias));
  return Status::Ok();
}

}  // namespace

Status configure_gpt_oss(ModelConfig& c, bool from_gguf) {
  c.rope_neox = true;
  c.attn_qkv_bias = true;
  c.attn_out_bias = true;
  c.attn_sinks = true;
  if (from_gguf) c.rope_scaling.truncate = false;
  c.rope_scaling_local = c.rope_scaling;
  c.rope_base_local = c.rope_base;
  MoeConfig& m = c.moe;
  if (!m.active()) return Corrupt("gpt-oss: the file has no experts (expert_count is 0)");
  m.gating = MoeGating::TopKThenSoftmax;
  m.router_bias = true;
  m.expert_bias = true;
  m.swiglu_limit = kSwigluLimit;
  m.swiglu_alpha = kSwigluAlpha;
  // Even layers are windowed, odd ones full (HF layer_types; llama.cpp's pattern 2).
  if (from_gguf && c.sliding_window > 0 && c.n_layer > 0 && c.n_layer < (1 << 20)) {
    c.layer_windowed.assign((size_t)c.n_layer, 0);
    for (int il = 0; il < c.n_layer; il += 2) c.layer_windowed[(size_t)il] = 1;
  }
  return Status::Ok();
}

Status adapt_gpt_oss_gguf_tensors(ModelSource& src) {
  for (int il = 0; il < src.config.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    // Renamed, not copied: a "post_attention_norm" left behind would be read
    // as Gemma's norm after attention.
    src.rename_tensor(p + "post_attention_norm.weight", p + "ffn_norm.weight");
  }
  return Status::Ok();
}

Status take_gpt_oss_hf_experts(ModelSource& src, std::map<std::string, TensorView>& hf) {
  for (const auto& [name, t] : hf) {
    if (name.find("_blocks") != std::string::npos || name.find("_scales") != std::string::npos) {
      return Unsupported("HF folder: '" + name + "': gpt-oss checkpoints with MXFP4 experts are not read "
                         "directly; convert the folder to GGUF (llama.cpp's convert_hf_to_gguf.py)");
    }
  }
  for (int il = 0; il < src.config.n_layer; ++il) {
    const std::string hp = "model.layers." + std::to_string(il) + ".mlp.experts.";
    const std::string gp = "blk." + std::to_string(il) + ".";
    STRIDE_RETURN_IF_ERROR(split_gate_up(src, hf, hp, gp));
    STRIDE_RETURN_IF_ERROR(transpose_down(src, hf, hp, gp));
  }
  return Status::Ok();
}

}  // namespace stride
