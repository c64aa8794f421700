#pragma once
// The KvManager harness of the top-k tests: runs a policy over random
// inputs in given chunks and checks its output against the scalar attention
// reference masked with the brute-force selection of topk_oracle.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "core/thread_pool.h"
#include "kv/kv_manager.h"
#include "../kv/cache_test_util.h"
#include "topk_oracle.h"

namespace stride::testing_util {

// Random queries, keys and values for n tokens of shape s (seeds seed, +1, +2).
struct Inputs {
  std::vector<float> q, k, v;  // [n, n_head, hd], [n, n_kv, hd], [n, n_kv, hd]
};
inline Inputs random_inputs(const Shape& s, int n, uint32_t seed) {
  return {random_vec((size_t)n * s.n_head * s.hd, seed), random_vec((size_t)n * s.n_kv * s.hd, seed + 1),
          random_vec((size_t)n * s.n_kv * s.hd, seed + 2)};
}

// The brute-force selection (topk_oracle.h), under its local name.
inline std::vector<bool> brute_selection(const PolicySpec& pol, const Shape& s, const std::vector<float>& q,
                                         const std::vector<float>& k, int64_t qa, int nq, int h,
                                         int64_t kv_end) {
  return testing_util::topk_oracle_selection(pol, s, q, k, qa, nq, h, kv_end);
}

// Runs the cache over q, k, v in the given chunks and compares with the
// masked reference over the brute-force selection. Returns the cache's stats.
// spec: the policy as the KvManager gets it (fields the engine fills from
// files, such as head_shares, included).
inline KvStats check_topk_spec(const PolicySpec& spec, const std::vector<float>& q, const std::vector<float>& k,
                               const std::vector<float>& v, int n_tok, const std::vector<int>& chunks,
                               int threads_n = 2) {
  SCOPED_TRACE(policy_to_string(spec) + " n=" + std::to_string(n_tok) + " chunk0=" + std::to_string(chunks[0]));
  int64_t total = 0;
  for (int c : chunks) total += c;
  if (total != n_tok) {
    ADD_FAILURE() << "chunks cover " << total << " tokens, not " << n_tok;
    return {};
  }
  const PolicySpec* pol = &spec;
  Shape s;
  const AttentionParams p = params_for(s);
  auto cache = make_cache(s, {*pol});
  EXPECT_TRUE(cache);
  ThreadPool threads(threads_n);
  const auto got = run_chunks(*cache, s, p, q, k, v, chunks, threads);
  EXPECT_EQ(cache->stats().pages_used, 0) << "pages leaked after the sequence ended";

  // Row i's selection: the block it fell in (chunks split into blocks of policy_q_block: one query each unless select=block).
  std::vector<std::vector<std::vector<bool>>> sel(n_tok);  // [query][kv head][group]
  int64_t pos = 0;
  for (int c : chunks) {
    const int qblk = policy_q_block(*pol, c);
    for (int b0 = 0; b0 < c; b0 += qblk) {
      const int nq = std::min(qblk, c - b0);
      std::vector<std::vector<bool>> heads;
      for (int h = 0; h < s.n_kv; ++h)
        heads.push_back(topk_selects(*pol, c, false) ? brute_selection(*pol, s, q, k, pos + b0, nq, h, pos + c)
                                                     : std::vector<bool>((size_t)n_tok, true));  // every page
      for (int i = 0; i < nq; ++i) sel[pos + b0 + i] = heads;
    }
    pos += c;
  }
  const int gp = pol->block > 0 ? (int)(pol->block / s.page) : 1;
  const int group = s.n_head / s.n_kv;
  std::vector<float> want(got.size());
  attention_reference_masked(p, s.n_kv, s.hd, s.hd, q.data(), n_tok, f16_round(k).data(),
                             f16_round(v).data(), n_tok,
                             [&](int i, int hq, int64_t j) {
                               return j <= i && sel[i][hq / group][j / s.page / gp];
                             },
                             want.data());
  EXPECT_LT(max_abs_diff(got, want), 2e-5f);
  return cache->stats();
}

inline KvStats check_topk_inputs(const std::string& policy, const std::vector<float>& q,
                                 const std::vector<float>& k, const std::vector<float>& v, int n_tok,
                                 const std::vector<int>& chunks, int threads_n = 2) {
  const auto pol = parse_policy(policy);
  EXPECT_TRUE(pol.ok()) << policy;
  if (!pol.ok()) return {};
  return check_topk_spec(*pol, q, k, v, n_tok, chunks, threads_n);
}

inline KvStats check_topk(const std::string& policy, int n_tok, const std::vector<int>& chunks,
                          int threads_n) {
  const auto [q, k, v] = random_inputs(Shape{}, n_tok, 11);
  return check_topk_inputs(policy, q, k, v, n_tok, chunks, threads_n);
}

}  // namespace stride::testing_util
