// Top-k page selection across 2 and 4 ranks, each a process on loopback
// holding one position shard of a layer's keys and their summaries: the
// pages agreed through the group must be the ones the one-host selector
// (attention/topk_selector.h) picks over all the keys, for a fixed budget
// and for mass=P, with pages whose keys are copies of each other so that
// their scores tie exactly (equal scores go to the lower page on one host,
// and must across ranks). And the decode attention over the agreed pages,
// merged on the root, is the one-host kernel's output bit for bit when the
// shards lie on the kernel's segments.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/topk_selector.h"
#include "dist/shard_group.h"
#include "dist/shard_topk.h"
#include "dist/sharded_decode.h"
#include "kv/store/page_summary.h"
#include "rank_processes.h"
#include "shard_fixture.h"

namespace stride::dist {
namespace {

using testing::kHd;
using testing::kNhead;
using testing::kNkv;
using testing::kPage;
using testing::kSegmentKeys;
using testing::Layer;
using testing::RankReport;
using testing::RendezvousDir;

constexpr int64_t S = kSegmentKeys;
constexpr auto kDeadline = std::chrono::seconds(60);

// A layer whose pages `copies` hold the keys of page `from`: their summaries, so their scores, are equal.
Layer layer_with_ties(int64_t kv_len, int64_t from, const std::vector<int64_t>& copies) {
  Layer layer(kv_len, KvStorage::F16, false);
  const size_t page_floats = (size_t)kPage * kNkv * kHd;
  for (const int64_t to : copies)
    std::memcpy(layer.k.data() + to * page_floats, layer.k.data() + from * page_floats, page_floats * sizeof(float));
  return layer;
}

// The summaries of the shard's pages, in the pool pages that hold them (as the KV manager keeps them).
PageSummaries summaries_for(const Layer& layer, const KvShard& shard) {
  PageSummaries sums(shard.pages(kPage), kNkv, kHd);
  const int64_t row = (int64_t)kNkv * kHd;
  for (int32_t i = 0; i < shard.pages(kPage); ++i) {
    const int64_t first = shard.pos_begin + (int64_t)i * kPage;
    sums.update(shard.pool_page(i), 0, (int)std::min<int64_t>(kPage, shard.pos_end - first),
                layer.k.data() + first * row, row);
  }
  return sums;
}

struct OneHost {
  TopkSelection sel;
  std::vector<float> out;  // [kNhead, kHd]
};

OneHost one_host(const Layer& layer, const PolicySpec& policy, const std::vector<float>& q) {
  const KvShard all{0, layer.kv_len};
  const auto pool = layer.pool_for(all, all.pages(kPage));
  const PageSummaries sums = summaries_for(layer, all);
  std::vector<int32_t> table(all.pages(kPage));
  for (size_t i = 0; i < table.size(); ++i) table[i] = (int32_t)i;
  const float scale = attention_scale(layer.params(), kHd);
  const int64_t q_pos = layer.kv_len - 1;
  OneHost r;
  r.sel = select_topk(policy, table, kPage, layer.kv_len, q_pos, 1, 1, sums, q.data(), kNhead, kNkv, nullptr, 0, scale);
  auto plan = plan_topk(policy, table, kPage, layer.kv_len, q_pos, 1, 1, sums, q.data(), kNhead, kNkv, scale);
  EXPECT_TRUE(plan.ok());
  plan->work = partition_work(*plan, kPage, kNkv);
  r.out.resize((size_t)kNhead * kHd);
  ThreadPool threads(2);
  EXPECT_TRUE(attention_paged(*pool, *plan, policy, layer.params(), q.data(), r.out.data(), threads).ok());
  return r;
}

// A rank's report: [entries] its agreed selection's pages, then [kNkv + 1] the head index,
// then on the root the decode output.
RankReport topk_rank(const RendezvousDir& dir, const Layer& layer, const PolicySpec& policy,
                     const std::vector<KvShard>& shards, const std::vector<float>& q, int rank) {
  RankReport rep;
  const int world = (int)shards.size(), root = world - 1;
  auto group = ShardGroup::connect(dir.options(rank, world, std::chrono::seconds(20)));
  if (!group.ok()) return testing::failed(group.status());
  const auto pool = layer.pool_for(shards[rank], shards[rank].pages(kPage));
  const PageSummaries sums = summaries_for(layer, shards[rank]);
  const ShardedLayer mine{pool.get(), shards[rank], policy, layer.params(), &sums};
  auto sel = agree_topk_selection(**group, mine, q.data(), layer.kv_len - 1);
  if (!sel.ok()) return testing::failed(sel.status());
  for (const int64_t page : sel->pages) rep.out.push_back((float)page);
  for (const int32_t e : sel->head_indptr) rep.out.push_back((float)e);
  std::vector<int64_t> begins;
  for (const KvShard& s : shards) begins.push_back(s.pos_begin);
  std::vector<float> my_q = rank == root ? q : std::vector<float>(q.size(), 0.f);
  std::vector<float> out((size_t)kNhead * kHd);
  ThreadPool threads(1);
  rep.status = sharded_decode(**group, mine, my_q.data(), 1, layer.kv_len - 1, out.data(), threads, root, begins);
  if (rank == root) rep.out.insert(rep.out.end(), out.begin(), out.end());
  return rep;
}

void check(const char* policy_text, const std::vector<int64_t>& bounds,
           const std::vector<int64_t>& tied = {5, 9, 17, 18, 25, 30}) {
  SCOPED_TRACE(std::string(policy_text) + " over " + std::to_string(bounds.size() - 1) + " ranks");
  const PolicySpec policy = *parse_policy(policy_text);
  // Ties inside a rank, across ranks, and with the page that the budget cuts at.
  const Layer layer = layer_with_ties(bounds.back(), 3, tied);
  const auto shards = testing::shards_at(bounds);
  const auto q = testing::random_vec((size_t)kNhead * kHd, 11);
  const OneHost want = one_host(layer, policy, q);
  // Fewer picks than candidates, so the ranking decides, and every rank's pages compete.
  ASSERT_GT(want.sel.pages.size(), (size_t)2 * kNkv);
  ASSERT_LT(want.sel.pages.size(), (size_t)(layer.kv_len / kPage) * kNkv / 2);
  const RendezvousDir dir;
  const auto ranks = testing::run_ranks(
      (int)shards.size(), [&](int r) { return topk_rank(dir, layer, policy, shards, q, r); }, kDeadline);
  const size_t n_sel = want.sel.pages.size(), n_idx = want.sel.head_indptr.size();
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_TRUE(ranks[r].reported) << "rank " << r << " crashed or hung";
    ASSERT_TRUE(ranks[r].report.status.ok()) << ranks[r].report.status.to_string();
    const auto& got = ranks[r].report.out;
    ASSERT_GE(got.size(), n_sel + n_idx) << "rank " << r;
    for (size_t i = 0; i < n_sel; ++i) EXPECT_EQ((int64_t)got[i], want.sel.pages[i]) << "rank " << r << " entry " << i;
    for (size_t i = 0; i < n_idx; ++i)
      EXPECT_EQ((int32_t)got[n_sel + i], want.sel.head_indptr[i]) << "rank " << r << " index " << i;
  }
  const auto& root = ranks.back().report.out;
  ASSERT_EQ(root.size(), n_sel + n_idx + want.out.size());
  EXPECT_EQ(std::memcmp(root.data() + n_sel + n_idx, want.out.data(), want.out.size() * sizeof(float)), 0)
      << "decode over the agreed pages differs from the one-host kernel";
}

TEST(ShardTopk, FixedBudgetPicksTheOneHostPagesOverTwoAndFourRanks) {
  check("topk:sparsity=0.8,prefill=dense", {0, 2 * S, 4 * S});
  check("topk:sparsity=0.8,prefill=dense", {0, S, 2 * S, 3 * S, 4 * S + 40});
  check("topk:sparsity=0.7,block=64,sinks=16,window=64,prefill=dense", {0, S, 2 * S, 3 * S, 4 * S});
}

// Every page holds the same keys: every score ties, and the pages picked are
// those the tie rule prefers, on whichever rank they lie.
TEST(ShardTopk, EveryScoreTiedPicksTheOneHostPages) {
  std::vector<int64_t> all;
  for (int64_t p = 0; p < 4 * S / kPage; ++p)
    if (p != 3) all.push_back(p);
  check("topk:sparsity=0.8,prefill=dense", {0, S, 2 * S, 3 * S, 4 * S}, all);
}

TEST(ShardTopk, MassThresholdPicksTheOneHostPages) {
  check("topk:mass=0.5,prefill=dense", {0, 2 * S, 4 * S});
  check("topk:mass=0.5,min=64,prefill=dense", {0, S, 2 * S, 3 * S, 4 * S + 40});
}

TEST(ShardTopk, PoliciesThatCannotSelectAcrossRanksAreRefused) {
  EXPECT_TRUE(check_sharded_policies({*parse_policy("topk:sparsity=0.9,prefill=dense")}).ok());
  EXPECT_TRUE(check_sharded_policies({*parse_policy("rswa:sinks=4,window=64")}).ok());
  for (const char* p : {"topk:sparsity=0.9", "topk:sparsity=0.9,decode=dense", "topk:sparsity=0.9,prefill=dense,estimate=oracle",
                        "topk:sparsity=0.9,prefill=dense,estimate=rerank"}) {
    const Status st = check_sharded_policies({*parse_policy(p)});
    EXPECT_EQ(st.code(), StatusCode::kUnsupported) << p;
  }
}

}  // namespace
}  // namespace stride::dist
