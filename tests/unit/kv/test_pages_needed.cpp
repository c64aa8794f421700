// pages_for_growth against what the KV manager really holds: a sequence is
// driven through prepare / write / commit in the same steps, and the most
// pages it holds during a step must equal the count, for every policy kind;
// shard_pages_for_growth the same for a sequence that starts past position 0
// (add_sequence_at: a rank's shard, then its decode steps).
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "kv/kv_manager.h"
#include "kv/kv_pages_needed.h"

namespace stride {
namespace {

constexpr int kPage = 16, kKv = 1, kDim = 8;

// The most pages a sequence starting at first_pos holds while it grows by n
// tokens in steps of chunk, after a first step of first_step tokens (0: none).
int64_t measured_peak(const PolicySpec& p, int64_t first_pos, int first_step, int64_t n, int chunk) {
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = kKv;
  cfg.head_dim_k = cfg.head_dim_v = kDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {p};
  cfg.prefix_cache = false;
  cfg.budget_bytes = 4096LL * kPage * kKv * kDim * 2 * 2;
  auto kv = KvManager::create(cfg);
  EXPECT_TRUE(kv.ok()) << kv.status().to_string();
  auto seq = first_pos == 0 ? (*kv)->add_sequence() : add_sequence_at(**kv, first_pos);
  EXPECT_TRUE(seq.ok());
  const std::vector<float> rows((size_t)std::max(chunk, first_step) * kKv * kDim, 0.25f);
  int64_t peak = 0;
  for (int64_t done = -first_step; done < n;) {
    const int c = done < 0 ? first_step : (int)std::min<int64_t>(chunk, n - done);
    const SequenceStep r{*seq, nullptr, c};
    auto plan = (*kv)->prepare(std::span<const SequenceStep>(&r, 1));
    EXPECT_TRUE(plan.ok()) << plan.status().to_string();
    if (!plan.ok()) return -1;
    peak = std::max(peak, (*kv)->sequences().pages_held(*seq, 0));  // what the step holds
    EXPECT_TRUE((*kv)->write(*plan, 0, 0, rows.data(), rows.data()).ok());
    EXPECT_TRUE((*kv)->commit(*plan).ok());
    done = done < 0 ? 0 : done + c;
    if (done == 0) peak = 0;  // the first step is the shard's prefill: the peak of the growth after it
  }
  return peak;
}

TEST(PagesForGrowth, EqualsThePeakTheManagerHolds) {
  const char* policies[] = {"dense", "window:size=40", "window:size=16", "rswa:sinks=4,window=40",
                            "rswa:sinks=20,window=33", "strided:window=24,stride=3,block=16",
                            "strided:window=24,stride=2,globals=5,block=8,ranges=100-130", "topk:sparsity=0.5"};
  for (const char* text : policies) {
    const PolicySpec p = *parse_policy(text);
    for (const int chunk : {1, 7, 16, 33, 100})
      for (const int64_t n : {1, 15, 16, 17, 200, 611}) {
        SCOPED_TRACE(std::string(text) + " chunk=" + std::to_string(chunk) + " n=" + std::to_string(n));
        EXPECT_EQ(layer_pages_for_growth(p, kPage, 0, n, chunk), measured_peak(p, 0, 0, n, chunk));
      }
  }
}

// A shard holds no page before its first position: under R-SWA no sink page
// on any rank but the first, so its decode holds the window's pages only.
TEST(ShardPagesForGrowth, EqualsThePeakAShardsDecodeHolds) {
  const char* policies[] = {"dense", "window:size=40", "rswa:sinks=4,window=40", "rswa:sinks=20,window=33",
                            "strided:window=24,stride=2,globals=5,block=8,ranges=100-130", "topk:sparsity=0.5"};
  for (const char* text : policies) {
    const std::vector<PolicySpec> layers = {*parse_policy(text)};
    for (const int64_t first_pos : {0, 16, 64, 160})
      for (const int shard : {5, 16, 37, 90})
        for (const int64_t steps : {1, 30, 120}) {
          SCOPED_TRACE(std::string(text) + " first_pos=" + std::to_string(first_pos) + " shard=" +
                       std::to_string(shard) + " steps=" + std::to_string(steps));
          EXPECT_EQ(shard_pages_for_growth(layers, kPage, first_pos, first_pos + shard, steps, 1),
                    measured_peak(layers[0], first_pos, shard, steps, 1));
          // The shard's prefill as one step holds its own pages only.
          EXPECT_EQ(shard_pages_for_growth(layers, kPage, first_pos, first_pos, shard, shard),
                    (first_pos + shard + kPage - 1) / kPage - first_pos / kPage);
        }
  }
}

TEST(PagesForGrowth, SumsOverLayersAndStaysFlatUnderRswa) {
  const PolicySpec dense{};
  const PolicySpec rswa = *parse_policy("rswa:sinks=4,window=60");
  const std::vector<PolicySpec> layers = {dense, rswa, rswa};
  EXPECT_EQ(pages_for_growth(layers, kPage, 0, 500, 50),
            layer_pages_for_growth(dense, kPage, 0, 500, 50) + 2 * layer_pages_for_growth(rswa, kPage, 0, 500, 50));
  EXPECT_EQ(layer_pages_for_growth(rswa, kPage, 0, 5000, 50), layer_pages_for_growth(rswa, kPage, 0, 100000, 50));
  EXPECT_EQ(layer_pages_for_growth(dense, kPage, 0, 500, 50), (500 + kPage - 1) / kPage);
  EXPECT_EQ(layer_pages_for_growth(dense, kPage, 0, 0, 50), 0);
}

}  // namespace
}  // namespace stride
