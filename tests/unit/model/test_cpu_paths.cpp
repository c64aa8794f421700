// The same logits on every kernel path this CPU runs (STRIDE_CPU=avx2 or
// avx512): the two real models' quantized projections go through the packed
// tiles of each path, whose integer sums are exact, so the logits of a
// prompt scored in chunks and then decoded are equal bit for bit.
#include <gtest/gtest.h>

#include <cstring>

#include "core/cpu_features.h"
#include "engine/engine.h"

namespace stride {
namespace {

std::vector<float> score_on(CpuPath path, const std::string& model, const std::vector<int32_t>& ids) {
  EXPECT_TRUE(set_cpu_path(path).ok());
  EngineOptions o;
  o.model_path = model;
  o.threads = 2;
  o.max_context = 256;
  o.prefill_chunk = 24;  // chunks of 24 tokens (8-token tiles and their tails), then the tail
  o.show_progress = false;
  auto engine = Engine::create(o);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  auto logits = (*engine)->score(ids);
  EXPECT_TRUE(logits.ok());
  return logits.ok() ? *logits : std::vector<float>{};
}

TEST(CpuPaths, RealModelLogitsEqualOnEveryPath) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  std::vector<int32_t> ids;
  for (int i = 0; i < 61; ++i) ids.push_back(100 + (i * 37) % 5000);
  for (const char* f : {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"}) {
    SCOPED_TRACE(f);
    const std::string model = std::string(STRIDE_SOURCE_DIR) + "/models/" + f;
    const std::vector<float> base = score_on(paths[0], model, ids);
    ASSERT_FALSE(base.empty());
    for (size_t k = 1; k < paths.size(); ++k) {
      const std::vector<float> other = score_on(paths[k], model, ids);
      ASSERT_EQ(other.size(), base.size());
      EXPECT_EQ(std::memcmp(base.data(), other.data(), base.size() * sizeof(float)), 0)
          << cpu_path_name(paths[k]) << " differs from " << cpu_path_name(paths[0]);
    }
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

}  // namespace
}  // namespace stride
