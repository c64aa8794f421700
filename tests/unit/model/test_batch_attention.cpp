// A batched step runs the sequences' attention side by side (one sequence per
// worker) or, for a sequence holding most of the work, over the whole pool.
// Either way every sequence must get exactly the logits (bit for bit) and the
// cache statistics it gets when its steps run alone, one sequence at a time.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/step_runner.h"
#include "engine/engine.h"
#include "model/batch_attention.h"

namespace stride {
namespace {

std::unique_ptr<Engine> real_engine(const std::string& file) {
  EngineOptions o;
  o.model_path = std::string(STRIDE_SOURCE_DIR) + "/models/" + file;
  o.threads = 2;
  o.max_context = 1024;
  o.kv_budget_bytes = (int64_t)128 << 20;  // every sequence at once
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

std::vector<int32_t> tokens(int n, uint32_t seed) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    t[i] = 3 + (int32_t)((seed >> 8) % 40000u);
  }
  return t;
}

// SmolLM2: dense GQA layers. Gemma-3: sliding-window layers among global ones.
class BatchAttentionModels : public ::testing::TestWithParam<const char*> {};

TEST_P(BatchAttentionModels, BatchedDecodeIsBitIdenticalToSoloRuns) {
  auto engine = real_engine(GetParam());
  ASSERT_TRUE(engine);
  KvManager& kv = engine->kv();
  Transformer& model = engine->model();
  ThreadPool& pool = engine->pool();
  ASSERT_GE(pool.size(), 2);
  for (int l = 0; l < kv.config().n_layer; ++l) ASSERT_FALSE(kv.select_is_serial(l)) << "kernels run side by side";
  const int V = engine->config().n_vocab;
  constexpr int kDecode = 3;
  // Two long contexts (their decode attention splits its pages over the
  // pool's size) among short ones; none holds most of the work, so all run
  // side by side. A joiner's 40-token prompt arrives in decode step 1 and
  // holds most of that step's work: it runs over the whole pool.
  const std::vector<int> lens = {600, 550, 12, 20, 33, 7, 64, 90, 5, 41};
  const int n_seq = (int)lens.size();
  std::vector<std::vector<int32_t>> seqs;
  for (int i = 0; i < n_seq; ++i) seqs.push_back(tokens(lens[i] + kDecode, 17 + i));
  const std::vector<int32_t> joiner = tokens(40 + kDecode - 1, 99);

  // Alone: [seq][decode step] -> logits.
  const KvStats before_solo = kv.stats();
  std::vector<std::vector<std::vector<float>>> alone(n_seq + 1);
  for (int i = 0; i <= n_seq; ++i) {
    const bool is_joiner = i == n_seq;
    const std::vector<int32_t>& s = is_joiner ? joiner : seqs[i];
    const int prompt = is_joiner ? 40 : lens[i];
    const KvManager::SeqId id = *kv.add_sequence();
    std::vector<float> logits(V);
    ASSERT_TRUE(run_sequence(model, kv, id, s.data(), prompt, false, logits.data(), pool).ok());
    if (is_joiner) alone[i].push_back(logits);
    for (int d = 0; prompt + d < (int)s.size(); ++d) {
      ASSERT_TRUE(run_sequence(model, kv, id, &s[prompt + d], 1, false, logits.data(), pool).ok());
      alone[i].push_back(logits);
    }
    kv.remove_sequence(id);
  }
  const KvStats after_solo = kv.stats();

  // Batched: the same prefills alone, then kDecode steps over all sequences.
  std::vector<KvManager::SeqId> ids(n_seq + 1);
  for (int i = 0; i < n_seq; ++i) {
    ids[i] = *kv.add_sequence();
    ASSERT_TRUE(run_sequence(model, kv, ids[i], seqs[i].data(), lens[i], false, nullptr, pool).ok());
  }
  std::vector<std::vector<std::vector<float>>> batched(n_seq + 1);
  std::vector<std::vector<float>> out(n_seq + 1, std::vector<float>(V));
  for (int d = 0; d < kDecode; ++d) {
    std::vector<SequenceStep> steps;
    std::vector<int> owner;
    for (int i = 0; i < n_seq; ++i) {
      steps.push_back(SequenceStep{ids[i], &seqs[i][lens[i] + d], 1, false, out[i].data()});
      owner.push_back(i);
    }
    if (d == 1) {
      ids[n_seq] = *kv.add_sequence();
      steps.push_back(SequenceStep{ids[n_seq], joiner.data(), 40, false, out[n_seq].data()});
      owner.push_back(n_seq);
    } else if (d == 2) {
      steps.push_back(SequenceStep{ids[n_seq], &joiner[40], 1, false, out[n_seq].data()});
      owner.push_back(n_seq);
    }
    ASSERT_TRUE(run_step(model, kv, steps.data(), (int)steps.size(), pool).ok());
    for (int i : owner) batched[i].push_back(out[i]);
  }
  // The solo runs also decoded the joiner's last token: do it here too.
  ASSERT_TRUE(run_sequence(model, kv, ids[n_seq], &joiner[41], 1, false, out[n_seq].data(), pool).ok());
  batched[n_seq].push_back(out[n_seq]);
  for (int i = 0; i <= n_seq; ++i) kv.remove_sequence(ids[i]);
  const KvStats after_batched = kv.stats();

  for (int i = 0; i <= n_seq; ++i) {
    ASSERT_EQ(batched[i].size(), alone[i].size()) << "sequence " << i;
    for (size_t d = 0; d < alone[i].size(); ++d) {
      EXPECT_EQ(0, std::memcmp(batched[i][d].data(), alone[i][d].data(), sizeof(float) * V))
          << "sequence " << i << " step " << d;
    }
  }
  // The same attend calls with the same plans: the same statistics.
  EXPECT_EQ(after_batched.pages_read - after_solo.pages_read,
            after_solo.pages_read - before_solo.pages_read);
  EXPECT_EQ(after_batched.pages_present - after_solo.pages_present,
            after_solo.pages_present - before_solo.pages_present);
  EXPECT_EQ(after_batched.window_pages_read - after_solo.window_pages_read,
            after_solo.window_pages_read - before_solo.window_pages_read);
  EXPECT_GT(after_solo.pages_read, before_solo.pages_read);
}

INSTANTIATE_TEST_SUITE_P(RealModels, BatchAttentionModels,
                         ::testing::Values("SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"));

}  // namespace
}  // namespace stride
