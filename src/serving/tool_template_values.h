#pragma once
// What a chat template with a tool format of its own sees of a request's
// tools (tool_format.h): the `tools` list and an assistant's `tool_calls`,
// in OpenAI's shapes, as transformers' apply_chat_template and vLLM pass them.
// Every string in them is client text.
#include <nlohmann/json.hpp>
#include <vector>

#include "jinja/value.h"
#include "serving/tool_calls.h"

namespace stride::serving {

// The request's `tools` list as the client sent it (key order kept).
jinja::Value tools_template_value(const nlohmann::ordered_json& tools);

// [{"id", "type": "function", "function": {"name", "arguments"}}]: arguments
// that are a JSON object become a dict (templates write them with tojson),
// any other text stays a string; an empty id is left out.
jinja::Value tool_calls_template_value(const std::vector<ToolCall>& calls);

}  // namespace stride::serving
