#include "serving/tool_format_mistral.h"

#include <cstdint>

#include "grammar/gbnf_text.h"
#include "serving/tool_call_cursor.h"

namespace stride::serving {

namespace {

using tool_scan::Cursor;
using tool_scan::Step;
using tool_scan::expect_tag;

constexpr size_t kMaxNameBytes = 256;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

// A complete call's arguments: under tool_choice auto no grammar wrote them.
bool object_text(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !j.is_discarded() && j.is_object();
}

// Reads `tag` at pos when the text there is (a prefix of) it.
Step tag_at(std::string_view text, size_t pos, std::string_view tag) {
  const std::string_view rest = text.substr(pos, tag.size());
  if (rest != tag.substr(0, rest.size())) return Step::Bad;
  return rest.size() < tag.size() ? Step::More : Step::Done;
}

// The JSON form after [TOOL_CALLS]: a list of call objects (or one object).
Step scan_json_list(std::string_view text, size_t pos, ToolCallScan& out) {
  Cursor c(text.substr(pos));
  c.skip_blank();
  if (c.at_end()) return Step::More;
  const bool list = c.peek() == '[';
  if (list) c.expect('[');
  for (bool first = true;; first = false) {
    if (!first) {
      c.skip_blank();
      if (c.at_end()) return Step::More;
      if (list && c.peek() == ']') {
        c.expect(']');
        break;
      }
      if (!list) break;
      if (Step st = c.expect(','); st != Step::Done) return st;
    }
    if (out.calls.size() >= (size_t)kMaxCallsPerReply * 16) return Step::Bad;
    if (Step st = c.expect('{'); st != Step::Done) return st;
    out.calls.emplace_back();
    if (Step st = tool_scan::scan_call(c, out.calls.back()); st != Step::Done) return st;
    if (!object_text(out.calls.back().arguments)) return Step::Bad;
  }
  c.skip_blank();
  return c.at_end() ? Step::Done : Step::Bad;
}

// One NAME[CALL_ID]ID[ARGS]{...} after its [TOOL_CALLS]; pos moves past it.
Step scan_args_call(std::string_view text, size_t& pos, ScannedCall& call) {
  size_t end = pos;
  while (end < text.size() && name_char(text[end])) ++end;
  if (end - pos > kMaxNameBytes) return Step::Bad;
  if (end == text.size()) return Step::More;
  if (end == pos || text[end] != '[') return Step::Bad;
  const std::string name(text.substr(pos, end - pos));
  pos = end;
  if (Step st = tag_at(text, pos, kMistralCallIdTag); st != Step::Bad) {
    if (st == Step::More) return st;
    pos += kMistralCallIdTag.size();
    while (pos < text.size() && name_char(text[pos]) && pos - end < kMaxNameBytes) ++pos;
    if (pos == text.size()) return Step::More;
  }
  if (Step st = tag_at(text, pos, kMistralArgsTag); st != Step::Done) return st;
  pos += kMistralArgsTag.size();
  call.name = name;
  call.name_done = true;
  Cursor c(text.substr(pos));
  c.skip_blank();
  if (!c.at_end() && c.peek() != '{') return Step::Bad;
  if (Step st = c.value(call.arguments); st != Step::Done) return st;
  if (!object_text(call.arguments)) return Step::Bad;
  call.arguments_done = call.done = true;
  pos += c.pos();
  return Step::Done;
}

Step scan_args_calls(std::string_view text, size_t pos, ToolCallScan& out) {
  for (;;) {
    if (Step st = expect_tag(text, pos, kMistralCallsTag); st != Step::Done) return st;
    if (out.calls.size() >= (size_t)kMaxCallsPerReply * 16) return Step::Bad;
    out.calls.emplace_back();
    if (Step st = scan_args_call(text, pos, out.calls.back()); st != Step::Done) return st;
    while (pos < text.size() && tool_scan::is_blank(text[pos])) ++pos;
    if (pos == text.size()) return Step::Done;
  }
}

}  // namespace

ToolCallScan scan_mistral_calls(std::string_view text, bool args_form) {
  ToolCallScan out;
  const size_t open = text.find(kMistralCallsTag);
  if (open == std::string_view::npos) {
    out.kind = text.find_first_not_of(" \t\r\n") == std::string_view::npos ? ToolCallScan::Kind::Undecided
                                                                           : ToolCallScan::Kind::Text;
    out.content_end = text.size();
    out.content_safe = text.size() - tool_scan::partial_tag_tail(text, kMistralCallsTag);
    return out;
  }
  out.kind = ToolCallScan::Kind::Calls;
  out.content_end = out.content_safe = open;
  const Step st = args_form ? scan_args_calls(text, open, out)
                            : scan_json_list(text, open + kMistralCallsTag.size(), out);
  // A call still being named is not listed yet.
  if (!out.calls.empty() && !out.calls.back().name_done && st == Step::More) out.calls.pop_back();
  out.valid = st != Step::Bad;
  out.complete = st == Step::Done;
  return out;
}

Expected<std::string> mistral_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice,
                                        bool args_form) {
  if (choice.mode != ToolChoiceMode::Required && choice.mode != ToolChoiceMode::Named) {
    return InvalidArgument("the Mistral tool formats constrain only tool_choice 'required' or a named function");
  }
  STRIDE_ASSIGN_OR_RETURN(ToolCallRules calls, tool_call_rules(tools, choice));
  const bool many = choice.parallel && choice.mode != ToolChoiceMode::Named;
  const std::string repeat = "{0," + std::to_string(kMaxCallsPerReply - 1) + "}";
  const std::string open = grammar::gbnf_literal(std::string(kMistralCallsTag));
  std::string frame;
  if (args_form) {
    std::string call;
    for (const auto& [name, prefix] : calls.allowed) {
      frame += prefix + "named ::= " + open + " " + grammar::gbnf_literal(name + std::string(kMistralArgsTag)) + " " +
               prefix + "root\n";
      call += (call.empty() ? "" : " | ") + prefix + "named";
    }
    frame += "call ::= " + call + "\n";
    frame += "root ::= call " + (many ? "( call )" + repeat : std::string()) + "\n";
  } else {
    frame += "call ::= " + calls.call + "\n";
    frame += "root ::= " + open + " \"[\" call " + (many ? "( \", \" call )" + repeat + " " : std::string()) + "\"]\"\n";
  }
  return frame + calls.rules;
}

std::string mistral_call_id(std::string_view id) {
  bool ok = id.size() == 9;
  for (char c : id) ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'));
  if (ok) return std::string(id);
  uint64_t h = 1469598103934665603ull;  // FNV-1a: stable across runs and builds
  for (char c : id) h = (h ^ (unsigned char)c) * 1099511628211ull;
  static constexpr char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < 9; ++i, h /= 62) out += kChars[h % 62];
  return out;
}

}  // namespace stride::serving
