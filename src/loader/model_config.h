#pragma once
// Architecture hyper-parameters, filled from GGUF metadata or an HF config.json.
#include <cstdint>
#include <string>
#include <vector>

#include "loader/moe_config.h"
#include "loader/rope_scaling.h"

namespace stride {

enum class Arch { Llama, Mistral, Qwen2, Qwen3, Gemma3, Gemma2, Phi3, Qwen2Moe, Qwen3Moe, GptOss };
enum class Activation { SiLU, GeluTanh };

const char* arch_name(Arch a);

struct ModelConfig {
  Arch arch = Arch::Llama;
  int n_vocab = 0;
  int n_embd = 0;
  int n_layer = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;    // key/query head size
  int head_dim_v = 0;  // value head size
  int n_ff = 0;
  int n_ctx_train = 0;
  float norm_eps = 1e-5f;

  float rope_base = 10000.f;        // global (full-attention) layers
  float rope_base_local = 10000.f;  // natively windowed layers (Gemma-3: 10k)
  RopeScaling rope_scaling;         // long-context scaling of the global layers
  RopeScaling rope_scaling_local;   // of natively windowed layers (Gemma-3: none)
  int rope_dim = 0;                 // rotated dims per head (== head_dim usually)
  // true: rotate (x[i], x[i+d/2]) as HF/NeoX; false: adjacent pairs (x[2i], x[2i+1])
  // as llama GGUF files, whose Q/K rows were permuted by the converter.
  bool rope_neox = false;

  int sliding_window = 0;                // 0: none
  std::vector<uint8_t> layer_windowed;   // [n_layer] 1 = natively windowed layer

  bool attn_qkv_bias = false;  // Qwen2
  bool attn_out_bias = false;  // gpt-oss: the output projection has a bias too
  bool attn_sinks = false;     // gpt-oss: a learned per-head logit joins each softmax
  bool qk_norm = false;        // Gemma-3, Qwen3: RMSNorm on q and k per head, before RoPE
  bool sandwich_norms = false; // Gemma-2/3: post-attention and post-FFN norms
  Activation act = Activation::SiLU;
  float embed_scale = 1.f;     // Gemma: sqrt(n_embd)
  float attn_scale = 0.f;      // softmax scale; 0 means 1/sqrt(head_dim)
  float attn_logit_softcap = 0.f;
  float final_logit_softcap = 0.f;
  bool tied_embeddings = false;  // output.weight absent: use token_embd
  MoeConfig moe;                 // experts instead of the dense FFN (Mixtral: arch llama)

  bool is_windowed(int layer) const {
    return layer >= 0 && layer < (int)layer_windowed.size() && layer_windowed[layer];
  }
};

}  // namespace stride
