#include "grammar/schema_pattern.h"

#include <algorithm>

#include "grammar/gbnf_text.h"
#include "grammar/grammar_ast.h"
#include "grammar/utf8_ranges.h"

namespace stride::grammar {

namespace {

constexpr int kMaxDepth = 32;
constexpr int kMaxRepeat = 1000;

CodepointSet digits() { return {{'0', '9'}}; }
CodepointSet word() { return normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
CodepointSet space() { return normalize({{'\t', '\r'}, {' ', ' '}, {0xA0, 0xA0}, {0x2028, 0x2029}}); }
// \D \W \S: ASCII only, because Python's re (what validators use) counts
// Unicode digits, letters and spaces in \d \w \s.
CodepointSet ascii_complement(const CodepointSet& s) {
  CodepointSet out;
  for (const CodepointRange& r : complement(s))
    if (r.lo < 0x80) out.push_back({r.lo, std::min<uint32_t>(r.hi, 0x7F)});
  return out;
}

class PatternParser {
 public:
  explicit PatternParser(std::string_view p) : p_(p) {}

  Expected<std::string> run(const std::string& json_char) {
    bool anchored_start = false, anchored_end = false;
    if (!p_.empty() && p_[0] == '^') {
      anchored_start = true;
      ++i_;
    }
    size_t backslashes = 0;  // before a final '$': an odd count escapes it
    while (p_.size() >= 2 + backslashes && p_[p_.size() - 2 - backslashes] == '\\') ++backslashes;
    if (p_.size() > i_ && p_.back() == '$' && backslashes % 2 == 0) {
      anchored_end = true;
      p_.remove_suffix(1);
    }
    std::string body;
    if (!alternation(body, 0)) return error_;
    if (i_ != p_.size()) return fail("unexpected ')'");
    std::string out = "( " + body + " )";
    if (!anchored_start) out = json_char + "* " + out;
    if (!anchored_end) out += " " + json_char + "*";
    return out;
  }

 private:
  Status fail(const std::string& what) {
    error_ = InvalidArgument("pattern: " + what + " (at offset " + std::to_string(i_) + ")");
    return error_;
  }
  bool failed(const std::string& what) {
    (void)fail(what);
    return false;
  }

  bool alternation(std::string& out, int depth) {
    if (depth > kMaxDepth) return failed("groups are nested too deeply");
    std::string seq;
    if (!sequence(seq, depth)) return false;
    out = seq;
    while (i_ < p_.size() && p_[i_] == '|') {
      ++i_;
      if (!sequence(seq, depth)) return false;
      out += " | " + seq;
    }
    return true;
  }

  bool sequence(std::string& out, int depth) {
    out = "\"\"";
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      std::string atom;
      if (!parse_atom(atom, depth)) return false;
      if (!quantifier(atom)) return false;
      out += " " + atom;
    }
    return true;
  }

  bool quantifier(std::string& atom) {
    if (i_ >= p_.size()) return true;
    const char c = p_[i_];
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++i_;
    } else if (c == '{') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) return failed("unterminated {m,n}");
      const std::string inner(p_.substr(i_ + 1, close - i_ - 1));
      int lo = 0, hi = -1;
      const size_t comma = inner.find(',');
      auto number = [&](const std::string& s, int& v) {
        if (s.empty() || s.size() > 4 || s.find_first_not_of("0123456789") != std::string::npos) return false;
        v = std::stoi(s);
        return v <= kMaxRepeat;
      };
      if (!number(comma == std::string::npos ? inner : inner.substr(0, comma), lo)) {
        return failed("bad or too large {m,n} (at most " + std::to_string(kMaxRepeat) + ")");
      }
      hi = lo;
      if (comma != std::string::npos) {
        hi = -1;
        if (comma + 1 < inner.size() && !number(inner.substr(comma + 1), hi)) return failed("bad or too large {m,n}");
      }
      if (hi >= 0 && hi < lo) return failed("{m,n} needs m <= n");
      q = "{";
      q += std::to_string(lo);
      if (comma != std::string::npos) {
        q += ',';
        if (hi >= 0) q += std::to_string(hi);
      }
      q += '}';
      i_ = close + 1;
    } else {
      return true;
    }
    if (i_ < p_.size() && (p_[i_] == '?' || p_[i_] == '+')) return failed("lazy and possessive quantifiers are not supported");
    if (i_ < p_.size() && (p_[i_] == '*' || p_[i_] == '{')) return failed("two quantifiers in a row");
    atom = "( " + atom + " )" + q;
    return true;
  }

  // One character (code point) of the pattern text, UTF-8 decoded.
  bool read_codepoint(uint32_t& cp) {
    const int n = decode_utf8(p_, i_, cp);
    if (n == 0) return failed("the pattern is not valid UTF-8");
    i_ += (size_t)n;
    return true;
  }

  // An escape after '\': a set of characters.
  bool escape(CodepointSet& set) {
    if (i_ >= p_.size()) return failed("the pattern ends with '\\'");
    const char e = p_[i_++];
    switch (e) {
      case 'd': set = digits(); return true;
      case 'D': set = ascii_complement(digits()); return true;
      case 'w': set = word(); return true;
      case 'W': set = ascii_complement(word()); return true;
      case 's': set = space(); return true;
      case 'S': set = ascii_complement(space()); return true;
      case 'n': set = {{'\n', '\n'}}; return true;
      case 'r': set = {{'\r', '\r'}}; return true;
      case 't': set = {{'\t', '\t'}}; return true;
      case 'u': {
        if (i_ + 4 > p_.size()) return failed("\\u needs 4 hex digits");
        const std::string hex(p_.substr(i_, 4));
        if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return failed("bad \\u escape");
        const uint32_t cp = (uint32_t)std::stoul(hex, nullptr, 16);
        i_ += 4;
        set = normalize({{cp, cp}});
        if (set.empty()) return failed("\\u escapes of surrogates are not supported");
        return true;
      }
      default:
        if (std::string_view("\\/.^$|?*+()[]{}-\"'").find(e) != std::string_view::npos) {
          set = {{(uint32_t)(unsigned char)e, (uint32_t)(unsigned char)e}};
          return true;
        }
        --i_;
        return failed(std::string("the escape \\") + e + " is not supported");
    }
  }

  bool char_class(CodepointSet& out) {
    ++i_;  // '['
    bool negated = false;
    if (i_ < p_.size() && p_[i_] == '^') {
      negated = true;
      ++i_;
    }
    CodepointSet set;
    bool first = true;
    while (i_ < p_.size() && (p_[i_] != ']' || first)) {
      first = false;
      CodepointSet item;
      uint32_t lo = 0;
      bool single = true;
      if (p_[i_] == '\\') {
        ++i_;
        if (!escape(item)) return false;
        single = item.size() == 1 && item[0].lo == item[0].hi;
        lo = item.empty() ? 0 : item[0].lo;
      } else {
        if (!read_codepoint(lo)) return false;
        item = {{lo, lo}};
      }
      if (single && i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi = 0;
        if (p_[i_] == '\\') {
          ++i_;
          CodepointSet h;
          if (!escape(h)) return false;
          if (h.size() != 1 || h[0].lo != h[0].hi) return failed("a class range ends in a class");
          hi = h[0].lo;
        } else if (!read_codepoint(hi)) {
          return false;
        }
        if (hi < lo) return failed("a class range ends before it starts");
        item = {{lo, hi}};
      }
      set.insert(set.end(), item.begin(), item.end());
    }
    if (i_ >= p_.size()) return failed("unterminated character class");
    ++i_;
    set = normalize(std::move(set));
    out = negated ? complement(set) : set;
    return true;
  }

  // A set of characters as JSON string content: `"` and `\` escaped, control
  // characters left out (never generated).
  static std::string json_chars(CodepointSet set) {
    const CodepointSet plain = [&] {
      CodepointSet keep;
      for (const CodepointRange& r : complement(normalize({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}))) keep.push_back(r);
      // set ∩ keep
      CodepointSet out;
      for (const CodepointRange& a : set)
        for (const CodepointRange& b : keep) {
          const uint32_t lo = std::max(a.lo, b.lo), hi = std::min(a.hi, b.hi);
          if (lo <= hi) out.push_back({lo, hi});
        }
      return normalize(out);
    }();
    std::vector<std::string> alts;
    if (!plain.empty()) alts.push_back(gbnf_class(plain));
    if (contains(set, '"')) alts.push_back("\"\\\\\\\"\"");   // the two bytes \"
    if (contains(set, '\\')) alts.push_back("\"\\\\\\\\\"");  // the two bytes \\  (escaped)
    if (alts.empty()) return "";
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : " ") + alts[k];
    return out + " )";
  }

  bool set_atom(const CodepointSet& set, std::string& out) {
    out = json_chars(set);
    if (out.empty()) return failed("the pattern needs a character that stride does not generate (a control character)");
    return true;
  }

  bool parse_atom(std::string& out, int depth) {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (p_.substr(i_, 2) == "?:") {
        i_ += 2;
      } else if (i_ < p_.size() && p_[i_] == '?') {
        return failed("lookaround and named groups are not supported");
      }
      std::string inner;
      if (!alternation(inner, depth + 1)) return false;
      if (i_ >= p_.size() || p_[i_] != ')') return failed("expected ')'");
      ++i_;
      out = "( " + inner + " )";
      return true;
    }
    if (c == '[') {
      CodepointSet set;
      return char_class(set) && set_atom(set, out);
    }
    if (c == '.') {
      ++i_;
      return set_atom(complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}), out);
    }
    if (c == '\\') {
      ++i_;
      if (i_ < p_.size() && (p_[i_] == 'b' || p_[i_] == 'B' || (p_[i_] >= '1' && p_[i_] <= '9'))) {
        return failed("word boundaries and backreferences are not supported");
      }
      CodepointSet set;
      return escape(set) && set_atom(set, out);
    }
    if (c == '^' || c == '$') return failed("anchors are supported only at the start and the end");
    if (c == '*' || c == '+' || c == '?' || c == '{') return failed("a quantifier follows nothing");
    uint32_t cp = 0;
    if (!read_codepoint(cp)) return false;
    return set_atom({{cp, cp}}, out);
  }

  std::string_view p_;
  size_t i_ = 0;
  Status error_;
};

}  // namespace

Expected<std::string> pattern_to_gbnf(std::string_view pattern, const std::string& json_char) {
  if (pattern.size() > 4096) return InvalidArgument("pattern: longer than 4096 bytes");
  return PatternParser(pattern).run(json_char);
}

}  // namespace stride::grammar
