// Prefix reuse on the real models: the logits of a suffix computed on cached
// prefix pages equal, bit for bit, those of an uncached run that computes the
// same prefix and then the same suffix in the same chunks (fresh cache); and
// they match a one-shot uncached prefill of the whole prompt closely. Covers
// dense layers, R-SWA layers that released pages (SmolLM2) and Gemma-3's
// native sliding-window layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace stride {
namespace {

using namespace testing_util;

constexpr int kPage = 32;
constexpr int kChunk = 64;

// One thread (exact_engine_options): with more, attention splits long page
// lists across threads in short chunks only, which changes the summation
// order against the one-shot prefill (Gemma-3 amplifies that to ~2 logits at
// 600+ tokens).
std::unique_ptr<Engine> make_engine(const std::string& path, const std::string& policy, bool prefix_cache) {
  EngineOptions o = exact_engine_options(path, policy, kPage, kChunk);
  o.prefix_cache = prefix_cache;
  return create_engine(o);
}

// At least n tokens of ordinary text.
std::vector<int32_t> ledger_ids(const Engine& e, int n) {
  return text_ids(e, n, [](int i) {
    return "Entry " + std::to_string(i) + ": the river town kept its ledgers in a stone house by the "
           "bridge, and every autumn the clerks counted " + std::to_string(17 * i + 3) +
           " barrels of apples before the first frost. ";
  });
}

int argmax(const float* x, size_t n) { return (int)(std::max_element(x, x + n) - x); }

// hit: tokens reused (a multiple of kChunk, so every run splits chunks alike).
// windowed: some layer must have released pages by then.
void check_reuse(const std::string& path, const std::string& policy, int hit, bool windowed,
                 float tolerance) {
  const int first_len = hit + 12;  // the first prompt ends inside a page
  const int n = hit + 32;          // the second prompt extends it
  auto cached = make_engine(path, policy, true);
  auto plain = make_engine(path, policy, false);
  ASSERT_TRUE(cached && plain);
  const std::vector<int32_t> ids = ledger_ids(*cached, n);
  const size_t V = (size_t)cached->config().n_vocab;

  // First prompt: computed in chunks of kChunk, its full pages cached.
  {
    auto a = cached->kv().add_sequence();
    ASSERT_TRUE(a.ok());
    run_tokens(*cached, *a, ids, 0, first_len, false);
    cached->kv().remove_sequence(*a);
  }
  // Second prompt: reuses every full page of the first.
  auto suffix = cached->score_suffix(ids);
  ASSERT_TRUE(suffix.ok()) << suffix.status().to_string();
  ASSERT_EQ(suffix->reused_tokens, hit);
  ASSERT_EQ(suffix->logits.size(), (size_t)(n - hit) * V);
  EXPECT_EQ(cached->kv().stats().prefix_hit_tokens, hit);
  EXPECT_EQ(cached->kv().stats().pages_used, 0);

  // Uncached, fresh cache: the prefix in the same chunks, then the same suffix.
  auto r = plain->kv().add_sequence();
  ASSERT_TRUE(r.ok());
  run_tokens(*plain, *r, ids, 0, hit, false);
  int64_t fewest_pages = hit / kPage;
  for (int l = 0; l < plain->config().n_layer; ++l)
    fewest_pages = std::min(fewest_pages, plain->kv().sequences().pages_held(*r, l));
  if (windowed) {
    EXPECT_LT(fewest_pages, hit / kPage) << "no layer released a page";
  }
  const std::vector<float> ref = run_tokens(*plain, *r, ids, hit, n, true);
  plain->kv().remove_sequence(*r);
  EXPECT_EQ(plain->kv().stats().pages_cached, 0);
  size_t first_diff = ref.size();
  for (size_t i = 0; i < ref.size() && first_diff == ref.size(); ++i)
    if (std::memcmp(&ref[i], &suffix->logits[i], sizeof(float)) != 0) first_diff = i;
  EXPECT_EQ(first_diff, ref.size()) << policy << ": logits differ at row " << first_diff / V << " token "
                                    << first_diff % V;

  // Uncached one-shot prefill of the whole prompt: the last row, closely.
  plain->model().set_max_chunk(1024);
  auto o = plain->kv().add_sequence();
  ASSERT_TRUE(o.ok());
  const std::vector<float> one_shot = run_tokens(*plain, *o, ids, 0, n, false);
  plain->kv().remove_sequence(*o);
  const float* last = suffix->logits.data() + (size_t)(n - hit - 1) * V;
  double max_diff = 0;
  for (size_t v = 0; v < V; ++v) max_diff = std::max(max_diff, (double)std::fabs(last[v] - one_shot[v]));
  EXPECT_LT(max_diff, tolerance) << policy;
  EXPECT_EQ(argmax(last, V), argmax(one_shot.data(), V)) << policy;
  std::printf("[ prefix ] %s %s: reused %d of %d tokens, one-shot max |dlogit| %.3g\n",
              path.substr(path.rfind('/') + 1).c_str(), policy.c_str(), hit, n, max_diff);
}

TEST(PrefixReuse, SmolLM2DenseIsExact) { check_reuse(kSmolPath, "dense", 320, false, 0.05f); }

// Window 64 = 2 pages: by 320 tokens the R-SWA layers released most pages.
TEST(PrefixReuse, SmolLM2RswaIsExact) { check_reuse(kSmolPath, "rswa:sinks=4,window=64", 320, true, 0.05f); }

// Native 512-token windows: by 640 tokens they released their first pages.
TEST(PrefixReuse, Gemma3SlidingWindowIsExact) { check_reuse(kGemmaPath, "dense", 640, true, 0.05f); }

}  // namespace
}  // namespace stride
