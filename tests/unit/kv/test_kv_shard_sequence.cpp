// add_sequence_at (kv_manager.h): a sequence holding only positions from a page
// boundary on (one rank's shard of a longer sequence). Its keys sit at their
// true positions, it holds pages for its own positions only, the pages go
// back on removal, and the kernel on its step plan attends exactly its own
// keys causally (checked against the scalar reference with the earlier
// positions masked out).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/attention_reference.h"
#include "attention/policy.h"
#include "cache_test_util.h"
#include "kv/kv_manager.h"

namespace stride {

using namespace testing_util;

namespace {

const Shape kShape{/*n_head=*/4, /*n_kv=*/2, /*hd=*/32, /*page=*/16};
constexpr int kLayers = 2;
const size_t kRow = (size_t)kShape.n_kv * kShape.hd;

// One step of n tokens on seq: the same keys and values on every layer.
Expected<StepPlan> write_step(KvManager& kv, const SequenceStep& step, const std::vector<float>& k,
                              const std::vector<float>& v) {
  STRIDE_ASSIGN_OR_RETURN(StepPlan plan, kv.prepare(std::span<const SequenceStep>(&step, 1)));
  for (int l = 0; l < kLayers; ++l) STRIDE_RETURN_IF_ERROR(kv.write(plan, 0, l, k.data(), v.data()));
  return plan;
}

}  // namespace

TEST(KvShardSequence, HoldsItsPositionsOnlyInPagesOfItsOwn) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 64);
  ASSERT_TRUE(kv);
  constexpr int64_t kFirst = 4 * 16;
  constexpr int kN = 40;
  auto seq = add_sequence_at(*kv, kFirst);
  ASSERT_TRUE(seq.ok()) << seq.status().to_string();
  EXPECT_EQ(kv->length(*seq), kFirst);
  const auto k = random_vec(kN * kRow, 1), v = random_vec(kN * kRow, 2);
  SequenceStep step;
  step.seq = *seq;
  step.n = kN;
  auto plan = write_step(*kv, step, k, v);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->seqs[0].pos0, kFirst);
  ASSERT_TRUE(kv->commit(*plan).ok());
  EXPECT_EQ(kv->length(*seq), kFirst + kN);
  for (int l = 0; l < kLayers; ++l) {
    EXPECT_EQ(kv->sequences().pages_held(*seq, l), 3);  // positions 64..103: pages 4, 5, 6
    const std::vector<int32_t>& table = *kv->sequences().page_table(*seq, l);
    ASSERT_EQ(table.size(), 7u);
    for (int p = 0; p < 4; ++p) EXPECT_EQ(table[(size_t)p], -1) << "page " << p;
    for (int i = 0; i < kN; ++i) {
      const int64_t pos = kFirst + i;
      const int32_t page = table[(size_t)(pos / kShape.page)];
      const int slot = (int)(pos % kShape.page);
      ASSERT_GE(page, 0);
      EXPECT_EQ(kv->pool().positions(page)[slot], pos);
    }
  }
  EXPECT_EQ(kv->stats().pages_used, 3 * kLayers);
  kv->remove_sequence(*seq);
  EXPECT_EQ(kv->stats().pages_used, 0);
}

TEST(KvShardSequence, ItsPlanAttendsItsOwnKeysCausallyAsTheReferenceDoes) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 64);
  ASSERT_TRUE(kv);
  constexpr int64_t kFirst = 2 * 16;
  constexpr int kN = 37;
  auto seq = add_sequence_at(*kv, kFirst);
  ASSERT_TRUE(seq.ok());
  const auto k = random_vec(kN * kRow, 3), v = random_vec(kN * kRow, 4);
  const auto q = random_vec((size_t)kN * kShape.n_head * kShape.hd, 5);
  SequenceStep step;
  step.seq = *seq;
  step.n = kN;
  auto plan = write_step(*kv, step, k, v);
  ASSERT_TRUE(plan.ok());
  const AttentionParams ap = params_for(kShape);
  ThreadPool threads(2);
  std::vector<float> out((size_t)kN * kShape.n_head * kShape.hd);
  const AttentionPlan& pages = plan->seqs[0].layers[1].pages;
  for (const int64_t first : pages.page_first) EXPECT_GE(first, kFirst);
  const Status st = attention_paged(kv->pool(), pages, kv->layer_policy(1), ap, q.data(), out.data(), threads);
  ASSERT_TRUE(st.ok()) << st.to_string();

  // The reference over positions 0 .. kFirst + kN - 1, the earlier ones zero and masked.
  const int64_t n_kv = kFirst + kN;
  std::vector<float> all_k((size_t)n_kv * kRow, 0.f), all_v((size_t)n_kv * kRow, 0.f);
  std::copy(k.begin(), k.end(), all_k.begin() + (ptrdiff_t)(kFirst * kRow));
  std::copy(v.begin(), v.end(), all_v.begin() + (ptrdiff_t)(kFirst * kRow));
  std::vector<float> want(out.size());
  attention_reference_masked(ap, kShape.n_kv, kShape.hd, kShape.hd, q.data(), kN, all_k.data(), all_v.data(), n_kv,
                             [&](int i, int, int64_t j) { return j >= kFirst && j <= kFirst + i; }, want.data());
  for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-4f) << "at " << i;
  ASSERT_TRUE(kv->commit(*plan).ok());
}

TEST(KvShardSequence, AWindowReleasesItsPagesAsOnOneHost) {
  auto kv = make_f32_manager(kShape, kLayers, "window:size=16", 64);
  ASSERT_TRUE(kv);
  auto seq = add_sequence_at(*kv, 3 * 16);
  ASSERT_TRUE(seq.ok());
  const auto k = random_vec(64 * kRow, 6), v = random_vec(64 * kRow, 7);
  SequenceStep step;
  step.seq = *seq;
  step.n = 64;
  auto plan = write_step(*kv, step, k, v);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(kv->commit(*plan).ok());
  // At length 112 the next query (112) sees keys 97..112: pages 6 (96..111) and 7 on.
  for (int l = 0; l < kLayers; ++l) EXPECT_EQ(kv->sequences().pages_held(*seq, l), 1) << "layer " << l;
}

// The prefix cache per shard: a shard given the prompt's ids registers its
// full pages under keys chained from position 0; a later shard at the same
// first position finds them only under the same tokens before and in them.
TEST(KvShardSequence, ReusesItsCachedPagesOnlyUnderTheSamePrefix) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 64);
  ASSERT_TRUE(kv);
  constexpr int64_t kFirst = 2 * 16;
  constexpr int kN = 3 * 16;  // pages 2, 3, 4
  std::vector<int32_t> prompt(kFirst + kN + 20);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = (int32_t)(7 * i + 3);
  auto first = add_sequence_at(*kv, kFirst, prompt, kFirst);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const auto k = random_vec(kN * kRow, 8), v = random_vec(kN * kRow, 9);
  SequenceStep step;
  step.seq = *first;
  step.tokens = prompt.data() + kFirst;
  step.n = kN;
  auto plan = write_step(*kv, step, k, v);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(kv->commit(*plan).ok());
  const std::vector<int32_t> written = *kv->sequences().page_table(*first, 1);
  kv->remove_sequence(*first);
  EXPECT_EQ(kv->stats().pages_used, 0);

  // The same prefix, longer: its three pages from kFirst, never more than the shard's end.
  EXPECT_EQ(cached_shard_end(*kv, prompt, kFirst, (int64_t)prompt.size()), kFirst + kN);
  EXPECT_EQ(cached_shard_end(*kv, prompt, kFirst, kFirst + 32), kFirst + 32);
  EXPECT_EQ(cached_shard_end(*kv, prompt, 0, kFirst), 0);  // the pages before were never written here
  auto again = add_sequence_at(*kv, kFirst, prompt, kFirst + kN);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(kv->length(*again), kFirst + kN);
  EXPECT_EQ(*kv->sequences().page_table(*again, 1), written);  // the very pages, shared
  EXPECT_EQ(kv->stats().pages_used, 3 * kLayers);
  kv->remove_sequence(*again);
  EXPECT_EQ(kv->stats().pages_used, 0);

  // A token before the shard differs: the keys chained from 0 differ, nothing is found.
  std::vector<int32_t> other = prompt;
  other[0] += 1;
  EXPECT_EQ(cached_shard_end(*kv, other, kFirst, (int64_t)other.size()), kFirst);
  // The last prompt token is always left to compute.
  const std::vector<int32_t> exact(prompt.begin(), prompt.begin() + kFirst + kN);
  EXPECT_EQ(cached_shard_end(*kv, exact, kFirst, (int64_t)exact.size()), kFirst + 2 * 16);
}

TEST(KvShardSequence, StartsOnlyAtAPageBoundary) {
  auto kv = make_f32_manager(kShape, kLayers, "dense", 8);
  ASSERT_TRUE(kv);
  EXPECT_EQ(add_sequence_at(*kv, 17).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(add_sequence_at(*kv, -16).status().code(), StatusCode::kInvalidArgument);
  auto zero = add_sequence_at(*kv, 0);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(kv->length(*zero), 0);
}

}  // namespace stride
