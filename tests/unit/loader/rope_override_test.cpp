// apply_rope_override: what it takes from the file, what it replaces, and
// which layers follow (the numbers themselves: tests/python/test_rope_override.py).
#include <gtest/gtest.h>

#include "loader/rope_override.h"
#include "loader/rope_override_keys.h"

namespace stride {
namespace {

ModelConfig qwen_like() {
  ModelConfig c;
  c.arch = Arch::Qwen2;
  c.n_ctx_train = 32768;
  c.rope_base = c.rope_base_local = 1e6f;
  return c;
}

RopeOverride parse(std::initializer_list<std::pair<const char*, const char*>> kv) {
  RopeOverride o;
  for (const auto& [k, v] : kv) EXPECT_TRUE(set_rope_override_value(o, k, v).ok()) << k << "=" << v;
  return o;
}

TEST(RopeOverride, EmptyLeavesTheFileAlone) {
  ModelConfig c = qwen_like();
  c.rope_scaling.type = RopeScalingType::Linear;
  c.rope_scaling.factor = 2;
  ASSERT_TRUE(apply_rope_override({}, c).ok());
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_EQ(c.rope_scaling.factor, 2);
}

TEST(RopeOverride, YarnOnAnUnscaledFileAppliesToEveryLayer) {
  ModelConfig c = qwen_like();
  ASSERT_TRUE(apply_rope_override(
                  parse({{"rope_scaling", "yarn"}, {"rope_scale", "4"}, {"yarn_orig_ctx", "32768"}}), c)
                  .ok());
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Yarn);
  EXPECT_EQ(c.rope_scaling.factor, 4);
  EXPECT_EQ(c.rope_scaling.original_context, 32768);
  EXPECT_EQ(c.rope_scaling.beta_fast, 32);
  EXPECT_EQ(c.rope_scaling_local.type, RopeScalingType::Yarn);
  EXPECT_EQ(rope_usable_context(c.rope_scaling, c.n_ctx_train), 131072);
}

TEST(RopeOverride, ChangesOneValueOfTheFilesYarn) {
  ModelConfig c = qwen_like();
  c.rope_scaling.type = RopeScalingType::Yarn;
  c.rope_scaling.factor = 4;
  c.rope_scaling.original_context = 32768;
  c.rope_scaling.extra_attn_factor = 0.5;
  ASSERT_TRUE(apply_rope_override(parse({{"rope_scale", "8"}, {"yarn_beta_fast", "16"}}), c).ok());
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Yarn);
  EXPECT_EQ(c.rope_scaling.factor, 8);
  EXPECT_EQ(c.rope_scaling.original_context, 32768);  // the file's
  EXPECT_EQ(c.rope_scaling.beta_fast, 16);
  EXPECT_EQ(c.rope_scaling.extra_attn_factor, 0.5);
}

TEST(RopeOverride, FactorAloneIsLinearAndFreqScaleIsItsInverse) {
  ModelConfig c = qwen_like();
  ASSERT_TRUE(apply_rope_override(parse({{"rope_freq_scale", "0.25"}}), c).ok());
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 4);
}

TEST(RopeOverride, NoneRemovesTheFilesScaling) {
  ModelConfig c = qwen_like();
  c.rope_scaling.type = RopeScalingType::Yarn;
  c.rope_scaling.factor = 4;
  c.rope_scaling_local = c.rope_scaling;
  ASSERT_TRUE(apply_rope_override(parse({{"rope_scaling", "none"}}), c).ok());
  EXPECT_FALSE(c.rope_scaling.scaled());
  EXPECT_FALSE(c.rope_scaling_local.scaled());
}

TEST(RopeOverride, Gemma3KeepsItsSlidingLayersUnscaled) {
  ModelConfig c = qwen_like();
  c.arch = Arch::Gemma3;
  c.rope_base_local = 10000.f;
  ASSERT_TRUE(apply_rope_override(
                  parse({{"rope_scaling", "linear"}, {"rope_scale", "8"}, {"rope_freq_base", "2e6"}}), c)
                  .ok());
  EXPECT_EQ(c.rope_scaling.type, RopeScalingType::Linear);
  EXPECT_FALSE(c.rope_scaling_local.scaled());
  EXPECT_EQ(c.rope_base, 2e6f);
  EXPECT_EQ(c.rope_base_local, 10000.f);
}

TEST(RopeOverride, Llama3TensorIsRecomputedOnlyWithBothValues) {
  ModelConfig c = qwen_like();
  c.rope_scaling.type = RopeScalingType::Llama3;
  c.rope_scaling.freq_factors.assign(32, 1.0);
  EXPECT_FALSE(apply_rope_override(parse({{"rope_scale", "8"}}), c).ok());
  ASSERT_TRUE(apply_rope_override(parse({{"rope_scale", "8"}, {"yarn_orig_ctx", "8192"}}), c).ok());
  EXPECT_TRUE(c.rope_scaling.freq_factors.empty());
  EXPECT_EQ(c.rope_scaling.factor, 8);
  EXPECT_EQ(c.rope_scaling.original_context, 8192);
}

TEST(RopeOverride, InvalidCombinationsAreErrors) {
  RopeOverride o;
  EXPECT_FALSE(set_rope_override_value(o, "rope_scaling", "ntk").ok());
  EXPECT_FALSE(set_rope_override_value(o, "rope_scale", "4x").ok());
  EXPECT_FALSE(set_rope_override_value(o, "yarn_orig_ctx", "1.5").ok());
  for (auto kv : {std::initializer_list<std::pair<const char*, const char*>>{{"rope_scale", "-1"}},
                  {{"rope_scaling", "yarn"}, {"rope_scale", "4"}},          // no original context
                  {{"rope_scaling", "yarn"}, {"yarn_orig_ctx", "4096"}},    // no factor
                  {{"rope_scaling", "none"}, {"rope_scale", "2"}},
                  {{"rope_scaling", "longrope"}},
                  {{"yarn_orig_ctx", "4096"}},
                  {{"rope_scale", "2"}, {"rope_freq_scale", "0.5"}},
                  {{"rope_scaling", "linear"}, {"rope_scale", "2"}, {"yarn_beta_slow", "2"}},
                  {{"rope_freq_base", "0"}}}) {
    ModelConfig c = qwen_like();
    EXPECT_FALSE(apply_rope_override(parse(kv), c).ok()) << kv.begin()->first;
  }
}

}  // namespace
}  // namespace stride
