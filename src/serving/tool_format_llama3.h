#pragma once
// The Llama 3.1 / 3.2 / 3.3 JSON tool-call format: the chat template puts the
// tools in the first user message (or the system one) and asks for
//   {"name": "NAME", "parameters": {...}}
// as the whole reply, one call per turn (optionally after <|python_tag|>);
// results come back as ipython turns.
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "serving/tool_call_scan.h"
#include "serving/tool_calls.h"

namespace stride::serving {

inline constexpr std::string_view kLlama3PythonTag = "<|python_tag|>";

// Reads a Llama 3 reply so far (same contract as scan_tool_calls): Text when
// it does not open with "{" (after blank space and an optional
// <|python_tag|>), else one call object, its arguments a JSON object, and
// nothing after it.
ToolCallScan scan_llama3_calls(std::string_view text);

// The grammar of a reply: `required` / named one call, `auto` text or one call.
Expected<std::string> llama3_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice);

}  // namespace stride::serving
