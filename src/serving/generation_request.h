#pragma once
// A generation request as a client asked for it, typed and field-checked but
// not yet run through the model's template or tokenizer: what the HTTP and
// gRPC front ends build from their wire formats, and what
// serving/prepare_generation.h turns into a ServeRequest. No JSON here.
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/speculative_mode.h"
#include "jinja/value.h"
#include "sampler/sampler.h"
#include "serving/tool_calls.h"

namespace stride::serving {

// Stop strings: at most this many (OpenAI's limit), each at most this long.
// Matching is linear in the generated text whatever their length
// (engine/stop_text.h).
constexpr size_t kMaxStopStrings = 4;
constexpr size_t kMaxStopBytes = 32 * 1024;
constexpr size_t kMaxMessages = 4096;
constexpr int kMaxTopLogprobs = 20;
constexpr int kMaxCompletionLogprobs = 5;  // /v1/completions' `logprobs` (OpenAI's maximum)
constexpr int64_t kMaxTopK = 1 << 20;

// The sampling knobs a client may set, with their ranges: one row per field,
// so every front end checks each the same way.
struct SamplingRange {
  const char* key;
  double lo, hi;
  bool lo_open;
  float SamplingParams::*target;
};
inline constexpr SamplingRange kSamplingRanges[] = {
    {"temperature", 0.0, 2.0, false, &SamplingParams::temperature},
    {"top_p", 0.0, 1.0, false, &SamplingParams::top_p},  // 0 keeps only the likeliest token: greedy
    {"min_p", 0.0, 1.0, false, &SamplingParams::min_p},
    {"presence_penalty", -2.0, 2.0, false, &SamplingParams::presence_penalty},
    {"frequency_penalty", -2.0, 2.0, false, &SamplingParams::frequency_penalty},
    {"repetition_penalty", 0.01, 10.0, false, &SamplingParams::repeat_penalty},
};

// OpenAI's defaults; a request without a seed gets a random one.
inline SamplingParams openai_sampling_defaults() {
  SamplingParams s;
  s.temperature = 1.0f;
  s.top_p = 1.0f;
  s.top_k = 0;
  s.min_p = 0.0f;
  s.repeat_penalty = 1.0f;
  s.seed = std::random_device{}();
  return s;
}

// One turn of a conversation as the client sent it. Tool calls and results
// stay apart from the text: how they are written depends on the model's
// template (serving/conversation.h).
struct ClientMessage {
  std::string role;
  std::string content;
  std::optional<std::string> thinking;  // an assistant's earlier reasoning
  std::vector<ToolCall> tool_calls;     // an assistant's calls
  std::string tool_call_id;             // role "tool": the call it answers
  std::string name;                     // role "tool": the function (empty: its call's)
};

// The tools a chat request offers.
struct ToolsOffer {
  std::vector<ToolSpec> tools;
  jinja::Value template_value;  // `tools` as sent, for a template with a tool syntax of its own
  ToolChoice choice;            // mode None: no calls are made or parsed
  bool active() const { return choice.mode != ToolChoiceMode::None; }
};

// Constrained decoding asked for directly (a GBNF text, or one generated from
// a JSON schema); empty: none.
struct GrammarSource {
  std::string gbnf;
  std::string param = "grammar";  // the field it came from, named in errors
  bool generated = false;         // generated from a checked request: a larger size limit
};

// Fill-in-the-middle (serving/fim_prompt.h): a Text prompt is the code
// before the cursor.
struct FillInTheMiddle {
  std::string suffix;  // the code after the cursor
  std::string middle;  // what the middle starts with (llama-server's /infill `prompt`)
  std::string param = "suffix";  // the field named in errors
};

struct GenerationRequest {
  enum class Prompt { Text, Tokens, Chat };
  Prompt prompt = Prompt::Text;
  std::string text;               // Text; tokenized with the model's BOS rule
  bool parse_special = false;     // Text: control-token text becomes control tokens
  std::vector<int32_t> tokens;    // Tokens: used as given
  // A batched completion's prompts after the first (of the first's kind),
  // each prepared like the first and run as its own choices.
  std::vector<std::string> more_texts;
  std::vector<std::vector<int32_t>> more_tokens;
  std::vector<ClientMessage> messages;  // Chat
  // Chat: further template variables (client text), OpenAI's reasoning_effort
  // (empty: none), and whether the prompt ends with the assistant's opener.
  jinja::Value template_kwargs;
  std::string reasoning_effort;
  bool add_generation_prompt = true;
  ToolsOffer tools;  // Chat
  std::optional<FillInTheMiddle> fim;  // Text only
  // Completions: the reply starts with the prompt; with top_logprobs >= 0
  // the prompt's tokens get log-probs too.
  bool echo = false;

  // Unset: 16 for a completion, the room left in the context for chat. A
  // completion may ask for 0 (the prompt alone: echo, scoring).
  std::optional<int64_t> max_tokens;
  bool open_ended = false;  // unset max_tokens means the room left, as for chat (llama-server's /infill)
  std::string max_tokens_param = "max_tokens";  // the name the client used
  SamplingParams sampling = openai_sampling_defaults();
  std::vector<std::string> stop;  // empty strings already dropped
  bool ignore_eos = false;
  int top_logprobs = -1;  // -1: no log-probs
  std::optional<SpeculativeMode> speculative;  // unset: the server's default
  GrammarSource grammar;

  bool chat() const { return prompt == Prompt::Chat; }
  const char* prompt_param() const { return chat() ? "messages" : "prompt"; }
};

// Why a request cannot run, for the client: the field at fault (OpenAI's
// `param`) and a machine-readable code. Status has neither.
struct RequestError {
  enum class Kind { None, Invalid, TooLong };
  Kind kind = Kind::None;
  std::string message;
  std::string param;
  std::string code;
  bool ok() const { return kind == Kind::None; }
};

inline RequestError invalid_field(std::string param, std::string message, std::string code = "") {
  return {RequestError::Kind::Invalid, std::move(message), std::move(param), std::move(code)};
}

}  // namespace stride::serving
