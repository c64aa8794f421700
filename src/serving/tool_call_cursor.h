#pragma once
// A cursor over a tool-call reply that may stop anywhere (it is being
// written), shared by the tool formats whose calls are JSON objects
// {"name": ..., "arguments": {...}}.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "serving/tool_call_scan.h"

namespace stride::serving::tool_scan {

inline bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A cursor over a text that may stop anywhere. Each read returns Done when
// it consumed a whole item, More when the text ended inside it, Bad when the
// text cannot be the format.
enum class Step { Done, More, Bad };

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  size_t pos() const { return i_; }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return s_[i_]; }
  void skip_blank() {
    while (i_ < s_.size() && is_blank(s_[i_])) ++i_;
  }
  Step expect(char c) {
    skip_blank();
    if (at_end()) return Step::More;
    if (s_[i_] != c) return Step::Bad;
    ++i_;
    return Step::Done;
  }
  // A JSON string; `decoded` is set when it is complete.
  Step string(std::string& decoded) {
    skip_blank();
    const size_t start = i_;
    Step st = skip_string();
    if (st != Step::Done) return st;
    auto j = nlohmann::json::parse(s_.substr(start, i_ - start), nullptr, false);
    if (j.is_discarded() || !j.is_string()) return Step::Bad;
    decoded = j.get<std::string>();
    return Step::Done;
  }
  // One JSON value, not checked beyond its nesting and strings: the grammar
  // wrote it; this only finds where it ends. `raw` is its text so far.
  Step value(std::string& raw) {
    skip_blank();
    const size_t start = i_;
    Step st = skip_value();
    raw = std::string(s_.substr(start, i_ - start));
    return st;
  }

 private:
  Step skip_string() {
    if (at_end()) return Step::More;
    if (s_[i_] != '"') return Step::Bad;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') {
        ++i_;
      } else if (s_[i_] == '"') {
        ++i_;
        return Step::Done;
      }
    }
    i_ = s_.size();
    return Step::More;
  }
  Step skip_value() {
    if (at_end()) return Step::More;
    if (s_[i_] == '"') return skip_string();
    if (s_[i_] != '{' && s_[i_] != '[') {  // a number or a literal: up to a delimiter
      while (i_ < s_.size() && !is_blank(s_[i_]) && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']') ++i_;
      return at_end() ? Step::More : Step::Done;
    }
    int depth = 0;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '"') {
        if (Step st = skip_string(); st != Step::Done) return st;
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      if (c == '}' || c == ']') --depth;
      ++i_;
      if (depth == 0) return Step::Done;
    }
    return Step::More;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// Length of the longest tail of `text` that is a proper prefix of `tag`: it
// may still become the tag.
size_t partial_tag_tail(std::string_view text, std::string_view tag);

// `tag` at `pos` (after blank space): Done (pos moves past it), More when
// the text ends inside it, Bad otherwise.
Step expect_tag(std::string_view text, size_t& pos, std::string_view tag);

// One call object after its "{": its keys in any order, "name" and
// "arguments" ("parameters" too: Llama-style models write it) read, others skipped.
Step scan_call(Cursor& c, ScannedCall& call);

}  // namespace stride::serving::tool_scan
