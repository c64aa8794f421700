// A batched step over several sequences gives each sequence exactly the
// logits it gets when run alone (continuous batching must not mix them).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/step_runner.h"
#include "engine/engine.h"
#include "tiny_engine.h"

namespace stride {
namespace {

TEST(Batch, MixedPrefillAndDecodeEqualSeparateRuns) {
  for (const char* name : {"llama", "gemma3"}) {
    auto engine = testing_util::tiny_engine(name, "rswa:sinks=2,window=6");
    ASSERT_TRUE(engine);
    const int V = engine->config().n_vocab;
    const std::vector<std::vector<int32_t>> seqs = {
        {5, 9, 13, 2, 7, 7, 30, 11, 4, 19, 3, 8}, {21, 4, 4, 17, 6, 2, 9}, {3, 1, 8, 15, 22, 10, 6, 5, 14}};

    // Alone: each sequence's last-token logits.
    std::vector<std::vector<float>> alone;
    for (const auto& s : seqs) {
      auto l = engine->score(s);
      ASSERT_TRUE(l.ok());
      alone.emplace_back(l->end() - V, l->end());
    }

    // Batched: prefill all but the last 2 tokens of each in one step, then
    // two batched single-token decode steps.
    KvManager& kv = engine->kv();
    std::vector<KvManager::SeqId> ids;
    for (size_t i = 0; i < seqs.size(); ++i) ids.push_back(*kv.add_sequence());
    std::vector<SequenceStep> steps(seqs.size());
    for (size_t i = 0; i < seqs.size(); ++i) {
      steps[i] = SequenceStep{ids[i], seqs[i].data(), (int)seqs[i].size() - 2, false, nullptr};
    }
    ASSERT_TRUE(run_step(engine->model(), kv, steps.data(), (int)steps.size(), engine->pool()).ok());
    std::vector<std::vector<float>> last(seqs.size(), std::vector<float>(V));
    for (int d = 2; d >= 1; --d) {
      for (size_t i = 0; i < seqs.size(); ++i) {
        steps[i] = SequenceStep{ids[i], &seqs[i][seqs[i].size() - d], 1, false, last[i].data()};
      }
      ASSERT_TRUE(run_step(engine->model(), kv, steps.data(), (int)steps.size(), engine->pool()).ok());
    }
    for (size_t i = 0; i < seqs.size(); ++i) {
      double max_diff = 0;
      for (int v = 0; v < V; ++v) max_diff = std::max(max_diff, (double)std::fabs(last[i][v] - alone[i][v]));
      EXPECT_LT(max_diff, 1e-4) << name << " sequence " << i;
      kv.remove_sequence(ids[i]);
    }
    EXPECT_EQ(kv.stats().pages_used, 0) << "pool returns to baseline";
  }
}

}  // namespace
}  // namespace stride
