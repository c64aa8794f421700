// Two-stage top-k (estimate=rerank): the policy keys, the page log-sum-exp
// kernel on every CPU path against its scalar reference (and that against
// closed forms), and the KvManager's selection against the two-stage
// selection written from its definition (topk_oracle.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attention/page_logsumexp.h"
#include "attention/policy.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kv/store/kv_pool.h"
#include "topk_check.h"

namespace stride {

using namespace testing_util;

TEST(TopkRerank, ParsesPrintsAndRefusesWhatCannotRun) {
  auto p = parse_policy("topk:sparsity=0.9,prefill=dense,estimate=rerank");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->rerank_estimate);
  EXPECT_FALSE(p->oracle_estimate || p->pooled_estimate);
  EXPECT_DOUBLE_EQ(p->shortlist, 4.0);  // the default
  auto q = parse_policy("topk:sparsity=0.8,block=32,prefill=dense,estimate=rerank,shortlist=2.5");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_DOUBLE_EQ(q->shortlist, 2.5);
  for (const PolicySpec& spec : {*p, *q}) {
    auto rt = parse_policy(policy_to_string(spec));
    ASSERT_TRUE(rt.ok()) << policy_to_string(spec);
    EXPECT_EQ(*rt, spec) << policy_to_string(spec);
  }
  for (const char* bad :
       {"topk:estimate=rerank", "topk:sparsity=0.9,estimate=rerank,shortlist=4",
        "topk:mass=0.9,prefill=dense,estimate=rerank", "topk:prefill=dense,shortlist=4",
        "topk:prefill=dense,estimate=rerank,shortlist=0.5", "topk:prefill=dense,estimate=rerank,shortlist=x",
        "topk:prefill=dense,estimate=rerank,shortlist=", "topk:mass=0.9,estimate=rerank",
        "sparse_prefill:estimate=rerank,resident=8"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
  // Prompt chunks (decode=dense): the pooled estimate is the first stage, under
  // a fixed budget or mass=P.
  auto sp = parse_policy("sparse_prefill:estimate=rerank");
  ASSERT_TRUE(sp.ok()) << sp.status().to_string();
  EXPECT_TRUE(sp->rerank_estimate && sp->pooled_estimate && sp->decode_dense && sp->select_per_block);
  EXPECT_DOUBLE_EQ(sp->mass, 0.95);
  EXPECT_DOUBLE_EQ(sp->shortlist, 4.0);
  auto sp2 = parse_policy("sparse_prefill:sparsity=0.8,estimate=rerank,shortlist=2");
  ASSERT_TRUE(sp2.ok()) << sp2.status().to_string();
  EXPECT_DOUBLE_EQ(sp2->shortlist, 2.0);
  for (const PolicySpec& spec : {*sp, *sp2}) {
    auto rt = parse_policy(policy_to_string(spec));
    ASSERT_TRUE(rt.ok()) << policy_to_string(spec);
    EXPECT_EQ(*rt, spec) << policy_to_string(spec);
  }
  // The hot set may have moved a shortlisted page to the tier: refused, and said so.
  auto hot = parse_policy("topk:sparsity=0.9,resident=64,estimate=rerank");
  ASSERT_FALSE(hot.ok());
  EXPECT_NE(hot.status().message().find("resident"), std::string::npos) << hot.status().to_string();
}

namespace {

// A pool of one page per storage type holding n random keys of 2 kv heads.
std::unique_ptr<KvPool> pool_with_keys(KvStorage storage, int dim, const std::vector<float>& k, int n) {
  KvPoolShape shape;
  shape.n_kv_heads = 2;
  shape.head_dim_k = dim;
  shape.head_dim_v = 8;
  shape.page_size = 16;
  shape.storage = storage;
  auto pool = KvPool::create(shape, 4);
  EXPECT_TRUE(pool.ok());
  const std::vector<float> v((size_t)n * 2 * 8, 0.5f);
  (*pool)->store(2, 0, n, k.data(), (int64_t)2 * dim, v.data(), 2 * 8, 0);
  return std::move(pool).value();
}

}  // namespace

// The scalar reference against closed forms: one key gives scale * q.k, two
// keys log(e^a + e^b).
TEST(PageLogsumexp, ReferenceIsTheLogSumExpOfTheLogits) {
  const int dim = 8;
  std::vector<float> k((size_t)2 * 2 * dim, 0.f);  // [2 tokens, 2 heads, dim]
  k[0] = 1.f;                                      // token 0, head 0: e0
  k[(size_t)2 * dim + 1] = 2.f;                    // token 1, head 0: 2 e1
  auto pool = pool_with_keys(KvStorage::F32, dim, k, 2);
  const std::vector<float> row = {3.f, 1.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  const float* rows[] = {row.data()};
  float one = 0, two = 0;
  page_logsumexp_ref(*pool, 2, 0, 1, rows, 1, 0.5f, nullptr, &one);
  page_logsumexp_ref(*pool, 2, 0, 2, rows, 1, 0.5f, nullptr, &two);
  EXPECT_NEAR(one, 1.5f, 1e-6f);
  EXPECT_NEAR(two, std::log(std::exp(1.5) + std::exp(1.0)), 1e-6f);
}

// Every CPU path's kernel against the scalar reference, for each storage,
// head sizes with and without vector tails, full and partial pages, and
// row counts that use every tile height.
TEST(PageLogsumexp, EveryCpuPathMatchesTheScalarReference) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  for (const KvStorage storage : {KvStorage::F32, KvStorage::F16, KvStorage::Int8})
    for (const int dim : {64, 20}) {
      const auto k = random_vec((size_t)16 * 2 * dim, 5 + dim);
      auto pool = pool_with_keys(storage, dim, k, 16);
      const auto q = random_vec((size_t)7 * dim, 9 + dim);
      std::vector<const float*> rows;
      for (int r = 0; r < 7; ++r) rows.push_back(q.data() + (size_t)r * dim);
      for (const CpuPath path : paths)
        for (const int n : {16, 13, 1})
          for (const int n_rows : {1, 2, 3, 4, 7})
            for (const int head : {0, 1}) {
              std::vector<float> want((size_t)n_rows), got((size_t)n_rows, -1.f), work((size_t)4 * 16);
              page_logsumexp_ref(*pool, 2, head, n, rows.data(), n_rows, 0.37f, nullptr, want.data());
              page_logsumexp_for(path)(*pool, 2, head, n, rows.data(), n_rows, 0.37f, work.data(), got.data());
              for (int r = 0; r < n_rows; ++r)
                EXPECT_NEAR(got[(size_t)r], want[(size_t)r], 2e-5f * std::max(1.f, std::fabs(want[(size_t)r])))
                    << cpu_path_name(path) << " storage=" << (int)storage << " dim=" << dim << " n=" << n
                    << " rows=" << n_rows << " r=" << r;
            }
    }
}

// The KvManager's decode steps read what the two-stage selection written from
// its definition reads (topk_oracle.h), on one and several threads.
TEST(TopkRerank, DecodeMatchesTheTwoStageSelection) {
  check_topk("topk:sparsity=0.8,prefill=dense,estimate=rerank", 400, split_into(400, {200, 1}), 2);
  check_topk("topk:sparsity=0.9,prefill=dense,estimate=rerank,shortlist=2", 400, split_into(400, {200, 1}), 1);
  check_topk("topk:sparsity=0.9,block=32,prefill=dense,estimate=rerank,shortlist=3", 300, split_into(300, {100, 1}),
             1);
  check_topk("topk:sparsity=0.6,sinks=20,window=40,prefill=dense,estimate=rerank,shortlist=1.5", 300,
             split_into(300, {150, 1}), 2);
  check_topk("topk:sparsity=0.5,prefill=dense,estimate=rerank", 653, {650, 1, 1, 1}, 3);
}

// Prompt chunks select with the two stages (a few sampled queries per block
// scored exactly) on every CPU path: the KvManager reads what the definition
// says, under mass=P and a fixed budget, with groups, sinks and a window.
TEST(TopkRerank, PromptChunksMatchTheTwoStageSelectionOnEveryCpuPath) {
  const std::vector<CpuPath> paths = supported_cpu_paths();
  ASSERT_FALSE(paths.empty());
  for (const CpuPath path : paths) {
    SCOPED_TRACE(cpu_path_name(path));
    ASSERT_TRUE(set_cpu_path(path).ok());
    check_topk("sparse_prefill:estimate=rerank", 300, {130, 170}, 2);
    check_topk("sparse_prefill:mass=0.8,estimate=rerank,shortlist=1.5", 400, {256, 144}, 2);
    check_topk("sparse_prefill:sparsity=0.8,estimate=rerank", 400, {400}, 2);
    check_topk("sparse_prefill:sparsity=0.6,block=32,sinks=20,window=40,estimate=rerank,shortlist=2", 300,
               {130, 170}, 1);
    check_topk("sparse_prefill:mass=0.9,min=48,max=96", 400, {200, 200}, 2);
    check_topk("sparse_prefill:mass=0.9,max=96,estimate=rerank", 400, {200, 200}, 2);
    check_topk("sparse_prefill:mass=0.9,min=48,estimate=rerank", 400, {200, 200}, 2);
    check_topk("sparse_prefill:mass=0.9,min=48,max=96,estimate=rerank", 400, {200, 200}, 2);
    // rows=N: more of each block's queries scored; rows at the block size: every query.
    check_topk("sparse_prefill:estimate=rerank,rows=8", 400, {256, 144}, 2);
    check_topk("sparse_prefill:sparsity=0.8,estimate=rerank,shortlist=100,rows=32", 300, {130, 170}, 2);
    // Decode steps after the prompt read every page.
    check_topk("sparse_prefill:estimate=rerank", 330, {300, 10, 10, 10}, 2);
  }
  ASSERT_TRUE(set_cpu_path(paths.back()).ok());
}

namespace {

// Attention outputs and pages read of a policy over n tokens: a prompt of
// n - steps, then single-token decode steps.
std::pair<std::vector<float>, int64_t> run_policy(const char* policy, const Inputs& in, int n, int steps) {
  Shape s;
  ThreadPool threads(2);
  auto cache = make_cache(s, {*parse_policy(policy)});
  std::vector<int> chunks = {n - steps};
  chunks.resize((size_t)steps + 1, 1);
  auto out = run_chunks(*cache, s, params_for(s), in.q, in.k, in.v, chunks, threads);
  return {out, cache->stats().pages_read};
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

// The two stages bracket the selectors they combine: a shortlist of the
// budget itself is the bound's selection, and a shortlist holding every
// candidate is the oracle's (exact mass over every key).
TEST(TopkRerank, ShortlistOfOneIsTheBoundAndOfAllIsTheOracle) {
  const int n = 400;
  const Inputs in = random_inputs(Shape{}, n, 71);
  const auto bound = run_policy("topk:sparsity=0.8,prefill=dense", in, n, 8);
  const auto short1 = run_policy("topk:sparsity=0.8,prefill=dense,estimate=rerank,shortlist=1", in, n, 8);
  const auto oracle = run_policy("topk:sparsity=0.8,prefill=dense,estimate=oracle", in, n, 8);
  const auto all = run_policy("topk:sparsity=0.8,prefill=dense,estimate=rerank,shortlist=1000", in, n, 8);
  EXPECT_TRUE(same_bits(short1.first, bound.first));
  EXPECT_TRUE(same_bits(all.first, oracle.first));
  EXPECT_FALSE(same_bits(bound.first, oracle.first)) << "the case must tell the two apart";
  EXPECT_EQ(short1.second, bound.second);
  EXPECT_EQ(all.second, oracle.second);
  EXPECT_EQ(bound.second, oracle.second) << "every selector reads the same number of pages";
}

// Pages whose keys spread over every channel's range get a large Quest bound
// but small true scores; the bound spends the budget on them and misses the
// needle, which the second stage finds when the shortlist holds it.
TEST(TopkRerank, FindsTheNeedleTheBoundRanksBelowDecoys) {
  Shape s;
  const int n = 512, last = n - 1, needle = 25 * 16 + 3;
  const int decoys[] = {3, 7, 11, 15, 19};  // pages
  Inputs in = random_inputs(s, n, 81);
  for (float& x : in.k) x *= 0.1f;
  const float* u = &in.q[(size_t)last * s.n_head * s.hd];  // head 0's question
  for (int h = 1; h < 3; ++h) std::copy(u, u + s.hd, &in.q[((size_t)last * s.n_head + h) * s.hd]);
  for (int c = 0; c < s.hd; ++c) in.k[(size_t)needle * s.n_kv * s.hd + c] = 2.f * u[c];  // q.k = 2|u|^2
  for (const int page : decoys)
    for (int t = 0; t < s.page; ++t)
      for (int c = 0; c < s.hd; ++c) {
        // Key t agrees with u in sign on channels c = t mod 16 and opposes it elsewhere:
        // every channel reaches +-4 within the page (bound 4 sum|u|), each key scores below 0.
        const float sign = u[c] >= 0 ? 1.f : -1.f;
        in.k[((size_t)(page * s.page + t) * s.n_kv) * s.hd + c] = (c % s.page == t ? 4.f : -4.f) * sign;
      }
  // The KvManager reads what the definition says (values of order 1: the harness's tolerance is absolute).
  check_topk_inputs("topk:sparsity=0.9,prefill=dense,estimate=rerank", in.q, in.k, in.v, n, {n - 1, 1});
  for (int c = 0; c < s.hd; ++c) in.v[(size_t)needle * s.n_kv * s.hd + c] = 100.f;
  const PolicySpec bound = *parse_policy("topk:sparsity=0.9,prefill=dense");
  ASSERT_FALSE(brute_selection(bound, s, in.q, in.k, last, 1, 0, n)[needle / s.page]) << "the bound misses it";
  auto needle_read = [&](const char* policy) {
    const std::vector<float> out = run_policy(policy, in, n, 1).first;
    float worst = 0;
    for (int h = 0; h < 3; ++h)
      for (int c = 0; c < s.hd; ++c)
        worst = std::max(worst, std::fabs(out[((size_t)last * s.n_head + h) * s.hd + c] - 100.f));
    return worst < 1.f;  // heads 0..2 put nearly all weight on the needle's value
  };
  EXPECT_FALSE(needle_read("topk:sparsity=0.9,prefill=dense"));
  // Budget: 4 of 32 pages, 2 picked. A shortlist of 4 holds decoys only; 8 holds the needle.
  EXPECT_FALSE(needle_read("topk:sparsity=0.9,prefill=dense,estimate=rerank,shortlist=2"));
  EXPECT_TRUE(needle_read("topk:sparsity=0.9,prefill=dense,estimate=rerank,shortlist=4"));
  EXPECT_TRUE(needle_read("topk:sparsity=0.9,prefill=dense,estimate=oracle"));
}

// The prompt's last query asks for a needle that the block's mean query (the
// pooled estimate) does not point at, while decoy pages with wide key ranges
// take the pooled bound's budget; the second stage scores the last query
// itself and reads the needle.
TEST(TopkRerank, PromptChunkFindsTheNeedleTheLastQueryAsksFor) {
  Shape s;
  const int n = 512, last = n - 1, needle = 9 * 16 + 5;
  const int decoys[] = {3, 7, 11, 15, 19};  // pages
  Inputs in = random_inputs(s, n, 91);
  for (float& x : in.k) x *= 0.1f;
  const float* u = &in.q[(size_t)last * s.n_head * s.hd];  // head 0's question
  for (int h = 1; h < 3; ++h) std::copy(u, u + s.hd, &in.q[((size_t)last * s.n_head + h) * s.hd]);
  for (int c = 0; c < s.hd; ++c) in.k[(size_t)needle * s.n_kv * s.hd + c] = 2.f * u[c];
  for (const int page : decoys)
    for (int t = 0; t < s.page; ++t)
      for (int c = 0; c < s.hd; ++c) in.k[((size_t)(page * s.page + t) * s.n_kv) * s.hd + c] = c % s.page == t ? 4.f : -4.f;
  // window=32: one page back, so the needle's page is outside the window.
  check_topk_inputs("sparse_prefill:sparsity=0.8,estimate=rerank,shortlist=100,window=32", in.q, in.k, in.v, n, {n});
  check_topk_inputs("sparse_prefill:estimate=rerank,window=32", in.q, in.k, in.v, n, {n});
  for (int c = 0; c < s.hd; ++c) in.v[(size_t)needle * s.n_kv * s.hd + c] = 100.f;
  auto needle_read = [&](const char* policy) {
    const std::vector<float> out = run_policy(policy, in, n, 0).first;
    float worst = 0;
    for (int h = 0; h < 3; ++h)
      for (int c = 0; c < s.hd; ++c)
        worst = std::max(worst, std::fabs(out[((size_t)last * s.n_head + h) * s.hd + c] - 100.f));
    return worst < 1.f;
  };
  EXPECT_TRUE(needle_read("dense"));
  EXPECT_FALSE(needle_read("sparse_prefill:sparsity=0.8,window=32"));
  EXPECT_TRUE(needle_read("sparse_prefill:sparsity=0.8,estimate=rerank,shortlist=100,window=32"));
  EXPECT_TRUE(needle_read("sparse_prefill:estimate=rerank,window=32")) << "mass=0.95 over the exact shares";
}

}  // namespace stride
