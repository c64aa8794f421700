#pragma once
// Tool calling in the generic format: the one every chat template can carry,
// because it is plain text inside ordinary turns (as llama-server does for
// templates without a tool syntax of their own).
//
//   - The tools are described in the system message, with the reply format.
//   - The model calls tools by replying with exactly
//       {"tool_calls": [{"name": "NAME", "arguments": {...}}, ...]}
//     and nothing else; a reply that does not start with "{" is text.
//   - Earlier calls are written back the same way in the assistant's turn, and
//     a tool's result is a user turn {"tool_result": {"id", "name", "content"}}.
//   - tool_call_gbnf() is the grammar that decoding follows: `required` and a
//     named function allow only calls, `auto` text or calls (a reply that
//     starts with "{" must be a valid call), each call's name one of the
//     tools and its arguments valid under that tool's parameter schema.
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace stride::serving {

struct ToolSpec {
  std::string name;
  std::string description;
  std::string parameters = "{\"type\": \"object\", \"properties\": {}}";  // JSON Schema text
  bool strict = false;  // refuse schema keywords decoding cannot enforce
};

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

enum class ToolChoiceMode { None, Auto, Required, Named };

struct ToolChoice {
  ToolChoiceMode mode = ToolChoiceMode::None;
  std::string name;      // Named: the function to call
  bool parallel = true;  // false: at most one call
};

// The most calls one reply may make (parallel_tool_calls true): small models
// tend to repeat a call until max_tokens otherwise.
inline constexpr int kMaxCallsPerReply = 8;

// What a reply opens with when it calls tools.
inline constexpr const char* kToolCallsOpen = "{\"tool_calls\": [";

// The text added to the system message (mode None: nothing).
std::string tools_system_text(const std::vector<ToolSpec>& tools, const ToolChoice& choice);
// An assistant turn's calls, as the model writes them.
std::string tool_calls_text(const std::vector<ToolCall>& calls);
// A tool's result, as the user turn that carries it.
std::string tool_result_text(const std::string& id, const std::string& name, const std::string& content);

// The rules of one call {"name": "NAME", "arguments": ARGS} for each tool
// the choice allows (rules named "t<i>-..."), and `call`, the choice of them
// (the right side of a "call ::=" rule). Shared by the formats whose calls
// are such objects.
struct ToolCallRules {
  std::string rules;
  std::string call;
  // The tools the choice allows: name and rule prefix ("t<i>-"); the rule
  // <prefix>root is the tool's arguments, for formats that write the name
  // and the arguments apart.
  std::vector<std::pair<std::string, std::string>> allowed;
};
// `arguments_key`: the key the format writes the arguments under.
Expected<ToolCallRules> tool_call_rules(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                        const std::string& arguments_key = "arguments");

// The root of an `auto` reply in the formats whose calls open with "{":
// blank space then `calls` (a rule name), or text that does not open with "{".
std::string text_or_calls_root(const std::string& calls);

// The grammar of a reply (mode Auto, Required or Named). Fails, naming the
// tool, when a parameter schema cannot be converted.
Expected<std::string> tool_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice);

}  // namespace stride::serving
