// The top-k hot set (topk:...,resident=N with an offload tier): cold pages
// live in the tier and come back when selected. Checked against
//   * the masked naive reference over the selection written from the
//     definition (topk_oracle.h): the hot set changes where pages live, not
//     what attention computes;
//   * the same policy without a resident limit, bit for bit (pages travel as
//     exact byte images);
//   * the bound on pool pages after every attend: a layer holds at most
//     max(N, |sinks ∪ window ∪ picks|) pages, where window runs from the
//     first query's local window to the last page written and picks is the
//     union of the oracle's selection over the step's blocks and kv heads;
//   * accounting: pool pages and tier slots back to zero after
//     remove_sequence; prefetch and restore counters; a full tier refuses
//     new cold pages and keeps them in the pool (nothing is lost).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>

#include "kv/kv_manager.h"
#include "attention/plan.h"
#include "attention/policy.h"
#include "cache_test_util.h"
#include "topk_test_util.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_summary.h"
#include "../attention/topk_oracle.h"

namespace stride {

using namespace testing_util;

namespace {

// max(N, |sinks ∪ window ∪ picks|) for the step of c queries at pos (see the top).
int64_t hot_bound(const PolicySpec& pol, int layer, int64_t pos, int c) {
  const Data& d = data();
  std::set<int64_t> pages;
  const int64_t gp = pol.block > 0 ? pol.block / kS.page : 1;  // pages per selection group
  const int64_t B = gp * kS.page;
  const int64_t last_page = (pos + c - 1) / kS.page;
  auto add_group = [&](int64_t g) {
    for (int64_t L = g * gp; L < (g + 1) * gp && L <= last_page; ++L) pages.insert(L);
  };
  const int64_t n_sink = pol.sinks > 0 ? (pol.sinks + B - 1) / B : 1;
  for (int64_t g = 0; g < n_sink; ++g) add_group(g);
  const int64_t win = pol.window > 0 ? pol.window : B;
  for (int64_t L = std::max<int64_t>(0, pos - win + 1) / B * gp; L <= last_page; ++L) pages.insert(L);
  const int qblk = policy_q_block(pol, c);
  for (int b0 = 0; b0 < c; b0 += qblk)
    for (int h = 0; h < kS.n_kv; ++h) {
      const auto keep = topk_oracle_selection(pol, kS, d.q[layer], d.k[layer], pos + b0, std::min(qblk, c - b0), h);
      for (size_t g = 0; g < keep.size(); ++g)
        if (keep[g]) add_group((int64_t)g);
    }
  return std::max<int64_t>(pol.resident, (int64_t)pages.size());
}

struct RunResult {
  std::vector<float> out[kLayers];  // [kTok, n_head, hd]
  KvStats after;               // stats before remove_sequence
  int64_t max_held = 0;             // over layers and steps
  int64_t max_excess = 0;           // max(held - hot_bound) over layers and steps (> 0: bound broken)
  int64_t steps_at_n = 0;           // steps where held == N after the call
};

// Feeds kTok tokens in the given chunks through both layers; checks the
// bound after every attend when `check_bound`.
RunResult run(KvManager& cache_kv, const std::vector<int>& chunks, bool check_bound, bool ids_on = true) {
  StepDriver cache(cache_kv);
  const Data& d = data();
  const PolicySpec pol = cache.config().layer_policies[0];
  RunResult r;
  ThreadPool threads(2);
  const AttentionParams p = params_for(kS);
  const size_t kr = (size_t)kS.n_kv * kS.hd, qr = (size_t)kS.n_head * kS.hd;
  const std::vector<int32_t> ids = token_ids();
  for (auto& o : r.out) o.assign((size_t)kTok * qr, NAN);
  auto seq = cache.add_sequence();
  EXPECT_TRUE(seq.ok());
  int64_t pos = 0;
  for (int c : chunks) {
    const Status st = cache.reserve(*seq, c);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return r;
    for (int l = 0; l < kLayers; ++l) {
      cache.write(l, *seq, d.k[l].data() + pos * kr, d.v[l].data() + pos * kr, c);
      cache.attend(l, *seq, d.q[l].data() + pos * qr, c, p, r.out[l].data() + pos * qr, threads);
      const int64_t held = cache.pages_held(*seq, l);
      r.max_held = std::max(r.max_held, held);
      r.steps_at_n += held == pol.resident;
      if (check_bound) r.max_excess = std::max(r.max_excess, held - hot_bound(pol, l, pos, c));
    }
    cache.commit(*seq, c, ids_on ? ids.data() + pos : nullptr);
    pos += c;
  }
  r.after = cache.stats();
  cache.remove_sequence(*seq);
  return r;
}

bool same_bits(const RunResult& a, const RunResult& b) {
  for (int l = 0; l < kLayers; ++l)
    if (a.out[l].size() != b.out[l].size() ||
        std::memcmp(a.out[l].data(), b.out[l].data(), a.out[l].size() * sizeof(float)) != 0)
      return false;
  return true;
}

// Layer 0's output against the masked naive reference over the oracle's selection.
float reference_error(const RunResult& r, const PolicySpec& pol, const std::vector<int>& chunks) {
  const Data& d = data();
  std::vector<std::vector<std::vector<bool>>> sel(kTok);  // [query][kv head][group]
  int64_t pos = 0;
  for (int c : chunks) {
    const int qblk = policy_q_block(pol, c);
    for (int b0 = 0; b0 < c; b0 += qblk) {
      const int nq = std::min(qblk, c - b0);
      std::vector<std::vector<bool>> heads;
      for (int h = 0; h < kS.n_kv; ++h) heads.push_back(topk_oracle_selection(pol, kS, d.q[0], d.k[0], pos + b0, nq, h));
      for (int i = 0; i < nq; ++i) sel[pos + b0 + i] = heads;
    }
    pos += c;
  }
  const int group = kS.n_head / kS.n_kv;
  std::vector<float> want(r.out[0].size());
  attention_reference_masked(params_for(kS), kS.n_kv, kS.hd, kS.hd, d.q[0].data(), kTok,
                             f16_round(d.k[0]).data(), f16_round(d.v[0]).data(), kTok,
                             [&](int i, int hq, int64_t j) { return j <= i && sel[i][hq / group][j / kS.page]; },
                             want.data());
  return max_abs_diff(r.out[0], want);
}

std::string scratch_file(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string(name) + "." + std::to_string(getpid()))).string();
}

// One prefill chunk, then one token per step to kTok.
std::vector<int> then_decode(int prefill) {
  std::vector<int> chunks{prefill};
  chunks.resize((size_t)(kTok - prefill + 1), 1);
  return chunks;
}

constexpr char kUnlimited[] = "topk:sparsity=0.8";
constexpr char kHot[] = "topk:sparsity=0.8,resident=6";

struct HotCase {
  const char* name;
  bool file;
  KvStorage storage;
  std::vector<int> chunks;
  bool many_steps = true;  // enough steps that pages go out and come back
};

void PrintTo(const HotCase& c, std::ostream* os) { *os << c.name; }

class TopkHotSet : public ::testing::TestWithParam<HotCase> {};

TEST_P(TopkHotSet, MatchesUnlimitedBitForBitAndStaysBounded) {
  const HotCase& tc = GetParam();
  const std::string path = tc.file ? scratch_file("stride_topk_hot") : "";
  RunResult want, got;
  {
    auto cache = make_topk_cache(kUnlimited, 64, {}, tc.storage);
    ASSERT_TRUE(cache);
    want = run(*cache, tc.chunks, false);
    EXPECT_EQ(want.max_held, 25) << "without a limit every page stays";
  }
  {
    auto cache = make_topk_cache(kHot, 64, {64, path}, tc.storage);
    ASSERT_TRUE(cache);
    got = run(*cache, tc.chunks, true);
    EXPECT_LE(got.max_excess, 0) << "pool pages above max(N, |sinks ∪ window ∪ picks|)";
    const KvStats& st = got.after;
    EXPECT_GT(st.topk_pages_offloaded, 0);
    if (tc.many_steps) {
      EXPECT_LT(got.max_held, 25);
      EXPECT_GT(st.topk_pages_restored, 0);
      EXPECT_GT(st.topk_pages_prefetched, 0);
    }
    EXPECT_EQ(st.topk_offload_refused, 0);
    EXPECT_EQ(st.topk_restore_failed, 0);
    // Every cold page has its own owned slot (kept while the page is back in the pool).
    EXPECT_GT(st.tier_slots_owned, 0);
    EXPECT_EQ(st.tier_slots_used, st.tier_slots_owned) << "pages moved out are not copied twice";
    EXPECT_LE(st.tier_slots_owned, 2 * 25);
    const KvStats end = cache->stats();
    EXPECT_EQ(end.pages_used, 0) << "pool accounting back to its baseline";
    EXPECT_EQ(end.tier_slots_owned, 0) << "remove_sequence frees the tier slots";
    // Left: the slots of pages that moved out, handed to the cache space
    // under their prefix keys (one slot per page: no second copy).
    EXPECT_EQ(end.tier_slots_used, st.tier_slots_owned);
    EXPECT_EQ(end.pages_cached, end.pages_reclaimable) << "every registered page left is parked";
  }
  if (tc.file) {
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_TRUE(same_bits(got, want)) << "the hot set changed the attention output";
  if (tc.storage == KvStorage::F16) {
    EXPECT_LT(reference_error(got, *parse_policy(kHot), tc.chunks), 2e-5f);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TopkHotSet,
    ::testing::Values(HotCase{"decode_ram", false, KvStorage::F16, then_decode(100)},
                      HotCase{"decode_file", true, KvStorage::F16, then_decode(100)},
                      HotCase{"prefill_ram", false, KvStorage::F16, {130, 170, 100}, false},
                      // Short chunks: a chunk reads the union of its queries' picks.
                      HotCase{"prefill_file", true, KvStorage::F16, split_into(kTok, {8, 5})},
                      HotCase{"decode_int8_file", true, KvStorage::Int8, then_decode(100)}),
    [](const ::testing::TestParamInfo<HotCase>& i) { return std::string(i.param.name); });

// Decode holds exactly the hot set: N pages whenever sinks, window and picks fit in N.
// (sparsity 0.7 of at most 25 pages: 1 sink + 2 window + 2 kv heads x 5 picks = 13 < 14).
TEST(TopkHotSetDecode, HoldsNPagesWhenThePicksFit) {
  auto cache = make_topk_cache("topk:sparsity=0.7,resident=14", 64, {64, ""});
  ASSERT_TRUE(cache);
  const RunResult r = run(*cache, then_decode(64), true);
  EXPECT_LE(r.max_excess, 0);
  EXPECT_EQ(r.max_held, 14);
  EXPECT_GT(r.steps_at_n, 2 * 150) << "decode steps past 15 pages sit at N";
  EXPECT_GT(r.after.topk_prefetch_hits, 0) << "pages ranked after the cut were picked next step";
}

// A pool far smaller than the context works because cold pages leave it.
TEST(TopkHotSetDecode, SmallPoolServesALongerContext) {
  const std::vector<int> chunks = then_decode(32);
  RunResult want;
  {
    auto big = make_topk_cache(kUnlimited, 64, {});
    want = run(*big, chunks, false);
  }
  {
    // 2 layers x 25 pages would not fit in 24; reserve fails without the hot set.
    auto small = make_topk_cache(kUnlimited, 24, {});
    auto seq = small->add_sequence();
    ASSERT_TRUE(seq.ok());
    StepDriver small_steps(*small);
    EXPECT_EQ(small_steps.reserve(*seq, kTok).code(), StatusCode::kResourceExhausted);
  }
  auto cache = make_topk_cache("topk:sparsity=0.8,resident=8", 24, {64, ""});
  ASSERT_TRUE(cache);
  const RunResult got = run(*cache, chunks, true);
  EXPECT_LE(got.max_excess, 0);
  EXPECT_LE(got.after.peak_pages_used, 24);
  EXPECT_EQ(got.after.topk_restore_failed, 0);
  EXPECT_TRUE(same_bits(got, want));
}

// Top-k slots are owned: a full tier never drops one. New cold pages are
// refused (ResourceExhausted inside, counted) and stay in the pool.
TEST(TopkHotSetDecode, FullTierKeepsColdPagesInThePool) {
  const std::vector<int> chunks = then_decode(100);
  RunResult want;
  {
    auto cache = make_topk_cache(kUnlimited, 64, {});
    want = run(*cache, chunks, false);
  }
  auto cache = make_topk_cache(kHot, 64, {5, ""});
  ASSERT_TRUE(cache);
  const RunResult got = run(*cache, chunks, false, /*ids_on=*/false);
  EXPECT_TRUE(cache->select_is_serial(0)) << "selection moves pages: it must stay serial";
  EXPECT_GT(got.after.topk_offload_refused, 0);
  EXPECT_EQ(got.after.tier_slots_owned, 5);
  EXPECT_EQ(got.after.topk_restore_failed, 0) << "no owned page was lost";
  EXPECT_GT(got.max_held, 6) << "refused pages stay resident beyond N";
  EXPECT_TRUE(same_bits(got, want));
  EXPECT_EQ(cache->stats().tier_slots_used, 0);
}

TEST(TopkHotSetDecode, WithoutATierResidentChangesNothing) {
  const std::vector<int> chunks = then_decode(100);
  auto plain = make_topk_cache(kUnlimited, 64, {});
  auto hot = make_topk_cache(kHot, 64, {});
  const RunResult want = run(*plain, chunks, false);
  const RunResult got = run(*hot, chunks, false);
  EXPECT_EQ(got.max_held, 25);
  EXPECT_EQ(got.after.topk_pages_offloaded, 0);
  EXPECT_FALSE(hot->select_is_serial(0)) << "no tier: selection moves nothing";
  EXPECT_TRUE(same_bits(got, want));
}

// Pages that moved to the tier leave the pool (not parked there) and stay
// reusable as a prefix: a second sequence on the same tokens reuses every
// whole page and its remaining rows equal the unlimited policy's.
TEST(TopkHotSetDecode, MovedOutPagesStayReusableAsAPrefix) {
  const std::vector<int> chunks = then_decode(100);
  auto cache = make_topk_cache(kHot, 64, {128, ""});
  ASSERT_TRUE(cache);
  const RunResult first = run(*cache, chunks, false);
  EXPECT_LE(first.after.pages_used + first.after.pages_reclaimable, 2 * 9 + 2)
      << "moved-out pages are not parked in the pool";
  const std::vector<int32_t> ids = token_ids();
  auto hit = cache->add_sequence_with_prefix(ids);
  ASSERT_TRUE(hit.ok()) << hit.status().to_string();
  EXPECT_EQ(hit->reused_tokens, 384);  // 24 whole pages
  EXPECT_GT(cache->stats().pages_restored, 0) << "some came back from the tier";
  const Data& d = data();
  const size_t kr = (size_t)kS.n_kv * kS.hd, qr = (size_t)kS.n_head * kS.hd;
  std::vector<float> out[kLayers];
  ThreadPool threads(2);
  StepDriver steps(*cache);
  ASSERT_TRUE(steps.reserve(hit->seq, 16).ok());
  for (int l = 0; l < kLayers; ++l) {
    out[l].resize((size_t)16 * qr);
    steps.write(l, hit->seq, d.k[l].data() + 384 * kr, d.v[l].data() + 384 * kr, 16);
    steps.attend(l, hit->seq, d.q[l].data() + 384 * qr, 16, params_for(kS), out[l].data(), threads);
  }
  // The same rows from the unlimited policy fed in the same chunks.
  auto plain = make_topk_cache(kUnlimited, 64, {});
  const RunResult ref = run(*plain, {384, 16}, false);
  for (int l = 0; l < kLayers; ++l)
    EXPECT_EQ(std::memcmp(out[l].data(), ref.out[l].data() + 384 * qr, out[l].size() * sizeof(float)), 0)
        << "layer " << l;
  steps.commit(hit->seq, 16, ids.data() + 384);
  cache->remove_sequence(hit->seq);
  EXPECT_EQ(cache->stats().pages_used, 0);
  EXPECT_EQ(cache->stats().tier_slots_owned, 0);
}

// Selection groups of two pages, wider sinks and window: same guarantees.
TEST(TopkHotSetDecode, GroupsOfPagesSinksAndWindow) {
  const std::vector<int> chunks = then_decode(120);
  RunResult want;
  {
    auto cache = make_topk_cache("topk:sparsity=0.75,block=32,sinks=20,window=40", 64, {});
    want = run(*cache, chunks, false);
  }
  auto cache = make_topk_cache("topk:sparsity=0.75,block=32,sinks=20,window=40,resident=9", 64, {64, ""});
  ASSERT_TRUE(cache);
  const RunResult got = run(*cache, chunks, true);
  EXPECT_LE(got.max_excess, 0);
  EXPECT_LT(got.max_held, 25);
  EXPECT_GT(got.after.topk_pages_restored, 0);
  EXPECT_TRUE(same_bits(got, want));
}

TEST(TopkHotSetPolicy, ParsesAndPrintsResident) {
  auto p = parse_policy("topk:sparsity=0.9,resident=64");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->resident, 64);
  EXPECT_EQ(policy_to_string(*p), "topk:sparsity=0.9,resident=64");
  EXPECT_EQ(*parse_policy(policy_to_string(*p)), *p);
  EXPECT_EQ(parse_policy("topk:sparsity=0.9")->resident, 0);
  EXPECT_FALSE(parse_policy("topk:resident=0").ok());
  EXPECT_FALSE(parse_policy("topk:resident=x").ok());
}

}  // namespace
}  // namespace stride
