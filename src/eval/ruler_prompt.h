#pragma once
// How a RULER-style task is put to the model, and how its prompt is sized.
// Completion style: the task text, then the answer prefix. Chat style: the
// task text is the user's message rendered by the model's template, and the
// answer prefix opens the assistant's reply (as RULER does for chat models).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/special_split.h"
#include "tokenizer/tokenizer.h"

namespace stride {

// Prompt text and the byte ranges of it that are content, not markup: they
// are always tokenized as plain text (Tokenizer::encode_with_literals).
struct RenderedPrompt {
  std::string text;
  std::vector<TextSpan> literal;
};

// Renders one user message up to and including the assistant's turn opener.
using UserTurnRenderer = std::function<Expected<RenderedPrompt>(const std::string& user_message)>;

class PromptFormat {
 public:
  static PromptFormat completion() { return PromptFormat({}); }
  static PromptFormat chat(UserTurnRenderer render_user_turn) { return PromptFormat(std::move(render_user_turn)); }
  bool is_chat() const { return bool(render_user_turn_); }

  // answer_prefix has no leading space; completion style puts one before it.
  Expected<RenderedPrompt> render(const std::string& task_text, const std::string& answer_prefix) const;

 private:
  explicit PromptFormat(UserTurnRenderer r) : render_user_turn_(std::move(r)) {}
  UserTurnRenderer render_user_turn_;
};

// The prompt's token ids, BOS as the model asks.
std::vector<int32_t> encode_prompt(const Tokenizer& tok, const RenderedPrompt& prompt);

// A prompt whose size is set by a count of units (haystack sentences, list
// items, words): task_text(n) must be a pure function of n, growing with it.
struct PromptSizing {
  int64_t target_tokens = 0;
  int64_t max_units = 0;
  std::function<std::string(int64_t units)> task_text;
  // A first guess of the units that fill `tokens` tokens (the fit refines it).
  std::function<int64_t(int64_t tokens)> units_for_tokens;
  std::string answer_prefix;
};

struct FittedPrompt {
  RenderedPrompt prompt;
  std::vector<int32_t> ids;
  int64_t units = 0;
};

// The unit count whose whole prompt comes nearest to target_tokens (a few
// tokenizations; done once within 0.5% below it). InvalidArgument when even
// zero units exceed the target (the length is below what the task needs) or
// when no count comes within 5%.
Expected<FittedPrompt> fit_prompt(const Tokenizer& tok, const PromptFormat& format, const PromptSizing& sizing);

}  // namespace stride
