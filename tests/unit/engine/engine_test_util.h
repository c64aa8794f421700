#pragma once
// Shared set-up of the tests that compare real-model runs bit for bit
// (prefix reuse, offload round trips, the top-k hot set).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/step_runner.h"
#include "attention/policy.h"
#include "engine/engine.h"

namespace stride::testing_util {

inline const std::string kSmolPath = std::string(STRIDE_SOURCE_DIR) + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
inline const std::string kGemmaPath = std::string(STRIDE_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";

// A tiny random-weight model of scripts/oracles/make_tiny_models.py.
inline std::string tiny(const std::string& name) {
  return std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/tiny/" + name + "/model-f32.gguf";
}

// One thread, so every run sums in the same order (with more, attention
// splits long page lists across threads and the order depends on the split);
// 1024 tokens of context; quiet.
inline EngineOptions exact_engine_options(const std::string& model, const std::string& policy, int page,
                                          int chunk) {
  EngineOptions o;
  o.model_path = model;
  o.attention = *parse_policy(policy);
  o.threads = 1;
  o.max_context = 1024;
  o.page_size = page;
  o.prefill_chunk = chunk;
  o.show_progress = false;
  return o;
}

inline std::unique_ptr<Engine> create_engine(const EngineOptions& o) {
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

// n pseudo-random ordinary token ids (no specials below 3), fixed by seed.
inline std::vector<int32_t> random_ids(const Engine& e, int n, uint32_t seed) {
  std::vector<int32_t> ids((size_t)n);
  uint32_t x = seed * 2654435761u + 12345u;
  const uint32_t span = (uint32_t)std::min(e.config().n_vocab, 8000) - 3;
  for (int32_t& id : ids) {
    x = x * 1664525u + 1013904223u;
    id = 3 + (int32_t)((x >> 8) % span);
  }
  return ids;
}

// The first n tokens of sentence(0) + sentence(1) + ... (ordinary text).
template <class Sentence>
std::vector<int32_t> text_ids(const Engine& e, int n, Sentence sentence) {
  std::string text;
  std::vector<int32_t> ids;
  for (int i = 0; (int)ids.size() < n; ++i) {
    text += sentence(i);
    ids = e.tokenizer()->encode(text, e.tokenizer()->add_bos_default());
  }
  ids.resize(n);
  return ids;
}

// Runs ids[from, to) on `seq`: every row's logits when `all`, else the last row's.
inline std::vector<float> run_tokens(Engine& e, KvManager::SeqId seq, const std::vector<int32_t>& ids, int from,
                                     int to, bool all) {
  const size_t V = (size_t)e.config().n_vocab;
  std::vector<float> logits((all ? (size_t)(to - from) : 1) * V);
  const Status st = run_sequence(e.model(), e.kv(), seq, ids.data() + from, to - from, all, logits.data(), e.pool());
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

}  // namespace stride::testing_util
