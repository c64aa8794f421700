#pragma once
// SentencePiece's visible space: "▁" (U+2581) stands for ' ' inside tokens.
#include <string>
#include <string_view>

namespace stride {

inline constexpr std::string_view kSpaceMark = "\xE2\x96\x81";

// ' ' -> "▁", appended to `out`.
inline void append_escaped_spaces(std::string& out, std::string_view text) {
  for (char c : text) {
    if (c == ' ') {
      out.append(kSpaceMark);
    } else {
      out.push_back(c);
    }
  }
}

// "▁" -> ' '.
inline std::string unescape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kSpaceMark.size()) == kSpaceMark) {
      out.push_back(' ');
      i += kSpaceMark.size();
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

}  // namespace stride
