#include "eval/passkey.h"

#include <algorithm>

namespace stride {

namespace {

constexpr const char* kIntro =
    "There is an important piece of information hidden inside a lot of irrelevant text. "
    "Find it and memorize it. I will quiz you about the important information there.\n";
constexpr const char* kFiller =
    "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
constexpr const char* kQuestion = "\nWhat is the pass key?";
constexpr const char* kAnswerPrefix = " The pass key is";

std::string needle(int key) {
  const std::string k = std::to_string(key);
  return "The pass key is " + k + ". Remember it. " + k + " is the pass key. ";
}

}  // namespace

PasskeyPrompt passkey_prompt(const Tokenizer& tok, int64_t target_tokens, double depth, int key) {
  const int64_t unit = std::max<int64_t>(1, (int64_t)tok.encode(kFiller, false).size());
  const int64_t fixed =
      (int64_t)tok.encode(std::string(kIntro) + needle(key) + kQuestion + kAnswerPrefix, true).size();
  const int64_t n_units = std::max<int64_t>(1, (target_tokens - fixed) / unit);
  const int64_t before = std::clamp<int64_t>((int64_t)(depth * (double)n_units + 0.5), 0, n_units);
  std::string text = kIntro;
  for (int64_t i = 0; i < before; ++i) text += kFiller;
  text += needle(key);
  for (int64_t i = before; i < n_units; ++i) text += kFiller;
  return {text + kQuestion, kAnswerPrefix};
}

std::string passkey_text(const Tokenizer& tok, int64_t target_tokens, double depth, int key) {
  PasskeyPrompt p = passkey_prompt(tok, target_tokens, depth, key);
  return p.task + p.answer_prefix;
}

Expected<PasskeyTrial> run_passkey(Engine& engine, int64_t target_tokens, double depth, int key,
                                   int max_new_tokens) {
  if (!engine.tokenizer()) return Unsupported("passkey needs a tokenizer (GGUF model)");
  PasskeyTrial t;
  t.depth = depth;
  t.key = key;
  const std::vector<int32_t> ids =
      engine.tokenizer()->encode(passkey_text(*engine.tokenizer(), target_tokens, depth, key), true);
  t.tokens = (int64_t)ids.size();
  GenerateOptions g;
  g.max_tokens = max_new_tokens;
  g.sampling.temperature = 0.f;  // greedy
  g.ignore_eos = false;
  STRIDE_ASSIGN_OR_RETURN(GenerateResult r, engine.generate(ids, g, {}));
  t.answer = r.text;
  t.found = r.text.find(std::to_string(key)) != std::string::npos;
  return t;
}

}  // namespace stride
