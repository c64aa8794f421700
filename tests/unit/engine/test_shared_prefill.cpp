// A dense prefill handed to top-k engines whose prompt chunks read every
// page (prefill=dense; shared_prefill.h): the sequence the taker imports
// must be byte for byte the one its own prefill writes (K, V, int8 scales,
// positions and every key summary, the partly written last page included),
// the logits it decodes from must be its own prefill's, and so must the
// tokens it then generates. The expected values come from the taker's own
// prefill of the same prompt, computed independently of the shared path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "engine/shared_prefill.h"
#include "kv/scoped_sequence.h"
#include "kv/store/kv_pool.h"

namespace stride {
namespace {

using namespace testing_util;

const std::string kQwenPath = std::string(STRIDE_SOURCE_DIR) + "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
constexpr int kPage = 32, kChunk = 256;

const char* const kTakers[] = {"topk:sparsity=0.9,prefill=dense", "topk:sparsity=0.9,prefill=dense,estimate=oracle",
                               "topk:sparsity=0.9,prefill=dense,estimate=rerank"};

// As `stride eval --order prompt` makes its engines: one thread, no prefix
// cache, key summaries on every layer.
std::unique_ptr<Engine> sweep_engine(const std::string& model, const std::string& policy, KvStorage storage) {
  EngineOptions o = exact_engine_options(model, policy, kPage, kChunk);
  o.max_context = 2048;
  o.prefix_cache = false;
  o.kv_storage = storage;
  o.kv_page_summaries = true;
  return create_engine(o);
}

std::vector<int32_t> prompt_of(const Engine& e, int n) {
  return text_ids(e, n, [](int i) {
    return "Record " + std::to_string(i) + ": the keeper of the lighthouse logged " + std::to_string(31 * i + 7) +
           " ships passing the northern reef before the storm of the year " + std::to_string(1800 + i) + ". ";
  });
}

// What a page image holds for the first `written` slots: per part (K, V,
// int8 scales, positions) the slots' bytes, then the whole key summary
// (made from those slots only). Slots past `written` were never written.
std::vector<uint8_t> written_bytes(const KvSequenceImage& img, size_t r, const KvPoolShape& s, int written) {
  const uint8_t* p = img.images.data() + r * (size_t)img.image_bytes;
  std::vector<uint8_t> out;
  auto take = [&](int64_t row_bytes, int rows_per_head, int heads) {
    for (int h = 0; h < heads; ++h) {
      const uint8_t* head = p + (int64_t)h * rows_per_head * row_bytes;
      out.insert(out.end(), head, head + (int64_t)written * row_bytes);
    }
    p += (int64_t)heads * rows_per_head * row_bytes;
  };
  take(s.head_dim_k * s.bytes_per_element(), s.page_size, s.n_kv_heads);
  take(s.head_dim_v * s.bytes_per_element(), s.page_size, s.n_kv_heads);
  if (s.storage == KvStorage::Int8) {
    take(4, s.page_size, s.n_kv_heads);
    take(4, s.page_size, s.n_kv_heads);
  }
  take(4, s.page_size, 1);  // positions
  out.insert(out.end(), p, p + img.summary_bytes);
  return out;
}

void expect_same_sequence(const KvSequenceImage& got, const KvSequenceImage& want, const KvPoolShape& shape) {
  ASSERT_EQ(got.length, want.length);
  ASSERT_EQ(got.summary_bytes, want.summary_bytes);
  ASSERT_GT(want.summary_bytes, 0);
  ASSERT_EQ(got.pages, want.pages);
  for (size_t r = 0; r < want.pages.size(); ++r) {
    const int written = (int)std::min<int64_t>(kPage, want.length - (int64_t)want.pages[r].page * kPage);
    const std::vector<uint8_t> a = written_bytes(got, r, shape, written), b = written_bytes(want, r, shape, written);
    ASSERT_EQ(a.size(), b.size());
    const auto diff = std::mismatch(a.begin(), a.end(), b.begin());
    EXPECT_TRUE(diff.first == a.end()) << "layer " << want.pages[r].layer << " page " << want.pages[r].page
                                       << ": first different byte at " << (diff.first - a.begin()) << " of "
                                       << a.size();
  }
}

struct OwnPrefill {
  KvSequenceImage kv;
  std::vector<float> logits;
};

// The taker's own prefill of `prompt`, taken straight from its KV manager.
OwnPrefill own_prefill(Engine& e, const std::vector<int32_t>& prompt) {
  OwnPrefill own;
  auto id = e.kv().add_sequence();
  EXPECT_TRUE(id.ok());
  ScopedSequence seq(e.kv(), *id);
  own.logits = run_tokens(e, seq.id(), prompt, 0, (int)prompt.size(), false);
  auto img = e.kv().sessions().export_sequence(seq.id());
  EXPECT_TRUE(img.ok()) << img.status().to_string();
  if (img.ok()) own.kv = std::move(*img);
  return own;
}

std::vector<int32_t> greedy(Engine& e, const std::vector<int32_t>& prompt, const PrefilledPrompt* shared) {
  GenerateOptions g;
  g.max_tokens = 12;
  g.ignore_eos = true;
  g.sampling.temperature = 0.f;
  auto r = shared ? e.generate_prefilled(*shared, g, {}) : e.generate(prompt, g, {});
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->generated_ids : std::vector<int32_t>{};
}

void check_model(const std::string& model, KvStorage storage, int prompt_tokens, std::vector<std::string> takers) {
  auto dense = sweep_engine(model, "dense", storage);
  ASSERT_TRUE(dense);
  const std::vector<int32_t> prompt = prompt_of(*dense, prompt_tokens);
  ASSERT_NE(prompt.size() % kPage, 0u) << "the last page must be partly written";
  PrefilledPrompt shared;
  GenerateOptions one;
  one.max_tokens = 1;
  ASSERT_TRUE(dense->generate_sharing(prompt, one, {}, shared).ok());
  ASSERT_FALSE(shared.empty());
  for (const std::string& policy : takers) {
    SCOPED_TRACE(policy);
    auto taker = sweep_engine(model, policy, storage);
    ASSERT_TRUE(taker);
    ASSERT_TRUE(taker->takes_prefill(shared));
    ASSERT_TRUE(taker->takes_prefill_of(*dense, prompt.size()));
    const OwnPrefill own = own_prefill(*taker, prompt);
    ASSERT_EQ(own.logits.size(), shared.logits.size());
    EXPECT_EQ(std::memcmp(own.logits.data(), shared.logits.data(), own.logits.size() * sizeof(float)), 0);
    // The imported sequence, read back out of the taker's own pool.
    auto id = taker->kv().sessions().import_sequence(shared.kv);
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    ScopedSequence seq(taker->kv(), *id);
    auto imported = taker->kv().sessions().export_sequence(seq.id());
    ASSERT_TRUE(imported.ok());
    expect_same_sequence(*imported, own.kv, taker->kv().pool().shape());
    EXPECT_EQ(greedy(*taker, prompt, &shared), greedy(*taker, prompt, nullptr));
  }
}

TEST(SharedPrefill, SmolTopkTakersGetTheirOwnPrefillBytesF16) {
  check_model(kSmolPath, KvStorage::F16, 700, {std::begin(kTakers), std::end(kTakers)});
}

TEST(SharedPrefill, SmolTopkTakerGetsItsOwnPrefillBytesInt8) {
  check_model(kSmolPath, KvStorage::Int8, 600, {kTakers[0], kTakers[2]});
}

TEST(SharedPrefill, QwenTopkTakersGetTheirOwnPrefillBytesF16) {
  check_model(kQwenPath, KvStorage::F16, 1100, {std::begin(kTakers), std::end(kTakers)});
}

// Where the taker's own prefill would differ, nothing is shared.
TEST(SharedPrefill, RefusedWhereTheTakersPrefillDiffers) {
  auto dense = sweep_engine(kSmolPath, "dense", KvStorage::F16);
  auto topk = sweep_engine(kSmolPath, kTakers[0], KvStorage::F16);
  auto sparse_prefill = sweep_engine(kSmolPath, "sparse_prefill", KvStorage::F16);
  auto int8 = sweep_engine(kSmolPath, kTakers[0], KvStorage::Int8);
  ASSERT_TRUE(dense && topk && sparse_prefill && int8);
  // A last chunk of one token is a decode step, where top-k selects.
  const size_t one_token_tail = 2 * kChunk + 1;
  EXPECT_TRUE(dense->prefill_shareable(one_token_tail));
  EXPECT_FALSE(topk->prefill_shareable(one_token_tail));
  EXPECT_FALSE(topk->takes_prefill_of(*dense, one_token_tail));
  EXPECT_TRUE(topk->takes_prefill_of(*dense, one_token_tail + 1));
  EXPECT_FALSE(sparse_prefill->takes_prefill_of(*dense, 600));  // selects on prompt chunks
  EXPECT_FALSE(int8->takes_prefill_of(*dense, 600));            // other KV storage
  PrefilledPrompt shared;
  GenerateOptions one;
  one.max_tokens = 1;
  const std::vector<int32_t> prompt = prompt_of(*dense, (int)one_token_tail);
  ASSERT_TRUE(dense->generate_sharing(prompt, one, {}, shared).ok());
  EXPECT_FALSE(topk->takes_prefill(shared));
  EXPECT_FALSE(topk->generate_prefilled(shared, one, {}).ok());
  // A producer without key summaries cannot serve a top-k taker.
  EngineOptions plain = exact_engine_options(kSmolPath, "dense", kPage, kChunk);
  plain.max_context = 2048;
  plain.prefix_cache = false;
  auto no_summaries = create_engine(plain);
  ASSERT_TRUE(no_summaries);
  EXPECT_FALSE(topk->takes_prefill_of(*no_summaries, 600));
}

}  // namespace
}  // namespace stride
