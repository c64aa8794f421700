#include "serving/tool_call_scan.h"

#include "serving/tool_call_cursor.h"

namespace stride::serving {

namespace {

using tool_scan::Cursor;
using tool_scan::is_blank;
using tool_scan::Step;
using tool_scan::scan_call;

Step scan_calls(Cursor& c, ToolCallScan& out) {
  if (Step st = c.expect('{'); st != Step::Done) return st;
  std::string key;
  if (Step st = c.string(key); st != Step::Done) return st;
  if (key != "tool_calls") return Step::Bad;
  if (Step st = c.expect(':'); st != Step::Done) return st;
  if (Step st = c.expect('['); st != Step::Done) return st;
  for (bool first = true;; first = false) {
    c.skip_blank();
    if (c.at_end()) return Step::More;
    if (c.peek() == ']') break;
    if (!first) {
      if (Step st = c.expect(','); st != Step::Done) return st;
    }
    if (Step st = c.expect('{'); st != Step::Done) return st;
    out.calls.emplace_back();
    if (Step st = scan_call(c, out.calls.back()); st != Step::Done) return st;
  }
  c.expect(']');
  if (Step st = c.expect('}'); st != Step::Done) return st;
  c.skip_blank();
  return c.at_end() && !out.calls.empty() ? Step::Done : Step::Bad;
}

}  // namespace

ToolCallScan scan_tool_calls(std::string_view text) {
  ToolCallScan out;
  size_t first = 0;
  while (first < text.size() && is_blank(text[first])) ++first;
  if (first == text.size()) return out;
  if (text[first] != '{') {
    out.kind = ToolCallScan::Kind::Text;
    out.content_end = out.content_safe = text.size();
    return out;
  }
  out.kind = ToolCallScan::Kind::Calls;
  Cursor c(text);
  const Step st = scan_calls(c, out);
  out.valid = st != Step::Bad;
  out.complete = st == Step::Done;
  return out;
}

}  // namespace stride::serving
