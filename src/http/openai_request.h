#pragma once
// Parses and validates OpenAI request bodies into serving::ServeRequest.
// Every field is type- and range-checked (server/json_fields.h); nothing
// here throws.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "attention/policy.h"
#include "http/json_fields.h"
#include "http/openai_tools.h"
#include "serving/chat_template.h"
#include "serving/config.h"
#include "serving/request.h"
#include "tokenizer/tokenizer.h"

namespace stride::server {

// Stop strings: at most this many, each at most this long. Matching is linear
// in the generated text whatever their length (engine/stop_text.h).
constexpr size_t kMaxStopStrings = 16;
constexpr size_t kMaxStopBytes = 32 * 1024;
constexpr size_t kMaxMessages = 4096;

struct ParseContext {
  const serving::ServeConfig* cfg = nullptr;
  const Tokenizer* tok = nullptr;
  const Expected<serving::ChatTemplate>* chat = nullptr;
  std::string model_id;                 // reported in responses
  std::vector<std::string> model_names; // accepted as "model" (model_id among them)
  PolicySpec attention;  // the engine's policy
  int n_vocab = 0;
  std::string_view body;  // the request's JSON text (a schema's property order is read from it)
};

struct GenerationCall {
  serving::ServeRequest req;
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  ToolsRequest tools;       // chat: tool_choice none unless the request offers tools
  std::string prompt_text;  // for the audit log (only when enabled)
  std::string session;      // "session": continue from this saved session (the API loads it)
};

// "model" must be empty (the default) or one of the served names; the 404
// lists them, as a client that typed a wrong alias needs to see the right ones.
ApiError check_model_name(const std::string& model, const std::vector<std::string>& served);

ApiError parse_generation(const nlohmann::json& body, bool chat, const ParseContext& ctx, GenerationCall& out);

// POST /tokenize: {"prompt"|"content": str, "add_special_tokens"|"add_special": bool,
// "parse_special": bool (default false: control-token text stays text)}.
struct TokenizeCall {
  std::string text;
  bool add_special = true;
  bool parse_special = false;
};
ApiError parse_tokenize(const nlohmann::json& body, TokenizeCall& out);

// POST /detokenize: {"tokens": [ids in [0, n_vocab)]}.
ApiError parse_detokenize(const nlohmann::json& body, int n_vocab, size_t max_tokens, std::vector<int32_t>& out);

}  // namespace stride::server
