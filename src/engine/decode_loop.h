#pragma once
// What one sampled token does to a generation: the single decode loop that
// `stride run` (Engine::generate) and the server's scheduler share. It ends
// generation at an end-of-generation token (unless ignored), a stop string
// (the text is cut before it) or the token limits, and releases text only
// once no stop string can still begin in it.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/stop_text.h"
#include "tokenizer/tokenizer.h"

namespace stride {

enum class FinishReason { Length, Stop, Eos, Error };
const char* finish_reason_name(FinishReason r);

struct DecodeLimits {
  int max_tokens = 128;           // generated tokens
  int64_t max_context = 0;        // prompt + generated tokens; 0: no limit
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop strings (excluded from the text)
  bool render_special = false;    // control tokens are part of the text
};

class DecodeLoop {
 public:
  DecodeLoop(const Tokenizer& tok, DecodeLimits limits, int64_t prompt_tokens);

  struct Step {
    bool appended = false;  // the token is part of the output (not an end-of-generation token)
    bool done = false;
    FinishReason reason = FinishReason::Length;  // when done
    std::string text;       // text now safe to release
  };
  Step push(int32_t id);
  // The text held back until now (the end of the stream); the decoder's
  // unfinished bytes count unless a stop string already cut the text.
  std::string finish();

  int n_generated() const { return n_generated_; }
  const std::string& text() const { return stop_.text(); }
  const StopText& stop_text() const { return stop_; }

 private:
  const Tokenizer& tok_;
  DecodeLimits limits_;
  int64_t prompt_tokens_ = 0;
  int n_generated_ = 0;
  StreamDecoder decoder_;
  StopText stop_;
};

}  // namespace stride
