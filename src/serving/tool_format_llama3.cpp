#include "serving/tool_format_llama3.h"

#include "serving/tool_call_cursor.h"

namespace stride::serving {

namespace {

using tool_scan::Cursor;
using tool_scan::Step;

size_t skip_blank(std::string_view text, size_t pos) {
  while (pos < text.size() && tool_scan::is_blank(text[pos])) ++pos;
  return pos;
}

}  // namespace

ToolCallScan scan_llama3_calls(std::string_view text) {
  ToolCallScan out;
  size_t pos = skip_blank(text, 0);
  const std::string_view rest = text.substr(pos);
  if (rest.size() < kLlama3PythonTag.size() && kLlama3PythonTag.substr(0, rest.size()) == rest) return out;
  if (rest.substr(0, kLlama3PythonTag.size()) == kLlama3PythonTag) pos = skip_blank(text, pos + kLlama3PythonTag.size());
  if (pos == text.size()) return out;
  if (text[pos] != '{') {
    out.kind = ToolCallScan::Kind::Text;
    out.content_end = out.content_safe = text.size();
    return out;
  }
  out.kind = ToolCallScan::Kind::Calls;
  Cursor c(text.substr(pos + 1));
  out.calls.emplace_back();
  Step st = tool_scan::scan_call(c, out.calls.back());
  if (st == Step::Done) {
    const auto args = nlohmann::json::parse(out.calls.back().arguments, nullptr, /*allow_exceptions=*/false);
    c.skip_blank();
    if (args.is_discarded() || !args.is_object() || !c.at_end()) st = Step::Bad;
  }
  out.valid = st != Step::Bad;
  out.complete = st == Step::Done;
  return out;
}

Expected<std::string> llama3_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice) {
  STRIDE_ASSIGN_OR_RETURN(ToolCallRules calls, tool_call_rules(tools, choice, "parameters"));
  std::string frame = "call ::= " + calls.call + "\n";
  frame += choice.mode == ToolChoiceMode::Auto ? text_or_calls_root("call") : "root ::= call\n";
  return frame + calls.rules;
}

}  // namespace stride::serving
