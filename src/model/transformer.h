#pragma once
// The decoder-only transformer shared by llama, mistral, qwen2 and gemma3.
// Architectures differ only in flags of ModelConfig (biases, QK-norm,
// sandwich norms, activation, embedding scale, per-layer RoPE base); the
// attention itself is always KVCache::attend over a policy's page plan.
#include <cstdint>
#include <memory>
#include <vector>

#include "attention/kv_cache.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "loader/model_source.h"
#include "model/model_weights.h"

namespace stride {

// One sequence's share of a batched step: n tokens continuing `seq`.
struct SequenceStep {
  KVCache::SeqId seq = -1;
  const int32_t* tokens = nullptr;  // [n]
  int n = 0;
  bool all_logits = false;  // logits for every token, else only the last
  float* logits = nullptr;  // [n, n_vocab] or [n_vocab]; null: none wanted
};

class Transformer {
 public:
  // Takes ownership of the source (the mmap must outlive the weight views).
  // Quantized projections are repacked for the fast kernels unless
  // repack_weights is false (the environment variable STRIDE_NO_REPACK=1 also
  // turns it off, so that benchmarks can compare both layouts).
  static Expected<std::unique_ptr<Transformer>> create(std::unique_ptr<ModelSource> source,
                                                       bool repack_weights = true);

  const ModelConfig& config() const { return source_->config; }
  const ModelSource& source() const { return *source_; }
  int max_chunk() const { return max_chunk_; }
  void set_max_chunk(int n) { max_chunk_ = n > 0 ? n : 1; }

  // Runs `n` tokens of sequence `seq` at positions [kv.length(seq), +n),
  // in chunks of at most max_chunk tokens, and commits them to the cache.
  //   logits: [n, n_vocab] when all_logits, else [n_vocab] for the last token.
  // Returns ResourceExhausted (cache unchanged for the failed chunk) when the
  // KV pool cannot hold the tokens.
  Status forward(KVCache& kv, KVCache::SeqId seq, const int32_t* tokens, int n, bool all_logits,
                 float* logits, ThreadPool& pool);

  // One step over several sequences at once (continuous batching): the
  // matmuls run over all their tokens together, attention runs per sequence.
  // Sum of n must not exceed max_chunk(). On ResourceExhausted, *failed is
  // the index of the step whose pages could not be reserved; no step has
  // been run and reservations already made stay for the next attempt.
  Status forward_batch(KVCache& kv, const SequenceStep* steps, int n_steps, ThreadPool& pool,
                       int* failed = nullptr);

  // Per-layer attention parameters (scale, softcap, RoPE) for the KV cache.
  AttentionParams attention_params(int layer) const;

 private:
  Transformer() = default;
  void ensure_scratch(int n);
  // y = x · Wᵀ on the packed copy of W when there is one.
  static void linear(const TensorView& w, const PackedMatrix* packed, const float* x, float* y,
                     int n, ThreadPool& pool);

  std::unique_ptr<ModelSource> source_;
  ModelWeights w_;
  PackedWeights packed_;  // empty when repacking is off
  int max_chunk_ = 256;

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
};

}  // namespace stride
