#pragma once
// Which tool-call syntax a chat template speaks. Templates with a syntax of
// their own render the request's `tools` themselves and the model answers in
// that syntax; every other template gets the generic format (tool_calls.h).
#include <string>

namespace stride::serving {

enum class ToolFormat {
  Generic,  // tools in the system message, {"tool_calls": [...]} replies
  Hermes,   // Hermes / Qwen2.5 / Qwen3: <tools>...</tools>, <tool_call>{...}</tool_call> replies
  Llama3,   // Llama 3.1 / 3.2 / 3.3: a reply that is one {"name": ..., "parameters": {...}} object
};

const char* tool_format_name(ToolFormat f);

// From the template's source: Hermes when it renders `tools` and writes
// <tool_call> blocks; Llama3 when it writes "parameters" objects and ipython turns.
ToolFormat detect_tool_format(const std::string& template_source);

}  // namespace stride::serving
