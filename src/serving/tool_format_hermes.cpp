#include "serving/tool_format_hermes.h"

#include <algorithm>

#include "grammar/gbnf_text.h"
#include "serving/tool_call_cursor.h"

namespace stride::serving {

namespace {

using tool_scan::Cursor;
using tool_scan::Step;
using tool_scan::expect_tag;
using tool_scan::partial_tag_tail;

Step scan_blocks(std::string_view text, size_t pos, ToolCallScan& out) {
  for (;;) {
    if (Step st = expect_tag(text, pos, kHermesCallOpen); st != Step::Done) return st;
    // The call object: the cursor works on the rest of the text.
    const std::string_view rest = text.substr(pos);
    Cursor c(rest);
    if (Step st = c.expect('{'); st != Step::Done) return st;
    out.calls.emplace_back();
    if (Step st = tool_scan::scan_call(c, out.calls.back()); st != Step::Done) return st;
    // The cursor only finds where the arguments end; under tool_choice auto
    // no grammar wrote them, so a complete call's arguments must be checked.
    const auto args = nlohmann::json::parse(out.calls.back().arguments, nullptr, /*allow_exceptions=*/false);
    if (args.is_discarded() || !args.is_object()) return Step::Bad;
    pos += c.pos();
    if (Step st = expect_tag(text, pos, kHermesCallClose); st != Step::Done) return st;
    while (pos < text.size() && tool_scan::is_blank(text[pos])) ++pos;
    if (pos == text.size()) return Step::Done;
  }
}

}  // namespace

ToolCallScan scan_hermes_calls(std::string_view text) {
  ToolCallScan out;
  const size_t open = text.find(kHermesCallOpen);
  if (open == std::string_view::npos) {
    out.kind = text.find_first_not_of(" \t\r\n") == std::string_view::npos ? ToolCallScan::Kind::Undecided
                                                                           : ToolCallScan::Kind::Text;
    out.content_end = text.size();
    out.content_safe = text.size() - partial_tag_tail(text, kHermesCallOpen);
    return out;
  }
  out.kind = ToolCallScan::Kind::Calls;
  out.content_end = out.content_safe = open;
  const Step st = scan_blocks(text, open, out);
  out.valid = st != Step::Bad;
  out.complete = st == Step::Done;
  return out;
}

Expected<std::string> hermes_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice) {
  if (choice.mode != ToolChoiceMode::Required && choice.mode != ToolChoiceMode::Named) {
    return InvalidArgument("the Hermes tool format constrains only tool_choice 'required' or a named function");
  }
  STRIDE_ASSIGN_OR_RETURN(ToolCallRules calls, tool_call_rules(tools, choice));
  const bool many = choice.parallel && choice.mode != ToolChoiceMode::Named;
  std::string frame = "call ::= " + calls.call + "\n";
  frame += "block ::= " + grammar::gbnf_literal(std::string(kHermesCallOpen) + "\n") + " call " +
           grammar::gbnf_literal("\n" + std::string(kHermesCallClose)) + "\n";
  const std::string more = "( \"\\n\" block ){0," + std::to_string(kMaxCallsPerReply - 1) + "}";
  frame += "root ::= block " + (many ? more : std::string()) + "\n";
  return frame + calls.rules;
}

}  // namespace stride::serving
