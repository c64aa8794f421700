#pragma once
// Mistral's tool-call formats. The chat template renders the tools inside
// [AVAILABLE_TOOLS]...[/AVAILABLE_TOOLS]; the model calls them after the
// control token [TOOL_CALLS], in one of two forms:
//   MistralJson (Mistral 7B v0.3, Nemo, Small 3.0 / 3.1):
//     [TOOL_CALLS][{"name": "NAME", "arguments": {...}}, ...]
//   MistralArgs (Small 3.2, Devstral, Ministral 3, Magistral):
//     [TOOL_CALLS]NAME[ARGS]{...}[TOOL_CALLS]NAME2[ARGS]{...}
//     (Small 3.2 may put [CALL_ID]ID between the name and [ARGS])
// Text before the first [TOOL_CALLS] is the content. The control tokens
// reach this reader as text because the server renders them for these formats.
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "serving/tool_call_scan.h"
#include "serving/tool_calls.h"

namespace stride::serving {

inline constexpr std::string_view kMistralCallsTag = "[TOOL_CALLS]";
inline constexpr std::string_view kMistralArgsTag = "[ARGS]";
inline constexpr std::string_view kMistralCallIdTag = "[CALL_ID]";

// Reads a reply so far (same contract as scan_tool_calls): Text while no
// [TOOL_CALLS] has opened (content_safe holds back a tail that may become
// one), Calls from it on. `args_form`: the [ARGS] form, else the JSON list.
// A complete call whose arguments are not a JSON object, a name that is not
// an identifier, or anything after the calls but more calls make the calls
// invalid: the whole reply is then text.
ToolCallScan scan_mistral_calls(std::string_view text, bool args_form);

// The grammar of a reply that must call (mode Required or Named): calls
// only, with the [TOOL_CALLS] (and [ARGS]) control tokens. Auto has no
// grammar: text or calls, read by scan_mistral_calls.
Expected<std::string> mistral_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                        bool args_form);

// Mistral templates require call ids of exactly 9 letters and digits: any
// other id is mapped to one (the same id always to the same one, so a
// tool result still names its call).
std::string mistral_call_id(std::string_view id);

}  // namespace stride::serving
