#pragma once
// The Hermes tool-call format (Hermes 2 Pro / 3, Qwen2.5, Qwen3, Granite):
// the chat template renders the tools inside <tools></tools> and the model
// calls one tool per block,
//   <tool_call>
//   {"name": "NAME", "arguments": {...}}
//   </tool_call>
// several blocks for parallel calls, possibly after some text (the content).
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "serving/tool_call_scan.h"
#include "serving/tool_calls.h"

namespace stride::serving {

inline constexpr std::string_view kHermesCallOpen = "<tool_call>";
inline constexpr std::string_view kHermesCallClose = "</tool_call>";

// Reads a Hermes reply so far (same contract as scan_tool_calls): Text while
// no <tool_call> has opened (content_safe holds back a tail that may become
// one), Calls from the first <tool_call> on (content_end is where it opens).
// Anything after the blocks but further blocks, or a block that is not one
// call object, makes the calls invalid: the whole reply is then text.
ToolCallScan scan_hermes_calls(std::string_view text);

// The grammar of a reply that must call (mode Required or Named): blocks
// only. Auto has no grammar: text or blocks, read by scan_hermes_calls.
Expected<std::string> hermes_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice);

}  // namespace stride::serving
