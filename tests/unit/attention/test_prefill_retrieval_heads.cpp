// Sparse prefill with a head profile (sparse_prefill:heads=FILE): on prompt
// chunks the profile's retrieval heads read every page and the other heads
// select with the policy's estimate. Checked against the scalar attention
// reference masked with the selection written from its definition
// (topk_oracle.h), and against dense attention head by head.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attention/head_budget.h"
#include "attention/policy.h"
#include "core/thread_pool.h"
#include "topk_check.h"

namespace stride {

using namespace testing_util;

namespace {

// The policy with layer 0's kv head 0 a retrieval head and kv head 1 a
// streaming one, as apply_head_profiles fills it from a profile whose
// distant masses are 0.7 and 0.2 (retrieval=0.5: one head of two).
PolicySpec with_profile(const char* policy) {
  auto p = parse_policy(policy);
  EXPECT_TRUE(p.ok()) << policy << ": " << p.status().to_string();
  PolicySpec spec = *p;
  spec.head_shares = head_shares_from_mass({0.7, 0.2}, {1, 1}, spec.retrieval);
  spec.head_layer = 0;
  return spec;
}

// Attention output [n, n_head, hd] and pages read of one prompt chunk of n.
std::pair<std::vector<float>, int64_t> run_prompt(const PolicySpec& spec, const Inputs& in, int n) {
  Shape s;
  ThreadPool threads(2);
  auto cache = make_cache(s, {spec});
  auto out = run_chunks(*cache, s, params_for(s), in.q, in.k, in.v, {n}, threads);
  return {out, cache->stats().pages_read};
}

// The largest difference between a and b over the query heads of kv head h.
float kv_head_diff(const std::vector<float>& a, const std::vector<float>& b, int n, int h) {
  Shape s;
  const int group = s.n_head / s.n_kv;
  float worst = 0;
  for (int i = 0; i < n; ++i)
    for (int j = h * group; j < (h + 1) * group; ++j)
      for (int c = 0; c < s.hd; ++c) {
        const size_t at = ((size_t)i * s.n_head + j) * s.hd + c;
        worst = std::max(worst, std::fabs(a[at] - b[at]));
      }
  return worst;
}

}  // namespace

TEST(PrefillRetrievalHeads, ParsesWithMassAndRefusesWhatCannotRun) {
  auto p = parse_policy("sparse_prefill:heads=h.json");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->decode_dense);
  EXPECT_DOUBLE_EQ(p->mass, 0.95);
  EXPECT_DOUBLE_EQ(p->retrieval, 0.5);
  auto q = parse_policy("sparse_prefill:mass=0.9,heads=h.json,retrieval=0.25,estimate=rerank,rows=8");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_DOUBLE_EQ(q->retrieval, 0.25);
  EXPECT_EQ(q->rerank_rows, 8);
  for (const PolicySpec& spec : {*p, *q}) {
    auto rt = parse_policy(policy_to_string(spec));
    ASSERT_TRUE(rt.ok()) << policy_to_string(spec);
    EXPECT_EQ(*rt, spec) << policy_to_string(spec);
  }
  // Decode steps split a fixed budget between heads: mass=P is refused there.
  for (const char* bad : {"topk:mass=0.9,heads=h.json", "topk:mass=0.9,prefill=dense,heads=h.json",
                          "sparse_prefill:rows=8", "topk:sparsity=0.9,prefill=dense,estimate=rerank,rows=8",
                          "sparse_prefill:estimate=rerank,rows=0"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

// The KvManager reads what the definition says, in one chunk and several,
// with the mass=P estimate, a fixed budget and the two-stage estimate.
TEST(PrefillRetrievalHeads, SelectionMatchesTheDefinition) {
  const Inputs in = random_inputs(Shape{}, 400, 11);
  for (const char* policy : {"sparse_prefill:heads=h.json", "sparse_prefill:sparsity=0.8,heads=h.json",
                             "sparse_prefill:mass=0.8,heads=h.json,estimate=rerank",
                             "sparse_prefill:heads=h.json,last=topk"})
    for (const std::vector<int>& chunks : {std::vector<int>{400}, std::vector<int>{130, 270}})
      check_topk_spec(with_profile(policy), in.q, in.k, in.v, 400, chunks);
}

// The retrieval head's output is dense's; the streaming head's is not (it
// leaves distant pages out), and the chunk reads fewer pages than dense.
TEST(PrefillRetrievalHeads, RetrievalHeadIsDenseAndStreamingHeadSelects) {
  const int n = 512;
  const Inputs in = random_inputs(Shape{}, n, 23);
  const auto dense = run_prompt(*parse_policy("dense"), in, n);
  // window=32: one page back, so the streaming head leaves pages of 512 tokens out.
  const auto sparse = run_prompt(*parse_policy("sparse_prefill:sparsity=0.8,last=topk,window=32"), in, n);
  const auto heads = run_prompt(with_profile("sparse_prefill:sparsity=0.8,heads=h.json,last=topk,window=32"), in, n);
  EXPECT_LT(kv_head_diff(heads.first, dense.first, n, 0), 2e-5f);
  EXPECT_GT(kv_head_diff(heads.first, dense.first, n, 1), 1e-3f);
  EXPECT_LT(kv_head_diff(heads.first, sparse.first, n, 1), 2e-5f) << "the streaming head selects as without a profile";
  EXPECT_LT(sparse.second, heads.second);
  EXPECT_LT(heads.second, dense.second);
  // retrieval=1: every head is a retrieval head, so the prompt is dense's.
  const auto all = run_prompt(with_profile("sparse_prefill:sparsity=0.8,heads=h.json,retrieval=1,last=topk,window=32"), in, n);
  EXPECT_LT(max_abs_diff(all.first, dense.first), 2e-5f);
}

}  // namespace stride
