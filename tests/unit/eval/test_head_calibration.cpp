// The calibration pass: the distant mass of a set of query rows against a
// plain double-precision softmax written here, and the pass on a tiny model:
// a window over the whole prompt leaves no distant mass, a one-page window
// leaves some on every head, and an engine without top-k is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "eval/head_calibration.h"

namespace stride {
namespace {

std::string tiny(const std::string& name) {
  return std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/tiny/" + name + "/model-f32.gguf";
}

TEST(HeadCalibration, DistantMassMatchesAPlainSoftmax) {
  const int dim = 8, ps = 4, n_rows = 3;
  const int64_t n_keys = 37;  // the last page holds one key
  std::mt19937 rng(11);
  std::normal_distribution<float> val(0.f, 1.f);
  std::vector<float> keys((size_t)n_keys * dim), q((size_t)n_rows * dim);
  for (float& x : keys) x = val(rng);
  for (float& x : q) x = val(rng);
  std::vector<const float*> rows;
  for (int r = 0; r < n_rows; ++r) rows.push_back(q.data() + (size_t)r * dim);
  const float scale = 0.3f;
  // Pages 0 (sink) and 8..9 (window) are near: keys [4, 32) are distant.
  double want = 0;
  for (int r = 0; r < n_rows; ++r) {
    std::vector<double> s((size_t)n_keys);
    double top = -1e300, sum = 0, far = 0;
    for (int64_t j = 0; j < n_keys; ++j) {
      double d = 0;
      for (int t = 0; t < dim; ++t) d += (double)rows[r][t] * keys[(size_t)j * dim + t];
      s[(size_t)j] = d * scale;
      top = std::max(top, s[(size_t)j]);
    }
    for (int64_t j = 0; j < n_keys; ++j) {
      const double e = std::exp(s[(size_t)j] - top);
      sum += e;
      if (j >= 4 && j < 32) far += e;
    }
    want += far / sum / n_rows;
  }
  EXPECT_NEAR(distant_mass_of_rows(rows.data(), n_rows, dim, scale, keys.data(), n_keys, ps, 1, 8), want, 1e-6);
}

std::unique_ptr<Engine> engine_for(const std::string& policy) {
  EngineOptions o;
  o.model_path = tiny("llama");
  o.attention = *parse_policy(policy);
  o.threads = 1;
  o.max_context = 512;
  o.page_size = 8;
  o.prefill_chunk = 64;
  o.show_progress = false;
  auto e = Engine::create(o);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(*e) : nullptr;
}

std::vector<TaskInstance> prompts() {
  std::vector<TaskInstance> out(2);
  for (size_t i = 0; i < out.size(); ++i)
    for (int t = 0; t < 200; ++t) out[i].ids.push_back(3 + (int32_t)((t * 37 + i * 11) % 200));
  return out;
}

TEST(HeadCalibration, WindowOverTheWholePromptLeavesNoDistantMass) {
  auto e = engine_for("topk:sparsity=0,prefill=dense,window=400");
  ASSERT_TRUE(e);
  const auto m = measure_distant_mass(*e, prompts(), 3);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->mass.size(), (size_t)m->n_layer * m->n_kv_heads);
  for (const double x : m->mass) EXPECT_EQ(x, 0.0);
}

TEST(HeadCalibration, OnePageWindowLeavesDistantMassOnEveryHead) {
  auto e = engine_for("topk:sparsity=0,prefill=dense");
  ASSERT_TRUE(e);
  const auto m = measure_distant_mass(*e, prompts(), 3);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->sink_tokens, 8);
  for (const double x : m->mass) {
    EXPECT_GT(x, 0.0);
    EXPECT_LT(x, 1.0);
  }
}

TEST(HeadCalibration, RefusesAnEngineThatNeverSelects) {
  auto e = engine_for("dense");
  ASSERT_TRUE(e);
  const auto m = measure_distant_mass(*e, prompts(), 2);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("top-k"), std::string::npos);
}

}  // namespace
}  // namespace stride
