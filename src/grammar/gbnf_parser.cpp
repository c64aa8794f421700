#include "grammar/gbnf_parser.h"

#include "grammar/utf8_ranges.h"

namespace stride::grammar {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

class Parser {
 public:
  Parser(std::string_view text, const GrammarLimits& limits) : s_(text), limits_(limits) {}

  Expected<GrammarAst> run() {
    if (s_.size() > limits_.max_text_bytes) {
      return InvalidArgument("grammar: the text is longer than " + std::to_string(limits_.max_text_bytes) + " bytes");
    }
    GrammarAst ast;
    skip_space();
    while (i_ < s_.size()) {
      const size_t at = i_;
      std::string name = read_name();
      if (name.empty()) return fail("expected a rule name");
      skip_space();
      if (s_.substr(i_, 3) != "::=") return fail("expected '::=' after the rule name '" + name + "'");
      i_ += 3;
      GrammarNode body;
      if (!parse_choice(body, 0)) return error_;
      if (ast.index.count(name)) {
        i_ = at;
        return fail("the rule '" + name + "' is defined twice");
      }
      if (ast.names.size() >= limits_.max_rules) return fail("too many rules");
      ast.index[name] = ast.names.size();
      ast.names.push_back(std::move(name));
      ast.bodies.push_back(std::move(body));
      skip_space();
    }
    if (!ast.find("root")) return InvalidArgument("grammar: there is no 'root' rule");
    for (size_t r = 0; r < ast.bodies.size(); ++r) {
      if (std::string missing = undefined_ref(ast, ast.bodies[r]); !missing.empty()) {
        return InvalidArgument("grammar: the rule '" + ast.names[r] + "' refers to '" + missing +
                               "', which is not defined");
      }
    }
    return ast;
  }

 private:
  static std::string undefined_ref(const GrammarAst& ast, const GrammarNode& n) {
    if (n.kind == GrammarNode::Kind::RuleRef && !ast.index.count(n.rule)) return n.rule;
    for (const GrammarNode& c : n.children)
      if (std::string m = undefined_ref(ast, c); !m.empty()) return m;
    return "";
  }

  Status fail(const std::string& what) {
    int line = 1, col = 1;
    for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = InvalidArgument("grammar: line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
    return error_;
  }
  bool failed(const std::string& what) {
    (void)fail(what);
    return false;
  }

  void skip_space() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  std::string read_name() {
    const size_t start = i_;
    while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  // True when the text at i_ starts the next rule definition.
  bool at_rule_start() {
    size_t k = i_;
    while (k < s_.size() && is_name_char(s_[k])) ++k;
    if (k == i_) return false;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t' || s_[k] == '\n' || s_[k] == '\r')) ++k;
    return s_.substr(k, 3) == "::=";
  }

  bool parse_choice(GrammarNode& out, int depth) {
    if (depth > limits_.max_nesting) return failed("groups are nested too deeply");
    out.kind = GrammarNode::Kind::Choice;
    for (;;) {
      GrammarNode seq;
      if (!parse_sequence(seq, depth)) return false;
      out.children.push_back(std::move(seq));
      skip_space();
      if (i_ < s_.size() && s_[i_] == '|') {
        ++i_;
        continue;
      }
      break;
    }
    if (out.children.size() == 1) {
      GrammarNode only = std::move(out.children[0]);
      out = std::move(only);
    }
    return true;
  }

  bool parse_sequence(GrammarNode& out, int depth) {
    out.kind = GrammarNode::Kind::Sequence;
    for (;;) {
      skip_space();
      if (i_ >= s_.size() || s_[i_] == '|' || s_[i_] == ')' || at_rule_start()) break;
      GrammarNode item;
      if (!parse_primary(item, depth)) return false;
      if (!parse_postfix(item)) return false;
      out.children.push_back(std::move(item));
    }
    if (out.children.size() == 1) {
      GrammarNode only = std::move(out.children[0]);
      out = std::move(only);
    }
    return true;
  }

  bool parse_primary(GrammarNode& out, int depth) {
    const char c = s_[i_];
    if (c == '"') {
      ++i_;
      out.kind = GrammarNode::Kind::Literal;
      while (i_ < s_.size() && s_[i_] != '"') {
        uint32_t cp = 0;
        if (!read_char(cp, "string")) return false;
        append_utf8(cp, out.bytes);
      }
      if (i_ >= s_.size()) return failed("unterminated string literal");
      ++i_;
      return true;
    }
    if (c == '[') return parse_class(out);
    if (c == '.') {
      ++i_;
      out.kind = GrammarNode::Kind::CharClass;
      out.chars = normalize({{0, kMaxCodepoint}});
      return true;
    }
    if (c == '(') {
      ++i_;
      if (!parse_choice(out, depth + 1)) return false;
      skip_space();
      if (i_ >= s_.size() || s_[i_] != ')') return failed("expected ')'");
      ++i_;
      return true;
    }
    if (is_name_char(c)) {
      out.kind = GrammarNode::Kind::RuleRef;
      out.rule = read_name();
      return true;
    }
    return failed(std::string("unexpected character '") + c + "'");
  }

  bool parse_class(GrammarNode& out) {
    ++i_;  // '['
    bool negated = false;
    if (i_ < s_.size() && s_[i_] == '^') {
      negated = true;
      ++i_;
    }
    CodepointSet set;
    while (i_ < s_.size() && s_[i_] != ']') {
      uint32_t lo = 0, hi = 0;
      if (!read_char(lo, "class")) return false;
      hi = lo;
      if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']') {
        ++i_;
        if (!read_char(hi, "class")) return false;
        if (hi < lo) return failed("a class range ends before it starts");
      }
      set.push_back({lo, hi});
    }
    if (i_ >= s_.size()) return failed("unterminated character class");
    ++i_;
    set = normalize(std::move(set));
    if (negated) set = complement(set);
    if (set.empty()) return failed("the character class matches no character");
    out.kind = GrammarNode::Kind::CharClass;
    out.chars = std::move(set);
    return true;
  }

  bool read_hex(int digits, uint32_t& cp) {
    cp = 0;
    for (int k = 0; k < digits; ++k) {
      if (i_ >= s_.size()) return failed("a hex escape ends early");
      const char h = s_[i_++];
      int v = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
      if (v < 0) return failed("bad hex digit in an escape");
      cp = cp * 16 + (uint32_t)v;
    }
    if (cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) return failed("the escape is not a Unicode scalar value");
    return true;
  }

  // One character of a literal or class: an escape or one UTF-8 character.
  bool read_char(uint32_t& cp, const char* where) {
    const unsigned char c = (unsigned char)s_[i_];
    if (c == '\\') {
      if (++i_ >= s_.size()) return failed(std::string("unterminated ") + where);
      const char e = s_[i_++];
      switch (e) {
        case 'n': cp = '\n'; return true;
        case 'r': cp = '\r'; return true;
        case 't': cp = '\t'; return true;
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': cp = (uint32_t)e; return true;
        case 'x': return read_hex(2, cp);
        case 'u': return read_hex(4, cp);
        case 'U': return read_hex(8, cp);
        default: i_ -= 2; return failed(std::string("unknown escape '\\") + e + "'");
      }
    }
    const int n = decode_utf8(s_, i_, cp);
    if (n == 0) return failed("the grammar text is not valid UTF-8");
    i_ += (size_t)n;
    return true;
  }

  bool read_count(int& v) {
    const size_t start = i_;
    int64_t x = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      x = x * 10 + (s_[i_++] - '0');
      if (x > limits_.max_repeat) return failed("repeat counts are limited to " + std::to_string(limits_.max_repeat));
    }
    if (i_ == start) return failed("expected a number in {m,n}");
    v = (int)x;
    return true;
  }

  // One operator per item (`x**` is refused: write `(x*)*`), so the tree
  // depth stays bounded by the group nesting.
  bool parse_postfix(GrammarNode& item) {
    for (int seen = 0;; ++seen) {
      if (i_ >= s_.size()) return true;
      if (seen == 1 && (s_[i_] == '*' || s_[i_] == '+' || s_[i_] == '?' || s_[i_] == '{')) {
        return failed("two repetition operators in a row; use a group");
      }
      if (seen == 1) return true;
      const char c = s_[i_];
      int lo = 0, hi = -1;
      if (c == '*') {
        ++i_;
      } else if (c == '+') {
        ++i_;
        lo = 1;
      } else if (c == '?') {
        ++i_;
        hi = 1;
      } else if (c == '{') {
        ++i_;
        skip_space();
        if (!read_count(lo)) return false;
        skip_space();
        hi = lo;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          skip_space();
          hi = -1;
          if (i_ < s_.size() && s_[i_] != '}' && !read_count(hi)) return false;
          skip_space();
        }
        if (i_ >= s_.size() || s_[i_] != '}') return failed("expected '}'");
        ++i_;
        if (hi >= 0 && hi < lo) return failed("{m,n} needs m <= n");
      } else {
        return true;
      }
      GrammarNode rep;
      rep.kind = GrammarNode::Kind::Repeat;
      rep.min = lo;
      rep.max = hi;
      rep.children.push_back(std::move(item));
      item = std::move(rep);
    }
  }

  std::string_view s_;
  const GrammarLimits& limits_;
  size_t i_ = 0;
  Status error_;
};

}  // namespace

Expected<GrammarAst> parse_gbnf(std::string_view text, const GrammarLimits& limits) {
  return Parser(text, limits).run();
}

}  // namespace stride::grammar
