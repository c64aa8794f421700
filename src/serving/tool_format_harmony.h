#pragma once
// OpenAI's harmony format (gpt-oss). The prompt ends with <|start|>assistant;
// the model then writes messages, each
//   [<|start|>assistant[ to=RECIPIENT]]<|channel|>CHANNEL[ to=RECIPIENT][ <|constrain|>TYPE]<|message|>BODY END
// where END is <|end|> (more messages follow), <|call|> (a tool call ends
// the turn) or <|return|> (the final answer ends it); the first message has
// no <|start|> (the prompt wrote it). Channels: `analysis` is the model's
// reasoning (reasoning_content, never content), `final` the answer
// (content), `commentary` tool calls (recipient functions.NAME, the body the
// JSON arguments) or a preamble to them without a recipient (content).
// <|call|> and <|return|> are end-of-generation tokens, so a reply usually
// stops before them: the end of the text ends its last message.
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "serving/tool_call_scan.h"
#include "serving/tool_calls.h"

namespace stride::serving {

inline constexpr std::string_view kHarmonyStart = "<|start|>";
inline constexpr std::string_view kHarmonyChannel = "<|channel|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>";
inline constexpr std::string_view kHarmonyConstrain = "<|constrain|>";
inline constexpr std::string_view kHarmonyEnd = "<|end|>";
inline constexpr std::string_view kHarmonyCall = "<|call|>";
inline constexpr std::string_view kHarmonyReturn = "<|return|>";

// Reads a reply so far into content, reasoning and calls (`channels` set;
// same growth contract as scan_tool_calls: a longer text of the same reply
// only extends what a shorter one found). Kind is Calls once a message to
// functions.NAME has its header, else Text (Undecided while nothing is
// written). A reply that does not open with a harmony header is plain
// content; a header that breaks the grammar ends the parse, and the text
// from there on is content. A complete call whose body is not a JSON object
// makes the calls invalid.
ToolCallScan scan_harmony_reply(std::string_view text);

// The grammar of a reply that must call (mode Required or Named): one
// commentary message to functions.NAME with JSON arguments, its header
// written with the control tokens. Auto has no grammar.
Expected<std::string> harmony_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice);

}  // namespace stride::serving
