// decode_growth_fits, the root's admission check for its generated tokens,
// against pages counted by hand: a pool of 20 pages of 4 tokens over two
// layers, a shard of 10 tokens prepared (3 pages a layer, 6 held, 14 free).
// Under dense each decode step's token stays, so max_tokens m (m - 1 steps)
// needs 2 * (ceil((9 + m) / 4) - 3) more pages; under a window of 8 a layer
// holds at most the pages of the window and the one being written. A root
// shard past position 0 under R-SWA is admitted exactly when the KV manager
// can run its decode steps (driven through prepare / write / commit).
#include <gtest/gtest.h>

#include <span>

#include "dist/shard_step.h"
#include "kv/kv_manager.h"

namespace stride::dist {
namespace {

constexpr int kPage = 4, kHeadDim = 16, kShard = 10;

std::unique_ptr<KvManager> pool_of(int64_t pages, const PolicySpec& policy) {
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = 1;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy, policy};
  cfg.budget_bytes = pages * kPage * kHeadDim * 2 * 2 + 100;
  auto created = KvManager::create(cfg);
  EXPECT_TRUE(created.ok()) << created.status().message();
  return std::move(*created);
}

std::unique_ptr<KvManager> pool_of_20_pages(const PolicySpec& policy) { return pool_of(20, policy); }

// One step of n tokens on every layer of seq, committed.
Status run_step(KvManager& kv, KvManager::SeqId seq, int n) {
  const std::vector<float> rows((size_t)n * kHeadDim, 0.5f);
  const SequenceStep step{seq, nullptr, n};
  STRIDE_ASSIGN_OR_RETURN(StepPlan plan, kv.prepare(std::span<const SequenceStep>(&step, 1)));
  for (int l = 0; l < kv.config().n_layer; ++l) STRIDE_RETURN_IF_ERROR(kv.write(plan, 0, l, rows.data(), rows.data()));
  return kv.commit(plan);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

TEST(DecodeGrowth, DenseCountsEveryGeneratedTokensPage) {
  auto kv = pool_of_20_pages(PolicySpec{});
  ASSERT_EQ(kv->stats().pages_total, 20);
  SequenceStep step;
  step.seq = *kv->add_sequence();
  step.n = kShard;
  auto plan = kv->prepare(std::span<const SequenceStep>(&step, 1));  // held until the test ends
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(kv->stats().pages_used, 6);
  const std::vector<PolicySpec>& layers = kv->config().layer_policies;
  for (int m = 0; m <= 40; ++m) {
    const int64_t more = m <= 1 ? 0 : 2 * (ceil_div(kShard + m - 1, kPage) - ceil_div(kShard, kPage));
    const Status st = decode_growth_fits(*kv, layers, 0, kShard, m);
    EXPECT_EQ(st.ok(), more <= 14) << m << " tokens: " << st.message();
    if (!st.ok())
      EXPECT_NE(st.message().find("need " + std::to_string(more) + " more pages"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(decode_growth_fits(*kv, layers, 0, kShard, 31).ok());   // 39 tokens: 10 pages a layer, 14 more
  EXPECT_EQ(decode_growth_fits(*kv, layers, 0, kShard, 32).code(), StatusCode::kResourceExhausted);  // 16 more
}

TEST(DecodeGrowth, AWindowHoldsItsPagesWhateverTheLength) {
  PolicySpec window;
  window.kind = PolicyKind::Window;
  window.window = 8;
  auto kv = pool_of_20_pages(window);
  SequenceStep step;
  step.seq = *kv->add_sequence();
  step.n = kShard;
  auto plan = kv->prepare(std::span<const SequenceStep>(&step, 1));
  ASSERT_TRUE(plan.ok());
  // At most 3 pages of the window (8 keys over 4-token pages) and 1 written, per layer: 2 more at most.
  EXPECT_TRUE(decode_growth_fits(*kv, kv->config().layer_policies, 0, kShard, 100000).ok());
}

TEST(DecodeGrowth, ARootShardUnderRswaIsAdmittedExactlyWhenTheManagerRunsItsDecode) {
  const PolicySpec rswa = *parse_policy("rswa:sinks=4,window=8");
  constexpr int64_t kFirst = 4 * kPage;  // the root's shard [16, 22): no sink page of its own
  constexpr int kRootShard = 6;
  int admitted_at_the_edge = 0;
  for (int64_t pages = 4; pages <= 12; ++pages)
    for (int m = 1; m <= 24; ++m) {
      SCOPED_TRACE(std::to_string(pages) + " pages, " + std::to_string(m) + " tokens");
      auto kv = pool_of(pages, rswa);
      auto seq = add_sequence_at(*kv, kFirst);
      ASSERT_TRUE(seq.ok());
      const SequenceStep prefill{*seq, nullptr, kRootShard};
      std::vector<float> rows((size_t)kRootShard * kHeadDim, 0.5f);
      auto plan = kv->prepare(std::span<const SequenceStep>(&prefill, 1));
      ASSERT_TRUE(plan.ok());
      const bool admitted =
          decode_growth_fits(*kv, kv->config().layer_policies, kFirst, kFirst + kRootShard, m).ok();
      for (int l = 0; l < 2; ++l) ASSERT_TRUE(kv->write(*plan, 0, l, rows.data(), rows.data()).ok());
      ASSERT_TRUE(kv->commit(*plan).ok());
      bool ran = true;
      for (int step = 0; step < m - 1 && ran; ++step) ran = run_step(*kv, *seq, 1).ok();
      EXPECT_EQ(admitted, ran);
      if (pages == 6 && admitted) ++admitted_at_the_edge;
    }
  // 6 pages hold the decode's 3 a layer (keys 17..24 and the page written); a sink page counted would ask for 8.
  EXPECT_EQ(admitted_at_the_edge, 24);
}

}  // namespace
}  // namespace stride::dist
