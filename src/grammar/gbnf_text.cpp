#include "grammar/gbnf_text.h"

#include <cstdio>

namespace stride::grammar {

namespace {
std::string escape_codepoint(uint32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\U%08X", cp);
  return buf;
}
}  // namespace

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    const unsigned char u = (unsigned char)c;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", u);
      out += buf;
    } else {
      out += c;  // UTF-8 passes through
    }
  }
  return out + "\"";
}

std::string gbnf_class(const CodepointSet& chars) {
  std::string out = "[";
  for (const CodepointRange& r : chars) {
    out += escape_codepoint(r.lo);
    if (r.hi != r.lo) {
      out += '-';
      out += escape_codepoint(r.hi);
    }
  }
  return out + "]";
}

}  // namespace stride::grammar
