#pragma once
// Binds a ModelSource's tensors to the fields each transformer block uses,
// checking presence and shapes once at load time.
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "kernels/packed_matrix.h"
#include "loader/model_source.h"
#include "model/moe_weights.h"
#include "model/pack_jobs.h"

namespace stride {

struct LayerWeights {
  TensorView attn_norm;                  // [n_embd]
  TensorView wq, wk, wv, wo;             // [n_head*hd, n_embd] ... [n_embd, n_head*hd_v]
  TensorView bq, bk, bv;                 // optional biases (Qwen2, gpt-oss)
  TensorView bo;                         // optional output-projection bias [n_embd] (gpt-oss)
  TensorView sinks;                      // optional attention sink logits [n_head] (gpt-oss)
  TensorView q_norm, k_norm;             // optional per-head norms [hd] (Gemma-3)
  TensorView post_attn_norm;             // optional (Gemma-3)
  TensorView ffn_norm;                   // [n_embd]
  TensorView w_gate, w_up, w_down;       // [n_ff, n_embd], [n_ff, n_embd], [n_embd, n_ff]
  MoeWeights moe;                        // experts instead of w_gate/w_up/w_down (config.moe)
  TensorView post_ffn_norm;              // optional (Gemma-3)
};

struct ModelWeights {
  TensorView tok_embd;     // [n_vocab, n_embd]
  TensorView output_norm;  // [n_embd]
  TensorView output;       // [n_vocab, n_embd] (tok_embd when tied)
  std::vector<LayerWeights> layers;
};

Expected<ModelWeights> bind_weights(const ModelSource& src);

// The projection matrices repacked for the fast kernels (kernels/packed_matrix.h);
// null where a weight's type has no packed layout (it then runs on its GGUF
// bytes). Built once at load; the GGUF views stay valid for everything else
// (embedding lookups, the scalar reference).
struct PackedLayer {
  std::unique_ptr<PackedMatrix> wq, wk, wv, wo, w_gate, w_up, w_down;
  PackedMoe moe;
};

struct PackedWeights {
  std::vector<PackedLayer> layers;
  std::unique_ptr<PackedMatrix> output;
};

// Repacks every packable projection of `w` (including the output head).
// src: where the weights are mapped from; their pages are dropped once packed.
// pool: packs several projections at once (null: one at a time).
Expected<PackedWeights> pack_weights(const ModelWeights& w, const ModelSource* src = nullptr,
                                     ThreadPool* pool = nullptr);

}  // namespace stride
