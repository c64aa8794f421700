#include "engine/decode_loop.h"

namespace stride {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Length: return "length";
    case FinishReason::Stop: return "stop";
    case FinishReason::Eos: return "stop";
    case FinishReason::Error: return "error";
  }
  return "unknown";
}

DecodeLoop::DecodeLoop(const Tokenizer& tok, DecodeLimits limits, int64_t prompt_tokens)
    : tok_(tok), limits_(std::move(limits)), prompt_tokens_(prompt_tokens), decoder_(tok, limits_.render_special), stop_(limits_.stop) {}

DecodeLoop::Step DecodeLoop::push(int32_t id) {
  Step s;
  if (!limits_.ignore_eos && tok_.is_eog(id)) {
    s.done = true;
    s.reason = FinishReason::Eos;
    return s;
  }
  s.appended = true;
  ++n_generated_;
  if (stop_.append(decoder_.push(id))) {
    s.done = true;
    s.reason = FinishReason::Stop;
  } else if (n_generated_ >= limits_.max_tokens ||
             (limits_.max_context > 0 && prompt_tokens_ + n_generated_ >= limits_.max_context)) {
    s.done = true;
    s.reason = FinishReason::Length;
  }
  s.text = stop_.take_safe();
  return s;
}

std::string DecodeLoop::finish() {
  stop_.append(decoder_.flush());  // ignored once a stop string cut the text
  return stop_.take_all();
}

}  // namespace stride
