// The fused kernel on int8 KV pages, through KvManager (reserve, write, attend,
// commit), for every policy: against the scalar reference run on K/V
// quantized and dequantized here from the definition (tight: only float
// rounding differs), and against the reference on the f32 K/V (loose: the
// quantization error itself, bounded below).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "attention/policy.h"
#include "../kv/cache_test_util.h"
#include "core/thread_pool.h"
#include "kv/store/kv_pool.h"

namespace stride {

using namespace testing_util;

namespace {

// Against dequantized K/V only float rounding differs (seen: < 1e-6).
// Against f32 K/V on N(0, 1) data each element moves by up to max|x| / 254
// (~0.015), which moves scores and outputs by about as much (seen: max 0.027,
// mean 0.002 over these cases).
constexpr float kTightTol = 2e-5f;
constexpr float kLooseTol = 0.05f;
constexpr float kLooseMeanTol = 0.005f;

std::unique_ptr<KvManager> make_typed_cache(const Shape& s, std::vector<PolicySpec> pols,
                                          KvStorage storage) {
  KvManagerConfig cfg;
  cfg.n_layer = (int)pols.size();
  cfg.n_kv_heads = s.n_kv;
  cfg.head_dim_k = s.hd;
  cfg.head_dim_v = s.hd;
  cfg.page_size = s.page;
  cfg.storage = storage;
  cfg.layer_policies = std::move(pols);
  cfg.budget_bytes = (int64_t)(1 << 14) * cfg.n_layer * s.n_kv * s.hd * 2 * 4;
  auto c = KvManager::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return c.ok() ? std::move(c).value() : nullptr;
}

// Rows of `dim` values quantized as defined (scale = max|x| / 127, q =
// round(x / scale)) and mapped back: what an int8 page holds.
std::vector<float> int8_round(std::vector<float> x, int dim) {
  for (size_t r = 0; r < x.size(); r += dim) {
    float amax = 0.f;
    for (int i = 0; i < dim; ++i) amax = std::max(amax, std::fabs(x[r + i]));
    const float scale = amax / 127.f;
    for (int i = 0; i < dim; ++i) x[r + i] = scale > 0 ? std::nearbyint(x[r + i] / scale) * scale : 0.f;
  }
  return x;
}

float mean_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] - b[i]);
  return (float)(s / (double)a.size());
}

struct Case {
  std::string policy;
  int hd;
  int n_tok;
  std::vector<int> chunk_pattern;  // cycled
  int threads;
  float softcap = 0.f;
};

void check_case(const Case& c) {
  SCOPED_TRACE(c.policy + " hd=" + std::to_string(c.hd) + " n=" + std::to_string(c.n_tok) +
               " threads=" + std::to_string(c.threads) + " chunk0=" + std::to_string(c.chunk_pattern[0]));
  auto pol = parse_policy(c.policy);
  ASSERT_TRUE(pol.ok()) << pol.status().to_string();
  Shape s;
  s.hd = c.hd;
  const AttentionParams p = params_for(s, c.softcap);
  const auto q = random_vec((size_t)c.n_tok * s.n_head * s.hd, 21);
  const auto k = random_vec((size_t)c.n_tok * s.n_kv * s.hd, 22);
  const auto v = random_vec((size_t)c.n_tok * s.n_kv * s.hd, 23);
  auto cache = make_typed_cache(s, {*pol}, KvStorage::Int8);
  ASSERT_TRUE(cache);
  ThreadPool threads(c.threads);
  const auto got = run_chunks(*cache, s, p, q, k, v, split_into(c.n_tok, c.chunk_pattern), threads);
  EXPECT_EQ(cache->stats().pages_used, 0) << "pages leaked";

  std::vector<float> want(got.size()), exact(got.size());
  attention_reference(*pol, p, s.n_kv, s.hd, s.hd, q.data(), c.n_tok, 0, int8_round(k, s.hd).data(),
                      int8_round(v, s.hd).data(), c.n_tok, want.data());
  EXPECT_LT(max_abs_diff(got, want), kTightTol);
  attention_reference(*pol, p, s.n_kv, s.hd, s.hd, q.data(), c.n_tok, 0, k.data(), v.data(),
                      c.n_tok, exact.data());
  EXPECT_LT(max_abs_diff(got, exact), kLooseTol);
  EXPECT_LT(mean_abs_diff(got, exact), kLooseMeanTol);
}

const char* kPolicies[] = {"dense",
                           "window:size=40",
                           "rswa:sinks=4,window=40,pos=abs",
                           "rswa:sinks=4,window=40,pos=rel",
                           "rswa:sinks=20,window=17,pos=rel",
                           "strided:window=40,globals=4,stride=3,block=16",
                           "strided:window=24,stride=4,block=8,ranges=50-70+130-131"};

}  // namespace

TEST(Int8KvAttention, OneChunkPrefillMatchesReference) {
  for (const char* pol : kPolicies)
    for (int hd : {64, 256}) check_case({pol, hd, 203, {203}, 2});
  check_case({"dense", 64, 150, {150}, 2, 30.f});  // soft-capped scores
}

TEST(Int8KvAttention, ChunkedPrefillMatchesReference) {
  for (const char* pol : kPolicies) check_case({pol, 64, 251, {37, 50, 13}, 2});
  // Head sizes that are not multiples of 8 or 32 exercise every tail path.
  check_case({"rswa:sinks=4,window=40,pos=rel", 20, 130, {33, 7}, 2});
  check_case({"dense", 44, 130, {33, 1}, 1});
}

TEST(Int8KvAttention, TokenByTokenDecodeMatchesReference) {
  for (const char* pol : kPolicies)
    for (int threads : {1, 2}) check_case({pol, 64, 150, {1}, threads});
}

// Long decode: the page list is split across threads and merged (flash-decoding).
TEST(Int8KvAttention, SplitKvDecodeMatchesReference) {
  check_case({"dense", 64, 700, {650, 1}, 2});
  check_case({"dense", 64, 700, {650, 1}, 3});
  check_case({"rswa:sinks=4,window=300,pos=rel", 64, 700, {600, 1}, 2});
  check_case({"strided:window=64,globals=4,stride=4,block=16", 64, 700, {650, 1}, 3});
}

// Top-k selects pages from summaries of the f32 keys, taken at write time
// whatever the storage. On data int8 holds exactly (multiples of 2^-5 with
// one +-127 step per row) an int8 cache must then read the same pages and
// give the same output as an f32 cache, whose selection test_topk checks
// against a brute-force selection.
TEST(Int8KvAttention, TopkSelectsFromF32SummariesAsWithF32Storage) {
  Shape s;
  const AttentionParams p = params_for(s);
  const int n = 400;
  auto exact_in_int8 = [&](uint32_t seed) {
    auto x = random_vec((size_t)n * s.n_kv * s.hd, seed);
    for (size_t r = 0; r < x.size(); r += s.hd)
      for (int i = 0; i < s.hd; ++i)
        x[r + i] = i == 0 ? 127.f / 32 : std::clamp(std::round(x[r + i] * 30.f), -127.f, 127.f) / 32;
    return x;
  };
  const auto q = random_vec((size_t)n * s.n_head * s.hd, 31);
  const auto k = exact_in_int8(32), v = exact_in_int8(33);
  ASSERT_EQ(int8_round(k, s.hd), k);
  const PolicySpec pol = *parse_policy("topk:sparsity=0.75,sinks=16,window=32");
  ThreadPool threads(2);
  for (const auto& chunks : {std::vector<int>{n}, split_into(n, {300, 1})}) {
    auto c8 = make_typed_cache(s, {pol}, KvStorage::Int8);
    auto c32 = make_typed_cache(s, {pol}, KvStorage::F32);
    const auto got = run_chunks(*c8, s, p, q, k, v, chunks, threads);
    const auto want = run_chunks(*c32, s, p, q, k, v, chunks, threads);
    EXPECT_LT(max_abs_diff(got, want), kTightTol);
    EXPECT_EQ(c8->stats().pages_read, c32->stats().pages_read);
    EXPECT_LT(c8->stats().pages_read, c8->stats().pages_present);  // it did skip pages
  }
}

TEST(Int8KvAttention, PoolHoldsAboutTwiceTheTokensOfF16) {
  Shape s;  // 2 kv heads x 64, page 16
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = s.n_kv;
  cfg.head_dim_k = cfg.head_dim_v = s.hd;
  cfg.page_size = s.page;
  cfg.layer_policies = {PolicySpec{}};
  cfg.budget_bytes = 1 << 20;
  auto f16 = KvManager::create(cfg);
  cfg.storage = KvStorage::Int8;
  auto i8 = KvManager::create(cfg);
  ASSERT_TRUE(f16.ok() && i8.ok());
  // f16: 16 x 2 x 128 x 2 = 8192 bytes a page; int8: 16 x 2 x (128 + 8) = 4352.
  EXPECT_EQ((*f16)->stats().bytes_per_page, 8192);
  EXPECT_EQ((*i8)->stats().bytes_per_page, 4352);
  EXPECT_EQ((*f16)->stats().pages_total, (1 << 20) / 8192);
  EXPECT_EQ((*i8)->stats().pages_total, (1 << 20) / 4352);
}

}  // namespace stride
