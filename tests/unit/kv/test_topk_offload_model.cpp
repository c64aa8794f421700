// The top-k hot set on a real model (SmolLM2-135M, 30 top-k layers): with
// resident=N and an offload tier (RAM or a mapped file), prefill in chunks
// and then token-by-token decode give logits equal, bit for bit, to the same
// top-k policy with every page in the pool, while the pool holds far fewer
// pages. Pages travel as exact images, so the tolerance is zero.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "engine/step_runner.h"
#include "../engine/engine_test_util.h"
#include "engine/engine.h"

namespace stride {
namespace {

using namespace testing_util;

constexpr int kPage = 32;
constexpr int kChunk = 64;
constexpr int kPrompt = 640;  // 20 pages
constexpr int kDecode = 40;

std::unique_ptr<Engine> make_engine(const std::string& policy, int64_t offload_bytes, const std::string& file) {
  EngineOptions o = exact_engine_options(kSmolPath, policy, kPage, kChunk);
  o.kv_offload_bytes = offload_bytes;
  o.kv_offload_file = file;
  return create_engine(o);
}

std::vector<int32_t> archive_ids(const Engine& e, int n) {
  return text_ids(e, n, [](int i) {
    return "Entry " + std::to_string(i) + ": the archivist filed " + std::to_string(17 * i + 3) +
           " letters about the river, the mill and the winter of the long frost. ";
  });
}

struct Trace {
  std::vector<float> logits;  // [kPrompt + kDecode, n_vocab]: prefill rows, then one per decode step
  KvStats stats;         // before the sequence is removed
  int64_t max_layer_pages = 0;  // pages one layer held after the last decode step
};

Trace run(Engine& e, const std::vector<int32_t>& ids) {
  const size_t V = (size_t)e.config().n_vocab;
  Trace t;
  t.logits.assign((size_t)(kPrompt + kDecode) * V, 0.f);
  auto seq = e.kv().add_sequence();
  EXPECT_TRUE(seq.ok());
  for (int pos = 0; pos < kPrompt; pos += kChunk) {
    const Status st = run_sequence(e.model(), e.kv(), *seq, ids.data() + pos, kChunk, true, t.logits.data() + pos * V, e.pool());
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  for (int pos = kPrompt; pos < kPrompt + kDecode; ++pos) {
    const Status st = run_sequence(e.model(), e.kv(), *seq, ids.data() + pos, 1, false, t.logits.data() + pos * V, e.pool());
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  t.stats = e.kv().stats();
  for (int l = 0; l < e.config().n_layer; ++l)
    t.max_layer_pages = std::max(t.max_layer_pages, e.kv().sequences().pages_held(*seq, l));
  e.kv().remove_sequence(*seq);
  return t;
}

TEST(TopkHotSetModel, LogitsEqualTheUnlimitedPolicyBitForBit) {
  Trace want;
  std::vector<int32_t> ids;
  {
    auto plain = make_engine("topk:sparsity=0.75", 0, "");
    ASSERT_TRUE(plain);
    ids = archive_ids(*plain, kPrompt + kDecode);
    want = run(*plain, ids);
    EXPECT_EQ(want.max_layer_pages, (kPrompt + kDecode + kPage - 1) / kPage);
  }
  const std::string file =
      (std::filesystem::temp_directory_path() / ("stride_topk_model." + std::to_string(getpid()))).string();
  for (const std::string& tier_file : {std::string(), file}) {
    SCOPED_TRACE(tier_file.empty() ? "RAM tier" : "file tier");
    auto hot = make_engine("topk:sparsity=0.75,resident=8", 64ll << 20, tier_file);
    ASSERT_TRUE(hot);
    const Trace got = run(*hot, ids);
    EXPECT_EQ(std::memcmp(got.logits.data(), want.logits.data(), want.logits.size() * sizeof(float)), 0)
        << "logits differ from the unlimited top-k policy";
    // 22 pages per layer without a limit; with resident=8 a decode step holds
    // max(8, 1 sink + 2 window + 3 kv heads x 3 picks) <= 12.
    EXPECT_LE(got.max_layer_pages, 12);
    EXPECT_LE(got.stats.pages_used, 12 * hot->config().n_layer);
    EXPECT_EQ(want.stats.pages_used, 22 * hot->config().n_layer);
    EXPECT_GT(got.stats.topk_pages_offloaded, 0);
    EXPECT_GT(got.stats.topk_pages_restored, 0);
    EXPECT_GT(got.stats.topk_pages_prefetched, 0);
    EXPECT_EQ(got.stats.topk_offload_refused, 0);
    EXPECT_EQ(got.stats.topk_restore_failed, 0);
    EXPECT_EQ(hot->kv().stats().pages_used, 0);
    EXPECT_EQ(hot->kv().stats().tier_slots_owned, 0);
  }
  EXPECT_FALSE(std::filesystem::exists(file));
}

}  // namespace
}  // namespace stride
