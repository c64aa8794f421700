#pragma once
// The tool fields of a chat request: `tools`, `tool_choice`,
// `parallel_tool_calls`, and the tool parts of messages (an assistant's
// `tool_calls`, `role: "tool"` results), turned into the generic tool format
// (serving/tool_calls.h). Every field is type-checked; errors name it the way
// OpenAI does ("tools[2].function.name").
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "http/json_fields.h"
#include "serving/chat_template.h"
#include "serving/conversation.h"
#include "serving/generation_request.h"
#include "serving/tool_calls.h"

namespace stride::server {

constexpr size_t kMaxTools = 128;
constexpr size_t kMaxToolSchemaBytes = 64 * 1024;     // one tool's parameters, as compact JSON
constexpr size_t kMaxToolsBytes = 512 * 1024;         // all of them
constexpr size_t kMaxToolDescriptionBytes = 16 * 1024;
constexpr size_t kMaxToolCallsPerMessage = 128;

struct ToolsRequest {
  std::vector<serving::ToolSpec> tools;
  nlohmann::ordered_json raw_tools;  // `tools` as sent: what a native-format template renders
  serving::ToolChoice choice;  // mode None: no calls are made or parsed
  // The chat template's own syntax (Hermes, ...) or the generic format.
  serving::ToolFormat format = serving::ToolFormat::Generic;
  // Offered as OpenAI's deprecated `functions`: the reply's call is
  // `message.function_call` (http/legacy_functions.h).
  bool legacy_functions = false;
  bool active() const { return choice.mode != serving::ToolChoiceMode::None; }
};

// `tools`, `tool_choice` and `parallel_tool_calls`; `body_text` is the raw
// body (a schema's property order is read from it).
ApiError read_tools(const nlohmann::json& body, std::string_view body_text, ToolsRequest& out);

// The plain offer serving prepares (the template value only when it may be rendered).
serving::ToolsOffer tools_offer(const ToolsRequest& t);

using serving::ToolCallNames;

// The tool parts of message `index` (its role already read into `msg`): a
// tool result's tool_call_id and name, an assistant's tool_calls.
ApiError read_tool_parts(const nlohmann::json& m, size_t index, serving::ClientMessage& msg);

// read_tool_parts, then the parts written into `msg` (its role and text
// content already read) for `format` (serving/conversation.h).
ApiError read_tool_message(const nlohmann::json& m, size_t index, serving::ChatMessage& msg, ToolCallNames& names,
                           serving::ToolFormat format = serving::ToolFormat::Generic);

// Describes the tools in the system message (adding one when there is none).
void add_tools_system_text(std::vector<serving::ChatMessage>& messages, const ToolsRequest& tools);

}  // namespace stride::server
