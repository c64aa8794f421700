#pragma once
// The decoder-only transformer shared by llama, mistral (Nemo, Ministral),
// qwen2, qwen3, gemma2, gemma3, phi3, their mixture-of-experts forms (mixtral,
// qwen2moe, qwen3moe) and gpt-oss. Architectures differ only in flags of
// ModelConfig (biases, QK-norm, sandwich norms, activation, embedding scale,
// attention and final logit soft-caps, attention sinks, per-layer RoPE base,
// partial rotary, head_dim apart from n_embd / n_head, experts); Phi-3's fused
// projections arrive as separate row-range views (loader/fused_tensors.h). The
// model runs a step the KV manager planned (kv/step_plan.h): it writes K/V,
// asks top-k layers to select, and runs the stateless attention kernel on each
// layer's page lists. It never reserves, commits or reads a page table.
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/attention_params.h"
#include "kernels/rope_table.h"
#include "kv/step_kv.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "loader/model_source.h"
#include "model/head_type.h"
#include "model/model_weights.h"
#include "model/moe_ffn.h"
#include "model/op_profile.h"
#include "model/sharded_attention.h"

namespace stride {

class Transformer {
 public:
  // Takes ownership of the source (the mmap must outlive the weight views).
  // Quantized projections are repacked for the fast kernels unless
  // repack_weights is false (EngineOptions::repack_weights). pool, when
  // given, repacks several matrices at once. head_type: the output head
  // is requantized to it at load when smaller than the file's (head_type.h).
  static Expected<std::unique_ptr<Transformer>> create(std::unique_ptr<ModelSource> source,
                                                       bool repack_weights = true, ThreadPool* pool = nullptr,
                                                       HeadType head_type = HeadType::File);

  const ModelConfig& config() const { return source_->config; }
  const ModelSource& source() const { return *source_; }
  // The type the output head runs in (the file's unless requantized at load).
  DType head_type() const { return w_.output.type; }
  int max_chunk() const { return max_chunk_; }
  void set_max_chunk(int n) { max_chunk_ = n > 0 ? n : 1; }

  // One step over several sequences at once (continuous batching): the
  // matmuls run over all their tokens together, attention runs per
  // sequence: plan.steps, the SequenceSteps prepare() planned; the sum of n
  // must not exceed max_chunk(). Fills each layer plan's attention time;
  // the caller commits the plan (engine/step_runner.h runs the whole step).
  // sharded (null: none): the step is one shard of a sequence spread over
  // several processes, whose attention it runs (sharded_attention.h).
  Status forward_batch(StepKv& kv, StepPlan& plan, ThreadPool& pool, ShardedAttention* sharded = nullptr);
  // One sequence's step run layer by layer, each layer over the step's
  // tokens in chunks of at most max_chunk(): every chunk's keys and values
  // are written, `sharded` is told (keys_written), then every chunk's
  // queries attend through it. Only the residual stream, [n, n_embd], is
  // kept for all n tokens; the rest of the scratch holds a chunk, so a
  // shard of any length runs in O(chunk) activations beside it. The queries
  // are computed twice per layer (once with the keys, once to attend)
  // rather than kept: [chunk] rows of scratch instead of [n].
  Status forward_layerwise(StepKv& kv, StepPlan& plan, ThreadPool& pool, ShardedAttention& sharded);

  // Per-layer attention parameters (scale, softcap, RoPE) for the KV cache.
  // The RoPE table they point to lives as long as the model.
  AttentionParams attention_params(int layer) const;

  // The tokens one sequence may hold: LongRoPE picks its long factors when
  // this exceeds the original context (the default, 0, keeps the short ones).
  // Call before any forward pass; other scalings ignore it.
  Status set_rope_context(int64_t context);
  const RopeTable& rope_table(int layer) const {
    return config().is_windowed(layer) ? rope_local_ : rope_global_;
  }

  // Times every op of the single-token steps that follow into `profile`
  // (null: none, the default); the caller keeps it alive meanwhile.
  void set_op_profile(OpProfile* profile) { op_profile_ = profile; }

 private:
  Transformer() = default;
  void ensure_scratch(int n);
  // q_, k_, v_ of n rows x ([n, n_embd] residual) at positions pos_, RoPE applied.
  void attention_inputs(int layer, const float* x, int n, ThreadPool& pool);
  // The rest of the layer on n rows: x += Wo(att_), then x += FFN(x).
  void layer_tail(int layer, float* x, int n, ThreadPool& pool);
  // Final norm, the hidden states and logits the steps ask for (x: [sum of n, n_embd]).
  Status output_head(const SequenceStep* steps, int n_steps, const float* x, ThreadPool& pool);
  // o_ = FFN(h_) for n tokens [n, n_embd]: the dense SwiGLU/GeGLU or the experts.
  void feed_forward(const LayerWeights& L, const PackedLayer& P, int n, ThreadPool& pool);
  // x[i] = the embedding of ids[i]: [n, n_embd].
  Status embed(const int32_t* ids, int n, float* x);
  // y = x · Wᵀ on the packed copy of W when there is one.
  static void linear(const TensorView& w, const PackedMatrix* packed, const float* x, float* y,
                     int n, ThreadPool& pool);
  // The profile of this step: op_profile_ on a single-token step, else null.
  OpProfile* prof_ = nullptr;
  OpProfile* op_profile_ = nullptr;

  std::unique_ptr<ModelSource> source_;
  ModelWeights w_;
  PackedWeights packed_;  // empty when repacking is off
  const PackedLayer no_packed_{};  // every layer's, when repacking is off
  // A tied embedding whose mapped pages were dropped once the output head
  // was repacked: its rows are read with pread (ModelSource::read_back), so
  // looking them up does not map the file back into RSS.
  bool embed_by_read_ = false;
  // The requantized output head when it runs unpacked ([n_vocab, row_bytes]);
  // empty when the file's head is used or once its packed copy is made.
  std::vector<uint8_t> head_bytes_;
  std::vector<uint8_t> embed_row_;  // [row_bytes] one row of the table
  int max_chunk_ = 256;
  RopeTable rope_global_;  // RoPE of the global layers
  RopeTable rope_local_;   // of the natively windowed layers

  // Scratch, sized for max_chunk tokens.
  int scratch_tokens_ = 0;
  std::vector<int32_t> pos_;   // [n]
  std::vector<float> x_;       // [n, n_embd] residual stream
  std::vector<float> h_;       // [n, n_embd] normed input
  std::vector<float> q_;       // [n, n_head, hd]
  std::vector<float> k_;       // [n, n_kv, hd]
  std::vector<float> v_;       // [n, n_kv, hd_v]
  std::vector<float> att_;     // [n, n_head, hd_v]
  std::vector<float> o_;       // [n, n_embd]
  std::vector<float> gate_;    // [n, n_ff]
  std::vector<float> up_;      // [n, n_ff]
  std::vector<int32_t> ids_;   // [n] tokens of all steps, concatenated
  MoeScratch moe_;             // expert routing and grouped rows (MoE models)
};

}  // namespace stride
