#pragma once
// The reply of a chat request that offers tools, in OpenAI's shape: a reply
// in the generic call format (serving/tool_calls.h) becomes
// `message.tool_calls` ([{id, type: "function", function: {name, arguments}}],
// `content` null, finish_reason "tool_calls"); any other reply is content.
// Streamed, text is held back while the reply could still open a call; a
// call's first delta carries its index, id, type and name, later ones
// fragments of its arguments, as OpenAI sends them.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stride::server {

// "call_" and 24 random letters and digits.
std::string new_tool_call_id();

// Rewrites choices[0] of a full chat completion whose message content is
// `text` when the text holds calls.
void apply_tool_calls(nlohmann::json& completion, const std::string& text);

class ToolReplyStream {
 public:
  // The `delta` objects to send now that the reply so far is `text`.
  std::vector<nlohmann::json> update(const std::string& text);
  // What is left to send at the end; `finish_reason` becomes "tool_calls"
  // when the reply is complete calls.
  std::vector<nlohmann::json> finish(const std::string& text, std::string& finish_reason);

 private:
  enum class Mode { Undecided, Text, Calls };
  std::vector<nlohmann::json> text_deltas(const std::string& text, bool final);
  std::vector<nlohmann::json> call_deltas(const std::string& text, bool final, bool& complete, bool& valid);

  Mode mode_ = Mode::Undecided;
  size_t text_sent_ = 0;               // bytes of the reply sent as content
  std::vector<std::string> ids_;       // the calls whose first delta went out
  std::vector<size_t> args_sent_;      // [ids_.size()] bytes of each call's arguments sent
};

}  // namespace stride::server
