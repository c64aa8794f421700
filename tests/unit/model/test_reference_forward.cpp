// The fast model (quantized/FMA kernels, paged KV, fused attention over page
// plans) against the slow reference forward pass, for every policy.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "attention/layer_policies.h"
#include "engine/engine.h"
#include "model/reference_forward.h"

namespace stride {
namespace {

const std::string kRoot = STRIDE_SOURCE_DIR;
const std::string kTiny = kRoot + "/tests/data/generated/tiny/";

std::vector<int32_t> tiny_ids(const std::string& name) {
  std::ifstream f(kTiny + name + "/ids.json");
  EXPECT_TRUE(f.good()) << "missing " << kTiny << name << "/ids.json: run scripts/setup";
  nlohmann::json j;
  f >> j;
  return j.get<std::vector<int32_t>>();
}

struct Case {
  std::string model;
  std::string policy;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.policy; }

class TinyModelVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(TinyModelVsReference, LogitsMatch) {
  const Case& c = GetParam();
  EngineOptions o;
  o.model_path = c.model.find('/') == std::string::npos ? kTiny + c.model + "/model-f32.gguf" : c.model;
  auto policy = parse_policy(c.policy);
  ASSERT_TRUE(policy.ok()) << policy.status().to_string();
  o.attention = *policy;
  o.threads = 2;
  o.max_context = 256;
  o.page_size = 4;  // many pages even for a short sequence
  o.prefill_chunk = 7;
  o.show_progress = false;
  o.kv_storage = KvStorage::F32;  // the reference keeps K/V in f32
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::vector<int32_t> ids = tiny_ids(c.model.substr(0, c.model.find('/')));
  auto fast = (*engine)->score(ids);
  ASSERT_TRUE(fast.ok()) << fast.status().to_string();
  auto ref = reference_forward((*engine)->model(), (*engine)->layer_policies(), ids);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  ASSERT_EQ(fast->size(), ref->size());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < ref->size(); ++i) {
    max_diff = std::max(max_diff, (double)std::fabs((*fast)[i] - (*ref)[i]));
    max_abs = std::max(max_abs, (double)std::fabs((*ref)[i]));
  }
  EXPECT_LT(max_diff, 1e-4 * std::max(1.0, max_abs)) << "max |logit| " << max_abs;
}

INSTANTIATE_TEST_SUITE_P(
    Policies, TinyModelVsReference,
    ::testing::Values(Case{"llama", "dense"}, Case{"llama", "window:size=5"},
                      Case{"llama", "rswa:sinks=2,window=6"}, Case{"llama", "rswa:sinks=2,window=6,pos=abs"},
                      Case{"mistral", "dense"}, Case{"qwen2", "dense"}, Case{"qwen2", "rswa:sinks=3,window=5"},
                      Case{"gemma3", "dense"}, Case{"gemma3", "rswa:sinks=2,window=4"},
                      Case{"qwen3", "dense"}, Case{"qwen3", "rswa:sinks=2,window=6"},
                      // RoPE scaling (96 ids past an original context of 64): the
                      // scaled table and its magnitude on every path, and cache-relative
                      // sinks re-rotated with the scaled frequencies.
                      Case{"llama_yarn", "dense"}, Case{"llama_yarn", "rswa:sinks=2,window=6"},
                      Case{"llama_llama3", "rswa:sinks=2,window=6"}, Case{"llama_linear", "dense"},
                      Case{"llama_longrope", "dense"}, Case{"llama_longrope", "rswa:sinks=2,window=6"},
                      // Soft-caps with every other layer windowed; fused qkv / gate_up
                      // views with LongRoPE on 8 of 16 dims; head_dim apart from
                      // n_embd / n_head.
                      Case{"gemma2", "dense"}, Case{"gemma2", "rswa:sinks=2,window=4"},
                      Case{"phi3", "dense"}, Case{"phi3", "rswa:sinks=2,window=6"},
                      Case{"phi3_window", "dense"}, Case{"mistral_nemo", "window:size=5"}));

// The real SmolLM2 file, with sinks and a window shorter than the sequence.
// The reference quantizes activations to int8 as the fast path does, but a
// last-bit difference upstream flips some int8 roundings downstream, so the
// two differ by up to ~1.2 in logits (llama.cpp differs from an f32 reference
// by ~1.4 on this model). The bar is therefore statistical: mean KL and top-1.
TEST(RealModelVsReference, SmolLM2SinksAndWindow) {
  EngineOptions o;
  o.model_path = kRoot + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  o.attention = *parse_policy("rswa:sinks=4,window=8");
  o.threads = 2;
  o.max_context = 64;
  o.page_size = 4;
  o.show_progress = false;
  o.kv_storage = KvStorage::F32;  // the reference keeps K/V in f32
  auto engine = Engine::create(o);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const std::vector<int32_t> ids = {1, 504, 3458, 282, 4649, 314, 7042, 30, 378, 3458, 282, 2590,
                                    314, 5887, 30, 378, 3458, 282, 4649, 314};
  auto fast = (*engine)->score(ids);
  ASSERT_TRUE(fast.ok());
  auto ref = reference_forward((*engine)->model(), (*engine)->layer_policies(), ids, true);
  ASSERT_TRUE(ref.ok());
  const int V = (*engine)->config().n_vocab;
  int agree = 0;
  double max_diff = 0, kl_sum = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const float* a = fast->data() + t * V;
    const float* b = ref->data() + t * V;
    agree += std::max_element(a, a + V) - a == std::max_element(b, b + V) - b;
    const double ma = *std::max_element(a, a + V), mb = *std::max_element(b, b + V);
    double za = 0, zb = 0;
    for (int i = 0; i < V; ++i) {
      za += std::exp(a[i] - ma);
      zb += std::exp(b[i] - mb);
      max_diff = std::max(max_diff, (double)std::fabs(a[i] - b[i]));
    }
    for (int i = 0; i < V; ++i) {  // KL(reference || fast)
      const double lpb = b[i] - mb - std::log(zb), lpa = a[i] - ma - std::log(za);
      kl_sum += std::exp(lpb) * (lpb - lpa);
    }
  }
  const double kl = kl_sum / ids.size();
  std::printf("SmolLM2 fast vs reference: top-1 %d/%zu, mean KL %.5f, max |logit diff| %.4f\n", agree,
              ids.size(), kl, max_diff);
  EXPECT_GE(agree, (int)ids.size() - 2);
  EXPECT_LT(kl, 0.01);
}

}  // namespace
}  // namespace stride
