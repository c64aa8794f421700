#pragma once
// POST /v1/responses (OpenAI's Responses API, text only): the request is
// checked field by field and translated into a chat completion, so it shares
// every limit, the chat template and structured output with
// /v1/chat/completions. Errors name the Responses field, not the chat one.
#include <nlohmann/json.hpp>
#include <string>

#include "http/openai_request.h"

namespace stride::server {

// Upper bounds on what a Responses request may carry.
constexpr size_t kMaxInputItems = kMaxMessages;
constexpr int64_t kMinMaxOutputTokens = 16;  // OpenAI's least max_output_tokens

struct ResponsesCall {
  GenerationCall gen;
  // What the response object echoes back.
  nlohmann::json instructions;        // string or null
  nlohmann::json max_output_tokens;   // integer or null
  nlohmann::json temperature;         // number or null
  nlohmann::json top_p;               // number or null
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json user;                // string or null
  nlohmann::json text_format = {{"type", "text"}};
};

ApiError parse_responses(const nlohmann::json& body, const ParseContext& ctx, ResponsesCall& out);

}  // namespace stride::server
