// Speculative decoding on a real model: greedy output is token for token the
// output of plain decoding, for every attention policy kind and a per-layer
// mix, with prompt lookup and with a draft model; drafts are proposed,
// accepted and rejected along the way (so the rollback runs). A draft model
// of another vocabulary is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace stride {
namespace {

using namespace testing_util;

struct SpecCase {
  std::string label;
  std::string policy;
  std::vector<std::string> layers;
  SpeculativeMode mode = SpeculativeMode::PromptLookup;
};

void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.label; }

// A document, then a request to quote it: prompt lookup finds the quote.
std::string quoting_prompt() {
  std::string doc;
  const char* sentences[] = {
      "The lighthouse keeper wrote down the weather every morning at six. ",
      "On the third of March the wind turned north and the sea grew rough. ",
      "The supply boat was late by two days, so the keeper rationed the oil. ",
      "When the boat finally came, it brought letters, flour and a new lamp. ",
      "The new lamp burned brighter and could be seen from twenty miles away. ",
  };
  for (int rep = 0; rep < 2; ++rep)
    for (const char* s : sentences) doc += s;
  return "Document:\n" + doc + "\n\nCopy the document above word for word.\n\nCopy:\nThe lighthouse keeper";
}

std::unique_ptr<Engine> engine_for(const SpecCase& c, const std::string& draft) {
  EngineOptions o = exact_engine_options(kSmolPath, c.policy, 16, 64);
  o.threads = 2;
  o.layer_policies = c.layers;
  o.prefix_cache = false;
  o.draft_model_path = draft;
  return create_engine(o);
}

class SpeculativeGreedy : public ::testing::TestWithParam<SpecCase> {};

TEST_P(SpeculativeGreedy, OutputEqualsPlainDecoding) {
  const SpecCase& c = GetParam();
  auto e = engine_for(c, c.mode == SpeculativeMode::Draft ? kSmolPath : "");
  ASSERT_TRUE(e);
  // A quote (long accepted runs) and free text (mostly rejected drafts).
  int64_t drafted = 0, accepted = 0, verify_steps = 0;
  for (const std::string& text :
       {quoting_prompt(), std::string("Once upon a time, in a small village by the sea, there lived an old")}) {
    const std::vector<int32_t> prompt = e->tokenizer()->encode(text, e->tokenizer()->add_bos_default());
    GenerateOptions g;
    g.max_tokens = 64;
    g.sampling.temperature = 0.0f;
    auto plain = e->generate(prompt, g, nullptr);
    ASSERT_TRUE(plain.ok()) << plain.status().to_string();
    g.speculative.mode = c.mode;
    g.speculative.draft_max = 6;
    auto spec = e->generate(prompt, g, nullptr);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    EXPECT_EQ(spec->generated_ids, plain->generated_ids);
    EXPECT_EQ(spec->text, plain->text);
    drafted += spec->drafted_tokens;
    accepted += spec->accepted_tokens;
    verify_steps += spec->verify_steps;
  }
  EXPECT_GT(verify_steps, 0);
  EXPECT_GT(accepted, 0);
  if (c.mode == SpeculativeMode::PromptLookup) {
    EXPECT_LT(accepted, drafted);  // some drafts were rolled back
  }
}

std::vector<SpecCase> cases() {
  return {
      {"dense", "dense", {}},
      {"window", "window:size=48", {}},
      {"rswa", "rswa:sinks=4,window=48", {}},
      {"rswa_abs", "rswa:sinks=4,window=48,pos=abs", {}},
      {"strided", "strided:window=48,stride=4,block=16", {}},
      {"topk", "topk:sparsity=0.5", {}},
      {"topk_window", "topk:sparsity=0.7,sinks=16,window=32", {}},
      {"mixed", "dense", {"0-9=rswa:sinks=4,window=48", "10-19=topk:sparsity=0.5", "20-29=window:size=32"}},
      {"draft_dense", "dense", {}, SpeculativeMode::Draft},
      {"draft_rswa", "rswa:sinks=4,window=48", {}, SpeculativeMode::Draft},
      {"draft_topk", "topk:sparsity=0.5", {}, SpeculativeMode::Draft},
  };
}

INSTANTIATE_TEST_SUITE_P(Policies, SpeculativeGreedy, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.label; });

// softmax(logits / t) over the top_k largest logits (ties: lower id): the
// distribution plain sampling draws from, written out here as the oracle.
std::map<int32_t, double> top_k_softmax(const float* logits, int n, float t, int top_k) {
  std::vector<int32_t> order((size_t)n);
  for (int i = 0; i < n; ++i) order[(size_t)i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::map<int32_t, double> p;
  double sum = 0.0;
  for (int r = 0; r < top_k; ++r) sum += p[order[(size_t)r]] = std::exp((double)logits[order[(size_t)r]] / t);
  for (auto& [id, x] : p) x /= sum;
  return p;
}

// Sampled speculative generation on SmolLM2: the second token (the first
// that comes out of a verification step, prompt lookup drafting) follows
// the plain distribution given the first token, computed here from the
// logits of scoring the prompt and that token. Chi-square per first token,
// 0.999 bound (accepting a draft with probability sqrt(p) instead of p
// fails it by far).
TEST(SpeculativeSampling, SecondTokenFollowsThePlainDistribution) {
  EngineOptions o = exact_engine_options(kSmolPath, "dense", 16, 64);
  o.threads = 2;
  auto e = create_engine(o);
  ASSERT_TRUE(e);
  const int n_vocab = e->config().n_vocab;
  // After " the", lookup drafts what followed the latest "on the"; the model
  // is unsure between the places seen before, so drafts are often rejected.
  const std::string text =
      "the cat sat on the mat. the dog sat on the rug. the cat sat on the sofa. the dog sat on the bed. the cat sat on";
  const std::vector<int32_t> prompt = e->tokenizer()->encode(text, e->tokenizer()->add_bos_default());
  GenerateOptions g;
  g.max_tokens = 4;
  g.ignore_eos = true;
  g.sampling.temperature = 1.0f;
  g.sampling.top_k = 6;
  g.sampling.top_p = 1.0f;
  g.sampling.min_p = 0.0f;
  g.speculative.mode = SpeculativeMode::PromptLookup;
  g.speculative.draft_max = 3;
  std::map<int32_t, std::map<int32_t, int>> counts;  // first token -> second token -> draws
  int64_t drafted = 0, accepted = 0;
  const int n = 400;
  for (int seed = 0; seed < n; ++seed) {
    g.sampling.seed = 1000 + (uint64_t)seed;
    auto r = e->generate(prompt, g, nullptr);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_GE(r->generated_ids.size(), 2u);
    ++counts[r->generated_ids[0]][r->generated_ids[1]];
    drafted += r->drafted_tokens;
    accepted += r->accepted_tokens;
  }
  EXPECT_GT(accepted, n / 10);
  EXPECT_LT(accepted, drafted);
  int checked = 0;
  for (const auto& [first, seconds] : counts) {
    int total = 0;
    for (const auto& [id, c] : seconds) total += c;
    if (total < 60) continue;  // too few draws for the chi-square approximation
    std::vector<int32_t> ids = prompt;
    ids.push_back(first);
    auto scores = e->score(ids);
    ASSERT_TRUE(scores.ok());
    const auto p = top_k_softmax(scores->data() + (ids.size() - 1) * (size_t)n_vocab, n_vocab, 1.0f, 6);
    // Cells expecting fewer than 5 draws are pooled.
    double x2 = 0.0, rest_expect = 0.0, rest_got = 0.0;
    int dof = -1;
    for (const auto& [id, prob] : p) {
      const double expect = total * prob;
      const auto it = seconds.find(id);
      const double got = it == seconds.end() ? 0.0 : it->second;
      if (expect < 5.0) {
        rest_expect += expect;
        rest_got += got;
        continue;
      }
      x2 += (got - expect) * (got - expect) / expect;
      ++dof;
    }
    if (rest_expect > 0.0) {
      x2 += (rest_got - rest_expect) * (rest_got - rest_expect) / rest_expect;
      ++dof;
    }
    if (dof < 1) continue;
    for (const auto& [id, c] : seconds) EXPECT_TRUE(p.count(id)) << "token " << id << " is outside the top-k";
    // 0.999 quantile (Wilson-Hilferty).
    const double a = 1.0 - 2.0 / (9.0 * dof) + 3.090 * std::sqrt(2.0 / (9.0 * dof));
    EXPECT_LT(x2, dof * a * a * a) << "first token " << first << ", " << total << " draws";
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(DraftModel, RefusesAnotherVocabulary) {
  EngineOptions o = exact_engine_options(kSmolPath, "dense", 16, 64);
  o.draft_model_path = kGemmaPath;
  auto e = Engine::create(o);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("same vocabulary"), std::string::npos) << e.status().message();
}

}  // namespace
}  // namespace stride
