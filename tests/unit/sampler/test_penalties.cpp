// Penalties change exactly the recent tokens' logits, by exactly the
// llama.cpp / OpenAI amounts.
#include <vector>

#include <gtest/gtest.h>

#include "sampler/penalties.h"
#include "sampler/sampler.h"

namespace stride {
namespace {

SamplingParams penalty_params(float repeat, float freq, float presence, int last_n) {
  SamplingParams p;
  p.repeat_penalty = repeat;
  p.frequency_penalty = freq;
  p.presence_penalty = presence;
  p.repeat_last_n = last_n;
  return p;
}

const std::vector<float> kLogits = {2.0f, -1.0f, 0.5f, 3.0f, 1.0f};

TEST(Penalties, RepeatFrequencyPresenceValues) {
  // Window of 3 = [0, 1, 0]: token 0 twice, token 1 once; token 3 is outside it.
  const std::vector<int32_t> history = {3, 0, 1, 0};
  auto l = kLogits;
  apply_penalties(penalty_params(1.5f, 0.25f, 0.5f, 3), l.data(), 5, history);
  EXPECT_FLOAT_EQ(l[0], 2.0f / 1.5f - 2 * 0.25f - 0.5f);   // positive: divided
  EXPECT_FLOAT_EQ(l[1], -1.0f * 1.5f - 1 * 0.25f - 0.5f);  // negative: multiplied
  EXPECT_EQ(l[2], 0.5f);
  EXPECT_EQ(l[3], 3.0f);
  EXPECT_EQ(l[4], 1.0f);
}

TEST(Penalties, RepeatPenaltyOnlyOncePerDistinctToken) {
  const std::vector<int32_t> history = {4, 4, 4};
  auto l = kLogits;
  apply_penalties(penalty_params(2.0f, 0.0f, 0.0f, 64), l.data(), 5, history);
  EXPECT_FLOAT_EQ(l[4], 0.5f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(l[i], kLogits[i]);
}

TEST(Penalties, WholeHistoryAndDisabledWindow) {
  const std::vector<int32_t> history = {3, 0, 1, 0};
  auto all = kLogits;
  apply_penalties(penalty_params(1.0f, 1.0f, 0.0f, -1), all.data(), 5, history);
  EXPECT_FLOAT_EQ(all[3], 2.0f);
  EXPECT_FLOAT_EQ(all[0], 0.0f);
  EXPECT_FLOAT_EQ(all[1], -2.0f);

  auto none = kLogits;
  apply_penalties(penalty_params(1.3f, 1.0f, 1.0f, 0), none.data(), 5, history);
  EXPECT_EQ(none, kLogits);
}

TEST(Penalties, OutOfRangeIdsIgnored) {
  const std::vector<int32_t> history = {-3, 99, 2};
  auto l = kLogits;
  apply_penalties(penalty_params(1.0f, 0.0f, 1.0f, 64), l.data(), 5, history);
  EXPECT_FLOAT_EQ(l[2], -0.5f);
  for (int i : {0, 1, 3, 4}) EXPECT_EQ(l[i], kLogits[i]);
}

TEST(Penalties, SamplerAppliesThemBeforeGreedy) {
  // Token 0 leads 2.0 vs 1.9; it was just generated.
  const std::vector<float> logits = {2.0f, 1.9f, 0.0f};
  const std::vector<int32_t> history = {0};
  SamplingParams p = penalty_params(1.04f, 0.0f, 0.0f, 64);
  p.temperature = 0.0f;
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, history), 0);  // 2/1.04 = 1.923 > 1.9
  p.repeat_penalty = 1.06f;
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, history), 1);  // 2/1.06 = 1.887 < 1.9
  p = penalty_params(1.0f, 0.0f, 0.09f, 64);
  p.temperature = 0.0f;
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, history), 0);  // 1.91 > 1.9
  p.presence_penalty = 0.11f;
  EXPECT_EQ(Sampler(p).sample(logits.data(), 3, history), 1);  // 1.89 < 1.9
}

}  // namespace
}  // namespace stride
