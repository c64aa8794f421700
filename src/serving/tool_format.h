#pragma once
// Which tool-call syntax a chat template speaks. Templates with a syntax of
// their own render the request's `tools` themselves and the model answers in
// that syntax; every other template gets the generic format (tool_calls.h).
#include <string>
#include <vector>

namespace stride::serving {

enum class ToolFormat {
  Generic,  // tools in the system message, {"tool_calls": [...]} replies
  Hermes,   // Hermes / Qwen2.5 / Qwen3: <tools>...</tools>, <tool_call>{...}</tool_call> replies
  Llama3,   // Llama 3.1 / 3.2 / 3.3: a reply that is one {"name": ..., "parameters": {...}} object
  MistralJson,  // Mistral Nemo / Small 3.0-3.1: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
  MistralArgs,  // Mistral Small 3.2, Devstral, Ministral 3: [TOOL_CALLS]NAME[ARGS]{...} per call
  Harmony,      // gpt-oss: channels (analysis reasoning, final content) and commentary calls to functions.NAME
};

const char* tool_format_name(ToolFormat f);

// From the template's source: Hermes when it renders `tools` and writes
// <tool_call> blocks; Llama3 when it writes "parameters" objects and ipython turns.
// Mistral: [TOOL_CALLS] with [ARGS] (args form) or a list; Harmony: <|channel|> headers.
ToolFormat detect_tool_format(const std::string& template_source);

// The control tokens a reply in this format writes (as text): generated
// text renders them, and a format's grammar may emit them. Empty for the
// formats written in plain text.
std::vector<std::string> tool_format_control_texts(ToolFormat f);

}  // namespace stride::serving
