// Every policy through KvManager (reserve, write, attend, commit) against the
// scalar reference on the same f16-rounded K/V.
#include <gtest/gtest.h>

#include <string>

#include "attention/policy.h"
#include "attention/rope_shift.h"
#include "../kv/cache_test_util.h"
#include "core/thread_pool.h"

namespace stride {

using namespace testing_util;

namespace {

struct Case {
  std::string policy;
  int hd;
  int n_tok;
  std::vector<int> chunk_pattern;  // chunk sizes, cycled
  int threads;
  float softcap = 0.f;
};

void check_case(const Case& c) {
  SCOPED_TRACE(c.policy + " hd=" + std::to_string(c.hd) + " n=" + std::to_string(c.n_tok) +
               " threads=" + std::to_string(c.threads) + " first chunk=" +
               std::to_string(c.chunk_pattern[0]));
  auto pol = parse_policy(c.policy);
  ASSERT_TRUE(pol.ok());
  Shape s;
  s.hd = c.hd;
  const AttentionParams p = params_for(s, c.softcap);
  const auto q = random_vec((size_t)c.n_tok * s.n_head * s.hd, 1);
  const auto k = random_vec((size_t)c.n_tok * s.n_kv * s.hd, 2);
  const auto v = random_vec((size_t)c.n_tok * s.n_kv * s.hd, 3);
  auto cache = make_cache(s, {*pol});
  ASSERT_TRUE(cache);
  ThreadPool threads(c.threads);
  const auto got = run_chunks(*cache, s, p, q, k, v, split_into(c.n_tok, c.chunk_pattern), threads);

  std::vector<float> want(got.size());
  attention_reference(*pol, p, s.n_kv, s.hd, s.hd, q.data(), c.n_tok, 0, f16_round(k).data(),
                      f16_round(v).data(), c.n_tok, want.data());
  EXPECT_LT(max_abs_diff(got, want), 2e-5f);
}

const char* kPolicies[] = {"dense", "window:size=40", "rswa:sinks=4,window=40,pos=abs",
                           "rswa:sinks=4,window=40,pos=rel", "rswa:sinks=20,window=17,pos=rel"};

}  // namespace

TEST(KVCacheAttention, OneChunkPrefillMatchesReference) {
  for (const char* pol : kPolicies)
    for (int hd : {64, 256}) check_case({pol, hd, 203, {203}, 2});
}

TEST(KVCacheAttention, ChunkedPrefillMatchesReference) {
  for (const char* pol : kPolicies)
    for (int threads : {1, 2}) check_case({pol, 64, 251, {37, 50, 13}, threads});
  check_case({"rswa:sinks=4,window=40,pos=rel", 256, 130, {33, 7}, 2});
  // A head size that is not a multiple of 8 or 32 exercises every tail path.
  check_case({"rswa:sinks=4,window=40,pos=rel", 20, 130, {33, 7}, 2});
  check_case({"dense", 44, 130, {33, 1}, 2});
}

TEST(KVCacheAttention, TokenByTokenDecodeMatchesReference) {
  for (const char* pol : kPolicies)
    for (int threads : {1, 2}) check_case({pol, 64, 150, {1}, threads});
  check_case({"rswa:sinks=4,window=40,pos=rel", 256, 90, {1}, 2});
}

// Long decode: the page list is split across threads and merged (flash-decoding).
TEST(KVCacheAttention, SplitKvDecodeMatchesReference) {
  check_case({"dense", 64, 700, {650, 1}, 2});
  check_case({"dense", 64, 700, {650, 1}, 3});
  check_case({"rswa:sinks=4,window=300,pos=rel", 64, 700, {600, 1}, 2});
}

TEST(KVCacheAttention, SoftcapMatchesReference) {
  check_case({"dense", 64, 120, {50, 1}, 2, 0.7f});
  check_case({"rswa:sinks=4,window=40,pos=rel", 64, 120, {50, 1}, 1, 0.7f});
}

// The mistral-inference test: token-by-token decode equals one prefill.
TEST(KVCacheAttention, DecodeEqualsPrefill) {
  for (const char* pol : kPolicies) {
    SCOPED_TRACE(pol);
    auto spec = parse_policy(pol);
    ASSERT_TRUE(spec.ok());
    Shape s;
    const int n = 180;
    const AttentionParams p = params_for(s);
    const auto q = random_vec((size_t)n * s.n_head * s.hd, 11);
    const auto k = random_vec((size_t)n * s.n_kv * s.hd, 12);
    const auto v = random_vec((size_t)n * s.n_kv * s.hd, 13);
    ThreadPool threads(2);
    auto c1 = make_cache(s, {*spec});
    auto c2 = make_cache(s, {*spec});
    const auto prefill = run_chunks(*c1, s, p, q, k, v, {n}, threads);
    const auto decode = run_chunks(*c2, s, p, q, k, v, std::vector<int>(n, 1), threads);
    EXPECT_LT(max_abs_diff(prefill, decode), 5e-4f);
  }
}

// Cache-relative R-SWA reproduces StreamingLLM: attention at absolute
// positions equals dense attention over an explicit cache where the sinks sit
// at 0..S-1 and the window right after them, with K rotated at those slots.
TEST(KVCacheAttention, CacheRelativeSinksEqualStreamingLlmCache) {
  const int S = 3, W = 20, n = 100, hd = 32, n_head = 2, n_kv = 1;
  const RopeTable rp = RopeTable::plain(100.0, hd, 1.0, false);
  const AttentionParams p = [&] {
    AttentionParams a;
    a.n_head = n_head;
    a.scale = 0.3f;
    a.rope = &rp;
    return a;
  }();
  auto rope_at = [&](const float* x, int64_t pos) {  // RoPE from raw, by composition from 0
    std::vector<float> y(x, x + hd);
    rope_rotate_by(y.data(), hd, pos, rp);
    return y;
  };
  const auto q_raw = random_vec((size_t)n_head * hd, 21);
  const auto k_raw = random_vec((size_t)n * n_kv * hd, 22);
  const auto v = random_vec((size_t)n * n_kv * hd, 23);
  const int64_t qpos = n - 1;
  // Absolute-position inputs for the policy path.
  std::vector<float> q_abs, k_abs;
  for (int h = 0; h < n_head; ++h) {
    auto r = rope_at(q_raw.data() + h * hd, qpos);
    q_abs.insert(q_abs.end(), r.begin(), r.end());
  }
  for (int j = 0; j < n; ++j) {
    auto r = rope_at(k_raw.data() + j * hd, j);
    k_abs.insert(k_abs.end(), r.begin(), r.end());
  }
  // Zero out nothing: the policy must hide the middle keys itself.
  PolicySpec rel;
  rel.kind = PolicyKind::RSWA;
  rel.sinks = S;
  rel.window = W;
  std::vector<float> got((size_t)n_head * hd);
  attention_reference(rel, p, n_kv, hd, hd, q_abs.data(), 1, qpos, k_abs.data(), v.data(), n,
                      got.data());

  // The StreamingLLM cache: slots 0..S-1 sinks, S..S+W-1 the window.
  std::vector<float> kc, vc;
  std::vector<int> src;
  for (int j = 0; j < S; ++j) src.push_back(j);
  for (int j = n - W; j < n; ++j) src.push_back(j);
  for (size_t slot = 0; slot < src.size(); ++slot) {
    auto r = rope_at(k_raw.data() + src[slot] * hd, (int64_t)slot);
    kc.insert(kc.end(), r.begin(), r.end());
    vc.insert(vc.end(), v.begin() + src[slot] * hd, v.begin() + (src[slot] + 1) * hd);
  }
  std::vector<float> qc;
  for (int h = 0; h < n_head; ++h) {
    auto r = rope_at(q_raw.data() + h * hd, S + W - 1);
    qc.insert(qc.end(), r.begin(), r.end());
  }
  std::vector<float> want((size_t)n_head * hd);
  attention_reference(PolicySpec{}, p, n_kv, hd, hd, qc.data(), 1, S + W - 1, kc.data(),
                      vc.data(), S + W, want.data());
  EXPECT_LT(max_abs_diff(got, want), 1e-4f);

  // And the absolute mode differs (the test can tell the two apart).
  PolicySpec abs = rel;
  abs.positions = PositionMode::Absolute;
  std::vector<float> got_abs((size_t)n_head * hd);
  attention_reference(abs, p, n_kv, hd, hd, q_abs.data(), 1, qpos, k_abs.data(), v.data(), n,
                      got_abs.data());
  EXPECT_GT(max_abs_diff(got_abs, want), 1e-3f);
}

}  // namespace stride
