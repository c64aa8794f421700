#pragma once
// Passkey retrieval (Mohtashami & Jaggi 2023, as used by StreamingLLM/Quest):
// a 5-digit number is hidden at a given depth of repetitive filler text and
// the model is asked to repeat it. Greedy decoding; a hit is the number
// appearing in the first few generated tokens.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace stride {

struct PasskeyTrial {
  int64_t tokens = 0;  // prompt length actually built
  double depth = 0;    // 0: start of the filler, 1: end
  int key = 0;
  bool found = false;
  std::string answer;  // generated text
};

// The prompt text for about target_tokens tokens (filler units are counted
// with the tokenizer), the key sitting at `depth` of the filler.
std::string passkey_text(const Tokenizer& tok, int64_t target_tokens, double depth, int key);

// The same prompt in two parts, passkey_text == task + answer_prefix: the
// text up to the question, and the answer's start (" The pass key is"), so a
// chat prompt can put the question in the user turn and the prefix in the reply.
struct PasskeyPrompt {
  std::string task;
  std::string answer_prefix;
};
PasskeyPrompt passkey_prompt(const Tokenizer& tok, int64_t target_tokens, double depth, int key);

// Builds the prompt, generates greedily and checks for the key.
Expected<PasskeyTrial> run_passkey(Engine& engine, int64_t target_tokens, double depth, int key,
                                   int max_new_tokens = 10);

}  // namespace stride
