#include "loader/arch_gemma2.h"

#include <cmath>

#include "loader/config_check.h"

namespace stride {

Status gemma2_from_gguf(const GGUFFile& f, ModelConfig& c) {
  const std::string a = "gemma2";
  c.rope_neox = true;
  c.sandwich_norms = true;
  c.act = Activation::GeluTanh;
  c.embed_scale = std::sqrt((float)c.n_embd);
  if (!f.has(a + ".attention.sliding_window")) c.sliding_window = 4096;  // llama.cpp's default
  double base_local = c.rope_base;
  STRIDE_RETURN_IF_ERROR(read_gguf_number(f, a + ".rope.freq_base_swa", c.rope_base, base_local));
  c.rope_base_local = (float)base_local;

  // The softmax scale is 1/sqrt(query_pre_attn_scalar). Converted files do
  // not carry it; llama.cpp follows gemma_pytorch: n_embd / n_head for the
  // 27B model (46 layers, 4608 / 32 = 144), head_dim for the others.
  double qpas = 0;
  STRIDE_RETURN_IF_ERROR(read_gguf_number(f, a + ".attention.query_pre_attn_scalar", 0.0, qpas));
  if (qpas < 0) return Corrupt("GGUF: " + a + ".attention.query_pre_attn_scalar must be > 0");
  if (qpas == 0) qpas = c.n_layer == 46 ? (double)(c.n_embd / c.n_head) : (double)c.head_dim;
  if (qpas > 0) c.attn_scale = (float)(1.0 / std::sqrt(qpas));

  // Even layers windowed: llama.cpp's default pattern of period 2.
  if (c.n_layer > 0 && c.n_layer < (1 << 20)) STRIDE_RETURN_IF_ERROR(gguf_window_pattern(f, a, 2, c));
  return Status::Ok();
}

}  // namespace stride
