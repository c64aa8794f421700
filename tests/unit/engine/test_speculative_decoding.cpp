// Speculative decoding on a real model: greedy output is token for token the
// output of plain decoding, for every attention policy kind and a per-layer
// mix, with prompt lookup and with a draft model; drafts are proposed,
// accepted and rejected along the way (so the rollback runs). A draft model
// of another vocabulary is refused.
#include <gtest/gtest.h>

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
