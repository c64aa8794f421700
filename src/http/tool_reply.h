#pragma once
// The reply of a chat request that offers tools, in OpenAI's shape: calls in
// the request's tool format (the generic one, serving/tool_calls.h, or the
// template's own, e.g. serving/tool_format_hermes.h) become
// `message.tool_calls` ([{id, type: "function", function: {name, arguments}}],
// finish_reason "tool_calls"); text before them (formats that allow it) is
// `content`, else null; any other reply is content.
// Formats with channels (harmony) put the model's reasoning in
// `reasoning_content` (deltas too) and never in `content`.
// Streamed, text is held back while the reply could still open a call; a
// call's first delta carries its index, id, type and name, later ones
// fragments of its arguments, as OpenAI sends them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/tool_call_scan.h"
#include "serving/tool_format.h"

namespace stride::server {

// The reply so far read in `format`.
serving::ToolCallScan scan_reply(serving::ToolFormat format, const std::string& text);

// "call_" and 24 random letters and digits.
std::string new_tool_call_id();

// Rewrites choices[0] of a full chat completion whose message content is
// `text` when the text holds calls.
// Formats with channels (harmony) also split the reasoning out
// (`message.reasoning_content`), with or without tools; `tools` false:
// calls are not looked for.
// `legacy`: the request offered OpenAI's deprecated `functions`, so the call
// is `message.function_call` (http/legacy_functions.h).
void apply_tool_calls(nlohmann::json& completion, const std::string& text,
                      serving::ToolFormat format = serving::ToolFormat::Generic, bool tools = true,
                      bool legacy = false);

class ToolReplyStream {
 public:
  explicit ToolReplyStream(serving::ToolFormat format = serving::ToolFormat::Generic, bool tools = true,
                           bool legacy = false)
      : format_(format), tools_(tools), legacy_(legacy) {}
  // The `delta` objects to send now that the reply so far is `text`.
  std::vector<nlohmann::json> update(const std::string& text);
  // What is left to send at the end; `finish_reason` becomes "tool_calls"
  // when the reply is complete calls.
  std::vector<nlohmann::json> finish(const std::string& text, std::string& finish_reason);

 private:
  std::vector<nlohmann::json> text_deltas(const std::string& text, size_t end, bool final);
  std::vector<nlohmann::json> call_deltas(const serving::ToolCallScan& scan, bool final);
  // {"reasoning_content": ...} deltas (formats with channels).
  std::vector<nlohmann::json> reasoning_deltas(const serving::ToolCallScan& scan, bool final);
  // `deltas` as sent: the legacy shape when asked for, without empty ones.
  std::vector<nlohmann::json> shaped(std::vector<nlohmann::json> deltas) const;

  serving::ToolFormat format_;
  bool tools_ = true;                  // false: the reply is read for its channels only
  bool legacy_ = false;                // calls go out as `function_call` deltas
  size_t reasoning_sent_ = 0;          // bytes of the reasoning sent
  size_t text_sent_ = 0;               // bytes of the reply sent as content
  std::vector<std::string> ids_;       // the calls whose first delta went out
  std::vector<size_t> args_sent_;      // [ids_.size()] bytes of each call's arguments sent
};

}  // namespace stride::server
