#include "serving/tool_call_cursor.h"

#include <algorithm>

namespace stride::serving::tool_scan {

size_t partial_tag_tail(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

Step expect_tag(std::string_view text, size_t& pos, std::string_view tag) {
  while (pos < text.size() && is_blank(text[pos])) ++pos;
  const std::string_view rest = text.substr(pos);
  if (rest.size() < tag.size()) return tag.substr(0, rest.size()) == rest ? Step::More : Step::Bad;
  if (rest.substr(0, tag.size()) != tag) return Step::Bad;
  pos += tag.size();
  return Step::Done;
}

Step scan_call(Cursor& c, ScannedCall& call) {
  for (bool first = true;; first = false) {
    c.skip_blank();
    if (c.at_end()) return Step::More;
    if (c.peek() == '}') {
      c.expect('}');
      call.done = call.name_done && call.arguments_done;
      return call.done ? Step::Done : Step::Bad;
    }
    if (!first) {
      if (Step st = c.expect(','); st != Step::Done) return st;
    }
    std::string key;
    if (Step st = c.string(key); st != Step::Done) return st;
    if (Step st = c.expect(':'); st != Step::Done) return st;
    if (key == "name") {
      std::string name;
      c.skip_blank();
      if (Step st = c.string(name); st != Step::Done) return st;
      call.name = std::move(name);
      call.name_done = true;
    } else if (key == "arguments" || (key == "parameters" && !call.arguments_done)) {
      Step st = c.value(call.arguments);
      if (st != Step::Done) return st;
      call.arguments_done = true;
    } else {
      std::string skipped;
      if (Step st = c.value(skipped); st != Step::Done) return st;
    }
  }
}

}  // namespace stride::serving::tool_scan
