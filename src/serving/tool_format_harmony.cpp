#include "serving/tool_format_harmony.h"

#include <algorithm>

#include "grammar/gbnf_text.h"
#include "serving/tool_call_cursor.h"

namespace stride::serving {

namespace {

using tool_scan::Cursor;
using tool_scan::Step;

constexpr size_t kMaxHeaderBytes = 1024;
constexpr std::string_view kFunctions = "functions.";
constexpr std::string_view kMarkers[] = {kHarmonyStart, kHarmonyChannel, kHarmonyMessage, kHarmonyConstrain,
                                         kHarmonyEnd,   kHarmonyCall,    kHarmonyReturn};

bool starts_with_at(std::string_view text, size_t pos, std::string_view tag) {
  return text.substr(pos, tag.size()) == tag;
}

// Length of the tail of `text` that may still become a marker.
size_t marker_tail(std::string_view text) {
  size_t longest = 0;
  for (std::string_view m : kMarkers) longest = std::max(longest, tool_scan::partial_tag_tail(text, m));
  return longest;
}

// The text is (a proper prefix of) `tag` at pos.
bool partial_at(std::string_view text, size_t pos, std::string_view tag) {
  const std::string_view rest = text.substr(pos);
  return rest.size() < tag.size() && tag.substr(0, rest.size()) == rest;
}

// The recipient named by "to=R" in a header, or "".
std::string recipient_of(std::string_view header) {
  const size_t at = header.find("to=");
  if (at == std::string_view::npos) return {};
  size_t end = at + 3;
  while (end < header.size() && header[end] != ' ' && header[end] != '<') ++end;
  return std::string(header.substr(at + 3, end - at - 3));
}

// The first word of a channel header ("commentary to=... <|constrain|>json").
std::string_view channel_of(std::string_view header) {
  const size_t end = header.find_first_of(" <");
  return header.substr(0, end);
}

// One message's header after pos: [<|start|>ROLE]<|channel|>CHANNEL<|message|>.
// Done: role and channel headers set, pos at the body.
Step read_header(std::string_view text, size_t& pos, std::string_view& role, std::string_view& channel) {
  if (starts_with_at(text, pos, kHarmonyStart)) {
    pos += kHarmonyStart.size();
    const size_t lt = text.find("<|", pos);
    if (lt == std::string_view::npos) return text.size() - pos > kMaxHeaderBytes ? Step::Bad : Step::More;
    if (lt - pos > kMaxHeaderBytes) return Step::Bad;
    role = text.substr(pos, lt - pos);
    pos = lt;
  } else if (partial_at(text, pos, kHarmonyStart)) {
    return Step::More;
  }
  if (starts_with_at(text, pos, kHarmonyChannel)) {
    pos += kHarmonyChannel.size();
    const size_t msg = text.find(kHarmonyMessage, pos);
    const std::string_view head = text.substr(pos, msg == std::string_view::npos ? std::string_view::npos : msg - pos);
    if (head.size() > kMaxHeaderBytes) return Step::Bad;
    // Only <|constrain|> may sit inside a channel header (and, at the end
    // of the text so far, the start of <|message|>).
    for (size_t lt = head.find("<|"); lt != std::string_view::npos; lt = head.find("<|", lt + 1)) {
      const bool ok = starts_with_at(head, lt, kHarmonyConstrain) || partial_at(head, lt, kHarmonyConstrain) ||
                      (msg == std::string_view::npos && partial_at(head, lt, kHarmonyMessage));
      if (!ok) return Step::Bad;
    }
    if (msg == std::string_view::npos) return Step::More;
    channel = head;
    pos = msg + kHarmonyMessage.size();
    return Step::Done;
  }
  if (partial_at(text, pos, kHarmonyChannel) || partial_at(text, pos, kHarmonyMessage)) return Step::More;
  if (starts_with_at(text, pos, kHarmonyMessage)) {
    pos += kHarmonyMessage.size();
    return Step::Done;
  }
  return Step::Bad;
}

// Where the body starting at pos ends (the first end marker), or npos.
size_t body_end(std::string_view text, size_t pos, std::string_view& marker) {
  size_t best = std::string_view::npos;
  for (std::string_view m : {kHarmonyEnd, kHarmonyCall, kHarmonyReturn}) {
    const size_t at = text.find(m, pos);
    if (at < best) {
      best = at;
      marker = m;
    }
  }
  return best;
}

// A call's body: its arguments so far; Done once they are a whole JSON value.
Step read_call_body(std::string_view body, bool ended, ScannedCall& call) {
  Cursor c(body);
  c.skip_blank();
  if (c.at_end()) {
    call.arguments.clear();
    return ended ? Step::Bad : Step::More;
  }
  Step st = c.value(call.arguments);
  if (st == Step::Done) {
    c.skip_blank();
    const auto args = nlohmann::json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
    if (!c.at_end() || args.is_discarded() || !args.is_object()) return Step::Bad;
    call.arguments_done = call.done = true;
  }
  return st == Step::More && ended ? Step::Bad : st;
}

}  // namespace

ToolCallScan scan_harmony_reply(std::string_view text) {
  ToolCallScan out;
  out.channels = true;
  const bool opens = starts_with_at(text, 0, kHarmonyChannel) || starts_with_at(text, 0, kHarmonyStart) ||
                     starts_with_at(text, 0, kHarmonyMessage);
  if (text.empty() || partial_at(text, 0, kHarmonyChannel) || partial_at(text, 0, kHarmonyStart) ||
      partial_at(text, 0, kHarmonyMessage)) {
    return out;  // Undecided
  }
  out.kind = ToolCallScan::Kind::Text;
  if (!opens) {  // not harmony at all: plain content
    out.content = std::string(text);
    out.content_end = out.content_safe = out.content.size();
    return out;
  }
  size_t pos = 0;
  bool bad = false;
  while (pos < text.size()) {
    const size_t message_start = pos;
    std::string_view role, channel;
    const Step head = read_header(text, pos, role, channel);
    if (head == Step::More) break;
    if (head == Step::Bad) {  // the rest is text
      out.content += text.substr(message_start);
      break;
    }
    std::string_view end_marker;
    const size_t end = body_end(text, pos, end_marker);
    const bool ended = end != std::string_view::npos;
    const std::string_view body =
        ended ? text.substr(pos, end - pos) : text.substr(pos, text.size() - pos - marker_tail(text.substr(pos)));
    std::string recipient = recipient_of(role);
    if (recipient.empty()) recipient = recipient_of(channel);
    if (!recipient.empty()) {
      ScannedCall call;
      call.name = starts_with_at(recipient, 0, kFunctions) ? recipient.substr(kFunctions.size()) : recipient;
      call.name_done = true;
      const Step st = read_call_body(body, ended, call);
      out.calls.push_back(std::move(call));
      bad = bad || st == Step::Bad;
    } else if (channel_of(channel) == "analysis") {
      out.reasoning += body;
    } else {
      out.content += body;
    }
    if (!ended) break;
    pos = end + end_marker.size();
    if (end_marker != kHarmonyEnd) break;  // <|call|> and <|return|> end the turn
  }
  out.content_end = out.content_safe = out.content.size();
  out.reasoning_safe = out.reasoning.size();
  if (!out.calls.empty()) {
    out.kind = ToolCallScan::Kind::Calls;
    out.valid = !bad;
    out.complete = std::all_of(out.calls.begin(), out.calls.end(), [](const ScannedCall& c) { return c.done; });
  }
  return out;
}

Expected<std::string> harmony_call_gbnf(const std::vector<ToolSpec>& tools, const ToolChoice& choice) {
  if (choice.mode != ToolChoiceMode::Required && choice.mode != ToolChoiceMode::Named) {
    return InvalidArgument("the harmony tool format constrains only tool_choice 'required' or a named function");
  }
  STRIDE_ASSIGN_OR_RETURN(ToolCallRules calls, tool_call_rules(tools, choice));
  std::string frame, root;
  for (const auto& [name, prefix] : calls.allowed) {
    const std::string header = std::string(kHarmonyChannel) + "commentary to=" + std::string(kFunctions) + name + " " +
                               std::string(kHarmonyConstrain) + "json" + std::string(kHarmonyMessage);
    frame += prefix + "message ::= " + grammar::gbnf_literal(header) + " " + prefix + "root\n";
    root += (root.empty() ? "" : " | ") + prefix + "message";
  }
  // gpt-oss makes one call per turn: <|call|> (an end token) follows it.
  return "root ::= " + root + "\n" + frame + calls.rules;
}

}  // namespace stride::serving
