// RoPE scaling tables against transformers' ROPE_INIT_FUNCTIONS
// (tests/data/generated/rope_goldens.json, written by
// scripts/oracles/rope_goldens.py through scripts/setup), and the precision of
// scaled angles at position one million.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <vector>

#include "kernels/ops.h"
#include "loader/rope_scaling_read.h"
#include "model/rope_frequencies.h"

namespace stride {
namespace {

const std::string kGoldens = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/rope_goldens.json";

nlohmann::json load_goldens() {
  std::ifstream f(kGoldens);
  if (!f.good()) return nullptr;
  return nlohmann::json::parse(f);
}

// The table stride builds from a golden case's config.json fields.
Expected<RopeTable> table_for(const nlohmann::json& config, int64_t context) {
  RopeScaling s;
  STRIDE_RETURN_IF_ERROR(read_rope_scaling_json(config["rope_parameters"], config, "rope_parameters", s));
  const double base = config["rope_parameters"]["rope_theta"].get<double>();
  return rope_table(s, base, config["head_dim"].get<int>(), true,
                    config["max_position_embeddings"].get<int64_t>(), context);
}

TEST(RopeFrequencies, MatchTransformersForEveryScalingType) {
  const nlohmann::json g = load_goldens();
  ASSERT_FALSE(g.is_null()) << kGoldens << " missing: run scripts/setup";
  ASSERT_GE(g["cases"].size(), 10u);
  std::set<std::string> types;
  double worst_all = 0, worst_mag = 0;
  for (const auto& c : g["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const int64_t context = c["seq_len"].is_null() ? 0 : c["seq_len"].get<int64_t>();
    auto t = table_for(c["config"], context);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    const auto want = c["inv_freq"].get<std::vector<double>>();
    ASSERT_EQ(t->inv_freq.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, std::fabs(t->inv_freq[i] - want[i]) / want[i]);
    }
    // transformers forms these in f32: a few ulp of 6e-8 apart from double.
    EXPECT_LT(worst, 1e-6);
    EXPECT_NEAR(t->magnitude, c["attention_factor"].get<double>(), 1e-6 * c["attention_factor"].get<double>());
    types.insert(c["config"]["rope_parameters"]["rope_type"].get<std::string>());
    worst_all = std::max(worst_all, worst);
    worst_mag = std::max(worst_mag, std::fabs(t->magnitude - c["attention_factor"].get<double>()));
  }
  std::printf("%zu cases: max relative |inv_freq - transformers| %.3g, max |magnitude - attention_factor| %.3g\n",
              g["cases"].size(), worst_all, worst_mag);
  EXPECT_EQ(types, (std::set<std::string>{"default", "linear", "yarn", "llama3", "longrope"}));
}

// Scaled frequencies change nothing about precision: the angle of pair i at
// position 1e6 is formed in double, then cos/sin, in the fast and the scalar path.
TEST(RopeFrequencies, ScaledAnglesExactAtOneMillion) {
  RopeScaling yarn;
  yarn.type = RopeScalingType::Yarn;
  yarn.factor = 32.0;
  yarn.original_context = 32768;
  auto table = rope_table(yarn, 1e6, 128, false, 32768, 0);
  ASSERT_TRUE(table.ok());
  const int head_dim = 128;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> x(head_dim);
  for (float& v : x) v = d(rng);
  const int32_t pos = 1000000;
  auto fast = x, ref = x;
  rope(fast.data(), &pos, 1, 1, head_dim, *table);
  rope_ref(ref.data(), &pos, 1, 1, head_dim, *table);
  for (int i = 0; i < head_dim / 2; ++i) {
    const long double a = (long double)pos * (long double)table->inv_freq[i];
    const long double m = table->magnitude;
    const long double c = std::cos(a) * m, s = std::sin(a) * m;
    const long double want0 = x[2 * i] * c - x[2 * i + 1] * s;
    const long double want1 = x[2 * i] * s + x[2 * i + 1] * c;
    EXPECT_NEAR(fast[2 * i], (double)want0, 2e-6) << i;
    EXPECT_NEAR(fast[2 * i + 1], (double)want1, 2e-6) << i;
    EXPECT_NEAR(ref[2 * i], (double)want0, 3e-7) << i;
    EXPECT_NEAR(ref[2 * i + 1], (double)want1, 3e-7) << i;
  }
  // The same angles formed in f32 miss by far more than the tolerances above.
  double f32_error = 0;
  for (double f : table->inv_freq) {
    const float angle_f = (float)pos * (float)f;
    f32_error = std::max(f32_error, std::fabs(std::cos((double)angle_f) - std::cos((double)pos * f)));
  }
  EXPECT_GT(f32_error, 1e-2);
}

TEST(RopeFrequencies, LongRopeSwitchesOnTheContext) {
  RopeScaling s;
  s.type = RopeScalingType::LongRope;
  s.original_context = 64;
  s.factor = 4.0;
  s.short_factor = {1.0, 2.0};
  s.long_factor = {3.0, 5.0};
  auto at64 = rope_table(s, 100.0, 4, true, 256, 64);
  auto at65 = rope_table(s, 100.0, 4, true, 256, 65);
  ASSERT_TRUE(at64.ok() && at65.ok());
  EXPECT_DOUBLE_EQ(at64->inv_freq[1], 0.1 / 2.0);
  EXPECT_DOUBLE_EQ(at65->inv_freq[1], 0.1 / 5.0);
  s.long_factor = {3.0};  // wrong length: an error, not a read past the end
  EXPECT_FALSE(rope_table(s, 100.0, 4, true, 256, 65).ok());
  s.long_factor = {3.0, 5.0};
  s.original_context = 1;  // ln(1) = 0 would divide the attention factor by zero
  EXPECT_FALSE(rope_table(s, 100.0, 4, true, 256, 65).ok());
  RopeScaling yarn;
  yarn.type = RopeScalingType::Yarn;
  yarn.factor = 4.0;
  yarn.original_context = 64;
  EXPECT_FALSE(rope_table(yarn, 1.0, 4, true, 256, 0).ok());  // base 1: log(base) = 0
  EXPECT_TRUE(rope_table(yarn, 10.0, 4, true, 256, 0).ok());
}

TEST(RopeFrequencies, HostileConfigsAreErrors) {
  const nlohmann::json top = {{"max_position_embeddings", 4096}};
  RopeScaling s;
  for (const char* bad : {R"({"rope_type": "dynamic", "factor": 2})", R"({"rope_type": "linear"})",
                          R"({"rope_type": "linear", "factor": "x"})", R"({"rope_type": "yarn", "factor": -1})",
                          R"({"rope_type": "longrope", "short_factor": [1], "long_factor": {}})",
                          R"({"rope_type": "longrope", "short_factor": [1, -2], "long_factor": [1, 1]})",
                          R"({"rope_type": "yarn", "factor": 2, "truncate": 1})", R"([1, 2])"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(read_rope_scaling_json(nlohmann::json::parse(bad), top, "rope_scaling", s).ok());
  }
}

}  // namespace
}  // namespace stride
