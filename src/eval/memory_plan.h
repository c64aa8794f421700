#pragma once
// `stride plan`: what a model needs in memory at a context length and batch
// under a policy, from the model's config alone (nothing is run).
//   KV: per layer, the pages the policy can hold at once (dense/top-k: the
//       whole context; window/R-SWA: sinks + window + a page; strided:
//       globals + global ranges + every stride-th block + window), plus one
//       prefill chunk reserved ahead, times the sequences of the batch. A
//       page's bytes follow the KV storage (int8 counts its f32 scales).
//       Layers under estimate=rerank,rerank_keys=int8 add the int8 copy of
//       each held page's keys (kv/store/page_key_codes.h).
//   Activations: the transformer's chunk scratch (prefill chunk x residual,
//       Q/K/V, attention out, FFN gate/up) and one row of logits; attention
//       never materialises an L x L score matrix (online softmax over pages).
//   Weights: the mapped tensor bytes.
#include <cstdint>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "kv/store/kv_storage.h"
#include "loader/model_config.h"

namespace stride {

struct MemoryPlanInput {
  ModelConfig config;
  int64_t weight_bytes = 0;
  std::vector<PolicySpec> layer_policies;  // [n_layer]
  int64_t context = 0;                     // tokens per sequence
  int64_t batch = 1;                       // sequences
  int page_size = 32;
  int prefill_chunk = 256;
  KvStorage kv_storage = KvStorage::F16;
};

struct MemoryPlan {
  int64_t weight_bytes = 0;
  int64_t kv_bytes = 0;          // all sequences, all layers (+ top-k page summaries, + key_code_bytes)
  int64_t key_code_bytes = 0;    // of kv_bytes: rerank_keys=int8's copies of the keys
  int64_t activation_bytes = 0;  // peak scratch of one forward step
  int64_t total_bytes = 0;
  int64_t kv_pages_per_seq = 0;  // summed over layers
  // The seed planner's guess, 4 * (W * L + L * d_model): fp32 window scores
  // and one activation row per token, no KV cache and no weights.
  int64_t seed_formula_bytes = 0;
};

// Pages one layer of one sequence holds at most with `context` tokens.
int64_t policy_pages_held(const PolicySpec& p, int64_t context, int page_size, int prefill_chunk);

MemoryPlan plan_memory(const MemoryPlanInput& in);

// The largest context (tokens) whose plan fits `budget` at in.batch, capped at
// `cap` (policies whose KV stops growing fit any length: the cap is returned).
// 0 if not even 1 token fits.
int64_t largest_context(MemoryPlanInput in, int64_t budget, int64_t cap);
// The largest batch at in.context that fits `budget` (0 if none).
int64_t largest_batch(MemoryPlanInput in, int64_t budget);

}  // namespace stride
