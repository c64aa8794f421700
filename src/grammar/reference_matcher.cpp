#include "grammar/reference_matcher.h"

#include <algorithm>
#include <functional>
#include <string>

#include "grammar/utf8_ranges.h"

namespace stride::grammar {

namespace {

using Kind = GrammarNode::Kind;
using Next = std::function<bool(size_t)>;

class Backtracker {
 public:
  Backtracker(const GrammarAst& ast, std::string_view s, bool prefix, uint64_t max_steps = UINT64_MAX)
      : ast_(ast), s_(s), prefix_(prefix), steps_left_(max_steps) {}

  std::optional<bool> run() {
    const bool r = match(*ast_.find("root"), 0, [&](size_t i) { return i == s_.size(); });
    if (out_of_steps_) return std::nullopt;
    return r;
  }

 private:
  // Does `n` match s_[i, j) for some j with next(j)? In prefix mode, running
  // out of input means yes: every rule can finish, so the rest can be written.
  bool match(const GrammarNode& n, size_t i, const Next& next) const {
    if (out_of_steps_ || steps_left_-- == 0) {
      out_of_steps_ = true;
      return false;
    }
    if (prefix_ && i == s_.size()) return true;
    switch (n.kind) {
      case Kind::Literal: {
        const size_t have = s_.size() - i;
        if (have < n.bytes.size()) return prefix_ && s_.substr(i) == std::string_view(n.bytes).substr(0, have);
        return s_.substr(i, n.bytes.size()) == n.bytes && next(i + n.bytes.size());
      }
      case Kind::CharClass:
        return match_char(n.chars, i, next);
      case Kind::RuleRef:
        return match(*ast_.find(n.rule), i, next);
      case Kind::Sequence:
        return match_seq(n, 0, i, next);
      case Kind::Choice:
        for (const GrammarNode& c : n.children)
          if (match(c, i, next)) return true;
        return false;
      case Kind::Repeat:
        return match_repeat(n, 0, i, next);
    }
    return false;
  }

  bool match_seq(const GrammarNode& n, size_t k, size_t i, const Next& next) const {
    if (k == n.children.size()) return next(i);
    return match(n.children[k], i, [&](size_t j) { return match_seq(n, k + 1, j, next); });
  }

  bool match_repeat(const GrammarNode& n, int done, size_t i, const Next& next) const {
    if (done >= n.min && next(i)) return true;
    if (n.max >= 0 && done >= n.max) return false;
    return match(n.children[0], i, [&](size_t j) {
      if (j == i && done >= n.min) return false;  // an empty round adds nothing
      return match_repeat(n, done + 1, j, next);
    });
  }

  // One character: the UTF-8 encoding of a code point in `chars`. A full
  // character is decoded and looked up; a character cut off by the end of
  // the input (prefix mode) matches when some code point of `chars` has an
  // encoding that starts with the bytes present.
  bool match_char(const CodepointSet& chars, size_t i, const Next& next) const {
    if (i >= s_.size()) return false;
    const unsigned char lead = (unsigned char)s_[i];
    const int n = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
    if (n == 0) return false;
    const size_t have = std::min<size_t>((size_t)n, s_.size() - i);
    uint32_t lo = n == 1 ? lead : n == 2 ? (lead & 0x1Fu) : n == 3 ? (lead & 0x0Fu) : (lead & 0x07u);
    uint32_t hi = lo;
    for (int k = 1; k < n; ++k) {
      uint32_t bits_lo = 0x00, bits_hi = 0x3F;  // a missing continuation byte: any of 80-BF
      if ((size_t)k < have) {
        const unsigned char b = (unsigned char)s_[i + (size_t)k];
        if ((b & 0xC0) != 0x80) return false;
        bits_lo = bits_hi = b & 0x3Fu;
      }
      lo = (lo << 6) | bits_lo;
      hi = (hi << 6) | bits_hi;
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    static constexpr uint32_t kMax[] = {0, 0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
    lo = std::max(lo, kMin[n]);
    hi = std::min(hi, kMax[n]);
    if (lo > hi) return false;  // overlong or beyond U+10FFFF
    if (have < (size_t)n) {     // cut off: any code point of chars in [lo, hi]
      if (!prefix_) return false;
      for (const CodepointRange& r : chars)
        if (r.lo <= hi && r.hi >= lo) return true;
      return false;
    }
    return contains(chars, lo) && next(i + (size_t)n);  // complete: lo == hi
  }

  const GrammarAst& ast_;
  std::string_view s_;
  bool prefix_;
  mutable uint64_t steps_left_;
  mutable bool out_of_steps_ = false;
};

}  // namespace

bool ReferenceMatcher::accepts(std::string_view s) const { return *Backtracker(ast_, s, false).run(); }
bool ReferenceMatcher::accepts_prefix(std::string_view s) const { return *Backtracker(ast_, s, true).run(); }
std::optional<bool> ReferenceMatcher::accepts_within(std::string_view s, uint64_t max_steps) const {
  return Backtracker(ast_, s, false, max_steps).run();
}
std::optional<bool> ReferenceMatcher::accepts_prefix_within(std::string_view s, uint64_t max_steps) const {
  return Backtracker(ast_, s, true, max_steps).run();
}

}  // namespace stride::grammar
