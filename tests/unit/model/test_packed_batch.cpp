// Real quantized models run on repacked weights: a batched step over several
// sequences (the server's continuous batching) gives each sequence the logits
// it gets when the same steps run for it alone.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/step_runner.h"
#include "engine/engine.h"

namespace stride {
namespace {

std::unique_ptr<Engine> real_engine(const std::string& file) {
  EngineOptions o;
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/models/" + file;
  o.threads = 2;
  o.max_context = 256;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

TEST(PackedBatch, BatchedStepsEqualSeparateRuns) {
  // SmolLM2: Q4_1 layers, Q8_0 head. Gemma-3: Q5_0 Q/K with a Q8_0 V in one
  // dispatch, Q4_K and Q6_K elsewhere.
  for (const char* file : {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"}) {
    SCOPED_TRACE(file);
    auto engine = real_engine(file);
    ASSERT_TRUE(engine);
    const int V = engine->config().n_vocab;
    const std::vector<std::vector<int32_t>> seqs = {
        {1, 504, 3210, 28, 7, 913, 30, 1181, 4, 1900, 3, 8, 77, 12, 6000},
        {1, 2104, 4, 417, 6, 2, 9, 15},
        {1, 3, 18, 815, 22, 10, 6, 5, 14, 99, 3000}};
    KvManager& kv = engine->kv();
    Transformer& model = engine->model();
    // Alone: prefill all but 2 tokens, then two single-token steps.
    std::vector<std::vector<float>> alone(seqs.size(), std::vector<float>(V));
    for (size_t i = 0; i < seqs.size(); ++i) {
      const auto& s = seqs[i];
      const KvManager::SeqId id = *kv.add_sequence();
      const int n = (int)s.size();
      ASSERT_TRUE(run_sequence(model, kv, id, s.data(), n - 2, false, nullptr, engine->pool()).ok());
      ASSERT_TRUE(run_sequence(model, kv, id, &s[n - 2], 1, false, alone[i].data(), engine->pool()).ok());
      ASSERT_TRUE(run_sequence(model, kv, id, &s[n - 1], 1, false, alone[i].data(), engine->pool()).ok());
      kv.remove_sequence(id);
    }
    std::vector<KvManager::SeqId> ids;
    for (size_t i = 0; i < seqs.size(); ++i) ids.push_back(*kv.add_sequence());
    std::vector<SequenceStep> steps(seqs.size());
    for (size_t i = 0; i < seqs.size(); ++i)
      steps[i] = SequenceStep{ids[i], seqs[i].data(), (int)seqs[i].size() - 2, false, nullptr};
    ASSERT_TRUE(run_step(model, kv, steps.data(), (int)steps.size(), engine->pool()).ok());
    std::vector<std::vector<float>> last(seqs.size(), std::vector<float>(V));
    for (int d = 2; d >= 1; --d) {
      for (size_t i = 0; i < seqs.size(); ++i)
        steps[i] = SequenceStep{ids[i], &seqs[i][seqs[i].size() - d], 1, false, last[i].data()};
      ASSERT_TRUE(run_step(model, kv, steps.data(), (int)steps.size(), engine->pool()).ok());
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      double max_diff = 0, max_abs = 0;
      for (int v = 0; v < V; ++v) {
        max_diff = std::max(max_diff, (double)std::fabs(last[i][v] - alone[i][v]));
        max_abs = std::max(max_abs, (double)std::fabs(alone[i][v]));
      }
      // Per-token matmul results do not depend on the other rows of the batch.
      EXPECT_LE(max_diff, 1e-5 * max_abs) << "sequence " << i;
      int best_alone = 0, best_batch = 0;
      for (int v = 1; v < V; ++v) {
        if (alone[i][v] > alone[i][best_alone]) best_alone = v;
        if (last[i][v] > last[i][best_batch]) best_batch = v;
      }
      EXPECT_EQ(best_alone, best_batch) << "sequence " << i;
      kv.remove_sequence(ids[i]);
    }
  }
}

}  // namespace
}  // namespace stride
