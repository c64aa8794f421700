#include "jinja/str.h"

#include <algorithm>
#include <cstdint>

namespace stride::jinja {

Str::Str(std::string t, bool all_literal) : text(std::move(t)) {
  if (all_literal && !text.empty()) literal.push_back({0, text.size()});
}

void Str::append(const Str& other) {
  const size_t base = text.size();
  text.append(other.text);
  for (const Span& s : other.literal) {
    if (!literal.empty() && literal.back().end == base + s.begin) {
      literal.back().end = base + s.end;  // keep ranges merged across joins
    } else {
      literal.push_back({base + s.begin, base + s.end});
    }
  }
}

Str Str::substr(size_t begin, size_t end) const {
  Str out(text.substr(begin, end - begin));
  for (const Span& s : literal) {
    const size_t b = std::max(s.begin, begin), e = std::min(s.end, end);
    if (b < e) out.literal.push_back({b - begin, e - begin});
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

static uint32_t decode_at(std::string_view s, size_t i, size_t* len);

static uint32_t upper_cp(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    const bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_lower) return (c % 2 == 0) ? c - 1 : c;
    return (c % 2 == 1) ? c - 1 : c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

static uint32_t lower_cp(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
    const bool odd_lower = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (odd_lower) return (c % 2 == 1) ? c + 1 : c;
    return (c % 2 == 0) ? c + 1 : c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

static std::string map_case(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t len = 0;
    const uint32_t cp = decode_at(s, i, &len);
    if (len == 1 && static_cast<unsigned char>(s[i]) >= 0x80) {
      out += s[i];  // not UTF-8: keep the byte
    } else if (upper && cp == 0xDF) {
      out += "SS";
    } else {
      append_utf8(out, upper ? upper_cp(cp) : lower_cp(cp));
    }
    i += len;
  }
  return out;
}

std::string to_upper(std::string_view s) { return map_case(s, true); }
std::string to_lower(std::string_view s) { return map_case(s, false); }

static bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += !is_continuation(c);
  return n;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (!is_continuation(static_cast<unsigned char>(s[i]))) out.push_back(i);
  }
  out.push_back(s.size());
  return out;
}

static uint32_t decode_at(std::string_view s, size_t i, size_t* len) {
  if (static_cast<unsigned char>(s[i]) >= 0x80 && static_cast<unsigned char>(s[i]) < 0xC0) {
    *len = 1;
    return static_cast<unsigned char>(s[i]);
  }
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  if (i + n > s.size()) n = 1;
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  *len = n;
  return cp;
}

static bool is_python_space(uint32_t cp) {
  if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F)) return true;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

size_t python_space_at(std::string_view s, size_t i) {
  size_t len = 0;
  const uint32_t cp = decode_at(s, i, &len);
  return is_python_space(cp) ? len : 0;
}

size_t python_space_before(std::string_view s, size_t end) {
  if (end == 0) return 0;
  size_t start = end - 1;
  while (start > 0 && is_continuation(static_cast<unsigned char>(s[start]))) --start;
  size_t len = 0;
  const uint32_t cp = decode_at(s, start, &len);
  return (start + len == end && is_python_space(cp)) ? len : 0;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace stride::jinja
