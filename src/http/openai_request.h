#pragma once
// Parses and validates OpenAI request bodies into the plain
// serving::GenerationRequest, which serving/prepare_generation.h turns into
// a ServeRequest. Every field is type- and range-checked
// (http/json_fields.h); nothing here throws.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "attention/policy.h"
#include "http/json_fields.h"
#include "http/openai_tools.h"
#include "serving/chat_template.h"
#include "serving/config.h"
#include "serving/generation_request.h"
#include "serving/prepare_generation.h"
#include "serving/request.h"
#include "tokenizer/tokenizer.h"

namespace stride::server {

using serving::kMaxMessages;
using serving::kMaxStopBytes;
using serving::kMaxStopStrings;

struct ParseContext {
  const serving::ServeConfig* cfg = nullptr;
  const Tokenizer* tok = nullptr;
  const Expected<serving::ChatTemplate>* chat = nullptr;
  std::string model_id;                 // reported in responses
  std::vector<std::string> model_names; // accepted as "model" (model_id among them)
  PolicySpec attention;  // the engine's policy
  int n_vocab = 0;
  std::string_view body;  // the request's JSON text (a schema's property order is read from it)

  serving::PrepareContext prepare() const { return {cfg, tok, chat, n_vocab}; }
};

struct GenerationCall {
  serving::ServeRequest req;
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  int n = 1;        // choices per prompt
  int best_of = 1;  // branches per prompt (>= n); the n with the highest log-prob sums are kept
  int n_prompts = 1;  // a batched completion's prompts (req is moved to the scheduler)
  ToolsRequest tools;       // chat: tool_choice none unless the request offers tools
  std::string prompt_text;  // for the audit log (only when enabled)
  std::string session;      // "session": continue from this saved session (the API loads it)
  // Completions `echo`: each prompt's text, which its choices start with (empty: no echo).
  std::vector<std::string> echo;
  bool prompt_logprobs = false;  // echo with logprobs: each prompt is scored
};

// "model" must be empty (the default) or one of the served names; the 404
// lists them, as a client that typed a wrong alias needs to see the right ones.
ApiError check_model_name(const std::string& model, const std::vector<std::string>& served);

// "attention": allowed only when the server allows per-request policies, and
// only as the policy it runs.
ApiError read_attention(const nlohmann::json& body, const ParseContext& ctx);

// The body as a plain request; `out` gets what only the API reads (stream,
// include_usage, tools, session).
ApiError read_generation(const nlohmann::json& body, bool chat, const ParseContext& ctx,
                         serving::GenerationRequest& g, GenerationCall& out);

// A serving::RequestError as the API reports it (400, or 413 for a prompt too long).
ApiError api_error(const serving::RequestError& e);

// read_generation, then prepare_call.
ApiError parse_generation(const nlohmann::json& body, bool chat, const ParseContext& ctx, GenerationCall& out);
// serving::prepare_generation into out.req (and what the reply needs of g).
ApiError prepare_call(const serving::GenerationRequest& g, const ParseContext& ctx, GenerationCall& out);

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
