// Same request, same bits: the logits of a prompt do not depend on how the
// engine schedules it. Every run below is compared byte for byte with one
// uncached run that computes the whole prompt in a single chunk:
//   - prefill cut into chunks of 1 (decode), 7 and 33 tokens;
//   - batched with another sequence that joins mid-decode;
//   - a whole and a partial prefix hit;
//   - a hit restored from the offload tier (RAM and file) after eviction.
// Shared prefixes sit around the page and window sizes (W-1, W, W+1, 2W+17),
// for every policy kind, on the tiny HF models and on both real models, with
// f16 and int8 KV and two threads.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>

#include "engine/step_runner.h"
#include "engine/engine.h"
#include "engine_test_util.h"

namespace stride {
namespace {

using namespace testing_util;

struct InvarianceCase {
  std::string label;
  std::string model;
  std::string policy;
  int page = 4;
  int window = 8;  // W: shared prefixes W-1, W, W+1, 2W+17 (and page-1, page, page+1)
  KvStorage storage = KvStorage::F16;
  bool real = false;  // real models skip the slow chunk-1 run (tests/python covers it)
};

void PrintTo(const InvarianceCase& c, std::ostream* os) { *os << c.label; }

struct RunSetup {
  int chunk = 4096;
  bool prefix_cache = false;
  int64_t budget = 0;
  int64_t offload_bytes = 0;
  std::string offload_file;
};

std::unique_ptr<Engine> engine_for(const InvarianceCase& c, const RunSetup& s) {
  EngineOptions o = exact_engine_options(c.model, c.policy, c.page, s.chunk);
  o.threads = 2;
  o.max_context = 2048;
  o.kv_storage = c.storage;
  o.prefix_cache = s.prefix_cache;
  o.kv_budget_bytes = s.budget;
  o.kv_offload_bytes = s.offload_bytes;
  o.kv_offload_file = s.offload_file;
  return create_engine(o);
}

// Rows [from, from + got_rows) of ref equal got, byte for byte.
void expect_rows_equal(const std::vector<float>& ref, const float* got, size_t got_rows, size_t from, size_t V,
                       const std::string& what) {
  ASSERT_LE((from + got_rows) * V, ref.size()) << what;
  for (size_t r = 0; r < got_rows; ++r) {
    const float* a = ref.data() + (from + r) * V;
    const float* b = got + r * V;
    if (std::memcmp(a, b, V * sizeof(float)) == 0) continue;
    double worst = 0;
    for (size_t v = 0; v < V; ++v) worst = std::max(worst, (double)std::fabs(a[v] - b[v]));
    ADD_FAILURE() << what << ": row " << from + r << " differs from the one-chunk run by up to " << worst;
    return;
  }
}

class ScheduleInvariance : public ::testing::TestWithParam<InvarianceCase> {
 protected:
  std::vector<int> prefixes() const {
    const InvarianceCase& c = GetParam();
    const int W = c.window;
    std::set<int> p = {W - 1, W, W + 1, 2 * W + 17, c.page - 1, c.page, c.page + 1};
    p.erase(0);
    return {p.begin(), p.end()};
  }
  int suffix() const { return 2 * GetParam().page + 3; }
};

TEST_P(ScheduleInvariance, ChunkedPrefillEqualsOneChunk) {
  const InvarianceCase& c = GetParam();
  auto ref_engine = engine_for(c, {});
  ASSERT_TRUE(ref_engine);
  const size_t V = (size_t)ref_engine->config().n_vocab;
  const std::vector<int32_t> ids = random_ids(*ref_engine, prefixes().back() + suffix(), 1);
  auto ref = ref_engine->score(ids);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  std::vector<int> chunks = {7, 33};
  if (!c.real) chunks.insert(chunks.begin(), 1);
  for (int chunk : chunks) {
    RunSetup s;
    s.chunk = chunk;
    auto e = engine_for(c, s);
    ASSERT_TRUE(e);
    auto got = e->score(ids);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    expect_rows_equal(*ref, got->data(), ids.size(), 0, V, c.label + " chunk " + std::to_string(chunk));
  }
}

TEST_P(ScheduleInvariance, BatchedWithJoinsMidDecodeEqualsSolo) {
  const InvarianceCase& c = GetParam();
  auto e = engine_for(c, {});
  ASSERT_TRUE(e);
  const size_t V = (size_t)e->config().n_vocab;
  for (int p : prefixes()) {
    const std::vector<int32_t> a = random_ids(*e, p + suffix(), 10 + p);
    const std::vector<int32_t> b = random_ids(*e, p + 2 * suffix(), 20 + p);
    auto ref_a = e->score(a);
    auto ref_b = e->score(b);
    ASSERT_TRUE(ref_a.ok() && ref_b.ok());
    KvManager& kv = e->kv();
    const KvManager::SeqId sa = *kv.add_sequence(), sb = *kv.add_sequence();
    std::vector<float> rows_a(a.size() * V), rows_b(b.size() * V);
    // A prefills p tokens alone, then decodes; B joins on A's second decode
    // step and prefills in chunks of 5 beside A's single tokens.
    int done_a = 0, done_b = 0;
    auto step = [&](int n_a, int n_b) {
      std::vector<SequenceStep> steps;
      if (n_a) steps.push_back({sa, a.data() + done_a, n_a, true, rows_a.data() + done_a * V});
      if (n_b) steps.push_back({sb, b.data() + done_b, n_b, true, rows_b.data() + done_b * V});
      const Status st = run_step(e->model(), kv, steps.data(), (int)steps.size(), e->pool());
      ASSERT_TRUE(st.ok()) << st.to_string();
      done_a += n_a;
      done_b += n_b;
    };
    step(p, 0);
    step(1, 0);
    while (done_a < (int)a.size() || done_b < (int)b.size())
      step(done_a < (int)a.size() ? 1 : 0, std::min(5, (int)b.size() - done_b));
    kv.remove_sequence(sa);
    kv.remove_sequence(sb);
    const std::string what = c.label + " p=" + std::to_string(p);
    expect_rows_equal(*ref_a, rows_a.data(), a.size(), 0, V, what + " (A, batched)");
    expect_rows_equal(*ref_b, rows_b.data(), b.size(), 0, V, what + " (B, joined mid-decode)");
    EXPECT_EQ(kv.stats().pages_used, 0);
  }
}

TEST_P(ScheduleInvariance, PrefixHitsEqualAnUncachedRun) {
  const InvarianceCase& c = GetParam();
  auto plain = engine_for(c, {});
  RunSetup with_cache;
  with_cache.prefix_cache = true;
  auto cached = engine_for(c, with_cache);
  ASSERT_TRUE(plain && cached);
  const size_t V = (size_t)plain->config().n_vocab;
  for (int p : prefixes()) {
    const std::vector<int32_t> ids = random_ids(*plain, p + suffix(), 30 + p);
    auto ref = plain->score(ids);
    ASSERT_TRUE(ref.ok());
    const std::string what = c.label + " p=" + std::to_string(p);
    // Partial: an earlier prompt shares the first p tokens only.
    std::vector<int32_t> other = random_ids(*plain, p + suffix(), 40 + p);
    std::copy(ids.begin(), ids.begin() + p, other.begin());
    ASSERT_TRUE(cached->score(other).ok());
    auto partial = cached->score_suffix(ids);
    ASSERT_TRUE(partial.ok()) << partial.status().to_string();
    if (p >= c.page) {
      EXPECT_GT(partial->reused_tokens, 0) << what << ": no partial hit";
    }
    EXPECT_LE(partial->reused_tokens, p) << what;
    expect_rows_equal(*ref, partial->logits.data(), ids.size() - partial->reused_tokens,
                      partial->reused_tokens, V, what + " partial hit");
    // Whole: the same prompt again (its own pages now cached).
    auto whole = cached->score_suffix(ids);
    ASSERT_TRUE(whole.ok()) << whole.status().to_string();
    EXPECT_GE(whole->reused_tokens, partial->reused_tokens) << what;
    expect_rows_equal(*ref, whole->logits.data(), ids.size() - whole->reused_tokens, whole->reused_tokens, V,
                      what + " whole hit");
    EXPECT_EQ(cached->kv().stats().pages_used, 0);
  }
}

void check_tier_round_trip(const InvarianceCase& c, bool file) {
  auto plain = engine_for(c, {});
  ASSERT_TRUE(plain);
  const size_t V = (size_t)plain->config().n_vocab;
  const int n_layer = plain->config().n_layer;
  const int W = c.window;
  const int p = 2 * W + 17;
  const int n = p + 2 * c.page + 3;
  // A pool that holds one prompt and a half: the filler evicts the first.
  const int pages_per_layer = (n + c.page - 1) / c.page * 3 / 2;
  const int64_t budget = plain->kv().stats().bytes_per_page * pages_per_layer * n_layer;
  std::string path;
  if (file) path = (std::filesystem::temp_directory_path() / ("stride-tier-" + std::to_string(getpid()))).string();
  RunSetup tiered;
  tiered.prefix_cache = true;
  tiered.budget = budget;
  tiered.offload_bytes = 64ll << 20;
  tiered.offload_file = path;
  auto cached = engine_for(c, tiered);
  ASSERT_TRUE(cached);
  const std::vector<int32_t> ids = random_ids(*plain, n, 50);
  auto ref = plain->score(ids);
  ASSERT_TRUE(ref.ok());
  ASSERT_TRUE(cached->score(ids).ok());
  ASSERT_TRUE(cached->score(random_ids(*plain, pages_per_layer * c.page, 51)).ok());
  const int64_t offloaded = cached->kv().stats().pages_offloaded;
  auto hit = cached->score_suffix(ids);
  ASSERT_TRUE(hit.ok()) << hit.status().to_string();
  const KvStats st = cached->kv().stats();
  const std::string what = c.label + (file ? " file tier" : " RAM tier");
  EXPECT_GT(offloaded, 0) << what << ": nothing was evicted to the tier";
  EXPECT_GT(st.pages_restored, 0) << what << ": the hit restored nothing";
  EXPECT_GT(hit->reused_tokens, 0) << what;
  expect_rows_equal(*ref, hit->logits.data(), ids.size() - hit->reused_tokens, hit->reused_tokens, V, what);
  cached.reset();
  if (file) {
    EXPECT_FALSE(std::filesystem::exists(path)) << "the tier file outlived the engine";
  }
}

TEST_P(ScheduleInvariance, RamTierRoundTripEqualsAnUncachedRun) { check_tier_round_trip(GetParam(), false); }
TEST_P(ScheduleInvariance, FileTierRoundTripEqualsAnUncachedRun) { check_tier_round_trip(GetParam(), true); }

std::vector<InvarianceCase> cases() {
  std::vector<InvarianceCase> out;
  const std::vector<std::pair<std::string, std::string>> tiny_policies = {
      {"dense", "dense"},
      {"window", "window:size=8"},
      {"rswa_abs", "rswa:sinks=2,window=8,pos=abs"},
      {"rswa_rel", "rswa:sinks=2,window=8,pos=rel"},
      {"strided", "strided:window=8,stride=3,globals=2,block=4"},
      {"topk", "topk:sparsity=0.5,block=4,sinks=4,window=8"},
  };
  for (const auto& [label, policy] : tiny_policies) {
    out.push_back({"llama_" + label, tiny("llama"), policy});
    out.push_back({"llama_" + label + "_int8", tiny("llama"), policy, 4, 8, KvStorage::Int8});
  }
  // Native sliding windows (mistral: 8 tokens; gemma3's own pattern).
  out.push_back({"mistral_native", tiny("mistral"), "dense"});
  out.push_back({"gemma3_native", tiny("gemma3"), "dense"});
  out.push_back({"gemma3_native_int8", tiny("gemma3"), "dense", 4, 8, KvStorage::Int8});
  out.push_back({"qwen2_dense", tiny("qwen2"), "dense"});
  out.push_back({"qwen2_topk", tiny("qwen2"), "topk:sparsity=0.5,block=4,sinks=4,window=8"});
  out.push_back({"smol_dense", kSmolPath, "dense", 32, 32, KvStorage::F16, true});
  out.push_back({"smol_int8", kSmolPath, "dense", 32, 32, KvStorage::Int8, true});
  out.push_back({"smol_rswa", kSmolPath, "rswa:sinks=4,window=64", 32, 64, KvStorage::F16, true});
  out.push_back({"smol_topk", kSmolPath, "topk:sparsity=0.5", 32, 64, KvStorage::F16, true});
  out.push_back({"gemma_native", kGemmaPath, "dense", 32, 512, KvStorage::F16, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Matrix, ScheduleInvariance, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.label; });

}  // namespace
}  // namespace stride
