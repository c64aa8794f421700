#pragma once
// Strings with provenance. A Str carries, next to its bytes, the byte ranges
// that came from the client (message contents, tool definitions, kwargs); the
// serving layer tokenizes those as plain text, never as control tokens.
// Rules (see docs/architecture.md, src/jinja): concatenation and substrings
// (slices, strip, split, ...) keep exact ranges; any other transformation of a
// string that holds client bytes (upper, replace, tojson, indent, ...) marks
// its whole result as client text.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace stride::jinja {

// A byte range [begin, end).
struct Span {
  size_t begin = 0;
  size_t end = 0;
};

struct Str {
  std::string text;
  std::vector<Span> literal;  // sorted, disjoint, relative to text
  bool markup = false;        // Jinja's Markup (from |safe, |escape): `+` escapes the other side

  Str() = default;
  explicit Str(std::string t) : text(std::move(t)) {}
  Str(std::string t, bool all_literal);

  bool any_literal() const { return !literal.empty(); }
  void append(const Str& other);
  void append(std::string_view plain) { text.append(plain); }
  // Bytes [begin, end) with the client ranges that fall inside them.
  Str substr(size_t begin, size_t end) const;
  // A transformed string: wholly client text when `from` held any.
  static Str derived(std::string text, bool tainted) { return Str(std::move(text), tainted); }
};

// Case mapping of Python's str.upper/lower for Latin, Greek and Cyrillic
// letters (ß becomes SS); other code points are kept.
std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);

// HTML escaping as markupsafe.escape does it.
std::string html_escape(std::string_view s);

// UTF-8 helpers: Jinja counts and slices in code points.
size_t utf8_length(std::string_view s);
// Byte offsets of every code point start, plus s.size() at the end.
std::vector<size_t> utf8_offsets(std::string_view s);
// Python's str.isspace for the code point that starts at s[i]; 0 if not a space,
// otherwise its byte length.
size_t python_space_at(std::string_view s, size_t i);
// Byte length of the space code point that ends at s[end); 0 if none.
size_t python_space_before(std::string_view s, size_t end);
void append_utf8(std::string& out, uint32_t cp);

}  // namespace stride::jinja
