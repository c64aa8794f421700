// The same logits whatever the thread count: 1, 2, 3 and 64 threads
// (far more threads than cores, and more than some matrices have rows).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/engine.h"

namespace stride {
namespace {

std::vector<float> score_with_threads(const std::string& model, const std::vector<int32_t>& ids, int threads) {
  EngineOptions o;
  o.model_path = model;
  o.threads = threads;
  o.max_context = 256;
  o.prefill_chunk = 5;  // several chunks, then single-token steps below
  o.show_progress = false;
  auto engine = Engine::create(o);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  auto logits = (*engine)->score(ids);
  EXPECT_TRUE(logits.ok());
  return logits.ok() ? *logits : std::vector<float>{};
}

TEST(Threads, LogitsIndependentOfThreadCount) {
  const std::string dir = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/tiny/gemma3/";
  std::ifstream f(dir + "ids.json");
  ASSERT_TRUE(f.good()) << "run scripts/setup to generate the tiny models";
  nlohmann::json j;
  f >> j;
  const auto ids = j.get<std::vector<int32_t>>();
  const auto base = score_with_threads(dir + "model-f32.gguf", ids, 1);
  ASSERT_FALSE(base.empty());
  for (int threads : {2, 3, 64}) {
    const auto other = score_with_threads(dir + "model-f32.gguf", ids, threads);
    ASSERT_EQ(other.size(), base.size());
    double max_diff = 0;
    for (size_t i = 0; i < base.size(); ++i) max_diff = std::max(max_diff, (double)std::fabs(base[i] - other[i]));
    EXPECT_LT(max_diff, 1e-4) << threads << " threads";
  }
}

}  // namespace
}  // namespace stride
