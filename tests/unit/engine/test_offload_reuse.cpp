// The offload tier on a real model: a prompt's prefix pages are evicted from
// a small KV pool into the tier by another prompt, then restored by a later
// prompt sharing the prefix. Pages travel as their exact bytes, so the
// suffix logits equal, bit for bit, those of an uncached run that computes
// the same prefix and suffix in the same chunks (f16, and int8 storage
// against an int8 run: tolerance zero in both).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace stride {
namespace {

using namespace testing_util;

constexpr int kPage = 32;
constexpr int kChunk = 64;
constexpr int kPoolPagesPerLayer = 8;

// budget 0: sized for max_context (no evictions).
std::unique_ptr<Engine> make_engine(KvStorage storage, bool prefix_cache, int64_t budget, int64_t offload_bytes) {
  EngineOptions o = exact_engine_options(kSmolPath, "dense", kPage, kChunk);
  o.kv_storage = storage;
  o.kv_budget_bytes = budget;
  o.prefix_cache = prefix_cache;
  o.kv_offload_bytes = offload_bytes;
  return create_engine(o);
}

std::vector<int32_t> topic_ids(const Engine& e, int n, const std::string& topic) {
  return text_ids(e, n, [&](int i) {
    return "Note " + std::to_string(i) + " on " + topic + ": the keeper of the lighthouse wrote down " +
           std::to_string(31 * i + 7) + " ships and the colour of the evening sea. ";
  });
}

void check_restore(KvStorage storage) {
  constexpr int hit = 128;       // 4 pages, a multiple of kChunk
  constexpr int n = hit + 32;    // the second prompt
  auto plain = make_engine(storage, false, 0, 0);
  ASSERT_TRUE(plain);
  const int n_layer = plain->config().n_layer;
  // A pool of kPoolPagesPerLayer pages per layer, and a tier of 64 MiB.
  const int64_t budget = plain->kv().stats().bytes_per_page * kPoolPagesPerLayer * n_layer;
  auto cached = make_engine(storage, true, budget, 64ll << 20);
  ASSERT_TRUE(cached);
  ASSERT_EQ(cached->kv().stats().pages_total, kPoolPagesPerLayer * n_layer);
  const std::vector<int32_t> ids = topic_ids(*cached, n, "harbours");
  const std::vector<int32_t> other = topic_ids(*cached, kPoolPagesPerLayer * kPage, "mountains");
  for (const std::vector<int32_t>* prompt : {&ids, &other}) {
    // The first prompt caches 4 pages per layer; the other fills the whole
    // pool, evicting them to the tier.
    auto a = cached->kv().add_sequence();
    ASSERT_TRUE(a.ok());
    run_tokens(*cached, *a, *prompt, 0, prompt == &ids ? hit + 12 : (int)other.size(), false);
    cached->kv().remove_sequence(*a);
  }
  KvStats st = cached->kv().stats();
  EXPECT_EQ(st.pages_offloaded, 4 * n_layer);
  EXPECT_EQ(st.pages_cached, kPoolPagesPerLayer * n_layer) << "only the other prompt's pages";

  auto suffix = cached->score_suffix(ids);
  ASSERT_TRUE(suffix.ok()) << suffix.status().to_string();
  ASSERT_EQ(suffix->reused_tokens, hit);
  st = cached->kv().stats();
  EXPECT_EQ(st.pages_restored, 4 * n_layer);
  EXPECT_EQ(st.pages_used, 0);

  auto r = plain->kv().add_sequence();
  ASSERT_TRUE(r.ok());
  run_tokens(*plain, *r, ids, 0, hit, false);
  const std::vector<float> ref = run_tokens(*plain, *r, ids, hit, n, true);
  plain->kv().remove_sequence(*r);
  ASSERT_EQ(ref.size(), suffix->logits.size());
  size_t first_diff = ref.size();
  for (size_t i = 0; i < ref.size() && first_diff == ref.size(); ++i)
    if (std::memcmp(&ref[i], &suffix->logits[i], sizeof(float)) != 0) first_diff = i;
  EXPECT_EQ(first_diff, ref.size()) << "logits differ at " << first_diff;
  std::printf("[ offload ] %s: %lld pages offloaded, %lld restored, %d of %d tokens reused\n",
              kv_storage_name(storage), (long long)st.pages_offloaded, (long long)st.pages_restored, hit, n);
}

TEST(OffloadReuse, SmolLM2F16RestoreIsExact) { check_restore(KvStorage::F16); }
TEST(OffloadReuse, SmolLM2Int8RestoreIsExact) { check_restore(KvStorage::Int8); }

}  // namespace
}  // namespace stride
