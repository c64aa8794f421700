#pragma once
// OpenAI's deprecated function calling, which the official client still
// sends: `functions` ([{name, description, parameters}]) and `function_call`
// ("none" | "auto" | {"name"}) are read as `tools` of type function and
// `tool_choice`; the reply then carries the call as `message.function_call`
// ({name, arguments}; finish_reason "function_call"; streamed as
// `delta.function_call`), one call per reply, as OpenAI's legacy shape has.
// In messages, an assistant's `function_call` and a `role: "function"`
// result are the call and its tool result (http/openai_prompt.cpp).
#include <nlohmann/json.hpp>
#include <string_view>

#include "http/openai_tools.h"

namespace stride::server {

// read_tools on the body, with `functions`/`function_call` read as
// `tools`/`tool_choice` (errors name the legacy fields).
ApiError read_chat_tools(const nlohmann::json& body, std::string_view body_text, ToolsRequest& out);

// A full chat completion's choices[0] with `message.tool_calls` rewritten as
// `message.function_call` (the first call) and finish_reason "tool_calls" as
// "function_call".
void use_legacy_function_call(nlohmann::json& completion);

// One streamed delta with its `tool_calls` rewritten as `function_call`
// (the first call's parts; deltas of later calls become empty).
nlohmann::json legacy_function_delta(const nlohmann::json& delta);

}  // namespace stride::server
