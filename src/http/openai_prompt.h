#pragma once
// The prompt fields of an OpenAI request: /v1/completions' `prompt` (text or
// token ids), or /v1/chat/completions' `messages` with the chat template's
// variables (chat_template_kwargs, reasoning_effort, add_generation_prompt).
#include <nlohmann/json.hpp>

#include "http/json_fields.h"
#include "http/openai_request.h"
#include "serving/generation_request.h"

namespace stride::server {

ApiError read_prompt(const nlohmann::json& body, const ParseContext& ctx, serving::GenerationRequest& g);
// The value of `prompt` alone (errors name "prompt").
ApiError read_prompt_value(const nlohmann::json& prompt, const ParseContext& ctx, serving::GenerationRequest& g);

ApiError read_messages(const nlohmann::json& body, serving::GenerationRequest& g);
// The value of `messages` alone (null: absent), without the template's variables.
ApiError read_message_list(const nlohmann::json* messages, serving::GenerationRequest& g);

}  // namespace stride::server
