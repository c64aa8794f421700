// decode_growth_fits, the root's admission check for its generated tokens,
// against pages counted by hand: a pool of 20 pages of 4 tokens over two
// layers, a shard of 10 tokens prepared (3 pages a layer, 6 held, 14 free).
// Under dense each decode step's token stays, so max_tokens m (m - 1 steps)
// needs 2 * (ceil((9 + m) / 4) - 3) more pages; under a window of 8 a layer
// holds at most the pages of the window and the one being written.
#include <gtest/gtest.h>

#include <span>

#include "dist/shard_step.h"
#include "kv/kv_manager.h"

namespace stride::dist {
namespace {

constexpr int kPage = 4, kHeadDim = 16, kShard = 10;

std::unique_ptr<KvManager> pool_of_20_pages(const PolicySpec& policy) {
  KvManagerConfig cfg;
  cfg.n_layer = 2;
  cfg.n_kv_heads = 1;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy, policy};
  cfg.budget_bytes = 20 * (int64_t)kPage * kHeadDim * 2 * 2 + 100;
  auto created = KvManager::create(cfg);
  EXPECT_TRUE(created.ok()) << created.status().message();
  return std::move(*created);
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
    const Status st = decode_growth_fits(*kv, layers, kShard, m);
    EXPECT_EQ(st.ok(), more <= 14) << m << " tokens: " << st.message();
    if (!st.ok())
      EXPECT_NE(st.message().find("need " + std::to_string(more) + " more pages"), std::string::npos) << st.message();
  }
  EXPECT_TRUE(decode_growth_fits(*kv, layers, kShard, 31).ok());   // 39 tokens: 10 pages a layer, 14 more
  EXPECT_EQ(decode_growth_fits(*kv, layers, kShard, 32).code(), StatusCode::kResourceExhausted);  // 16 more
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
  EXPECT_TRUE(decode_growth_fits(*kv, kv->config().layer_policies, kShard, 100000).ok());
}

}  // namespace
}  // namespace stride::dist
