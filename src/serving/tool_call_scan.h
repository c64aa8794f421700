#pragma once
// Reads a reply in the generic tool-call format (serving/tool_calls.h) while
// it is being written: which calls it holds so far, each call's name once the
// name is complete, and the exact text of its arguments so far. Scanning a
// longer text of the same reply only ever extends what a shorter one found,
// which is what streaming needs: a call's arguments are sent as fragments
// that add up to the arguments of the full reply.
#include <string>
#include <string_view>
#include <vector>

namespace stride::serving {

struct ScannedCall {
  std::string name;         // decoded; valid when name_done
  bool name_done = false;
  std::string arguments;    // the JSON text of the arguments as written so far
  bool arguments_done = false;
  bool done = false;        // the call's object is closed
};

struct ToolCallScan {
  enum class Kind {
    Undecided,  // nothing but blank space yet
    Text,       // the reply does not open with "{": plain text
    Calls,      // it opens with "{": calls (see `valid`)
  };
  Kind kind = Kind::Undecided;
  bool valid = true;      // Calls: everything so far is in the format
  bool complete = false;  // Calls: the whole object is closed
  std::vector<ScannedCall> calls;
  // The reply's text part: text[0, content_end) is content (formats that
  // allow text before calls), of which text[0, content_safe) is sure to stay
  // content however the reply goes on (streaming sends no more).
  size_t content_end = 0;
  size_t content_safe = 0;
  // Formats that write the reply in channels (harmony): the content and the
  // model's reasoning as decoded text. content_end / content_safe then index
  // `content`, not the reply; reasoning[0, reasoning_safe) stays reasoning.
  bool channels = false;
  std::string content;
  std::string reasoning;
  size_t reasoning_safe = 0;
};

ToolCallScan scan_tool_calls(std::string_view text);

}  // namespace stride::serving
