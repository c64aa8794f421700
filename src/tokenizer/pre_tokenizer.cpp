// PCRE2-backed regex splitting for byte-level BPE pre-tokenization.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/pre_tokenizer.h"

namespace stride {

namespace {

// llama.cpp's whitespace set (Unicode White_Space). PCRE2's UCP `\s` also
// matches U+180E, so patterns use this explicit set instead.
constexpr const char* kWhitespaceSet =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";

struct CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeDeleter>;
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

// Finds the next match of `code` in subject[start, len). Returns false when
// there is none. A matching error ends the search (the rest becomes a gap).
bool next_match(const pcre2_code* code, pcre2_match_data* md, std::string_view subject,
                size_t start, size_t* mbegin, size_t* mend) {
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  int rc = pcre2_match(code, s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    rc = pcre2_match(code, s, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                     nullptr);
  }
  if (rc < 0) return false;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  *mbegin = ov[0];
  *mend = ov[1];
  return true;
}

size_t utf8_char_len(std::string_view s, size_t pos) {
  size_t n = 1;
  while (pos + n < s.size() && (static_cast<uint8_t>(s[pos + n]) & 0xC0) == 0x80) ++n;
  return n;
}

}  // namespace

std::string rewrite_whitespace_classes(const std::string& p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's') {
        out += in_class ? std::string(kWhitespaceSet) : "[" + std::string(kWhitespaceSet) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kWhitespaceSet) + "]";
      } else {
        out += c;
        out += e;
      }
      ++i;
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' (or '^]') right after '[' is a literal member, not the end.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

struct PreTokenizer::Impl {
  std::vector<CodePtr> codes;
};

PreTokenizer::PreTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;
PreTokenizer::~PreTokenizer() = default;

Expected<PreTokenizer> PreTokenizer::compile(const std::vector<std::string>& regexes) {
  auto impl = std::make_unique<Impl>();
  for (const std::string& re : regexes) {
    const std::string pattern = rewrite_whitespace_classes(re);
    int err = 0;
    PCRE2_SIZE err_off = 0;
    // DOLLAR_ENDONLY: `$` means the end of the piece, as in std::regex.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &err_off,
                                     nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return Internal("pre-tokenizer regex '" + re + "' does not compile at offset " +
                      std::to_string(err_off) + ": " + reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
    impl->codes.emplace_back(code);
  }
  return PreTokenizer(std::move(impl));
}

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  for (const CodePtr& code : impl_->codes) {
    MatchDataPtr md(pcre2_match_data_create_from_pattern(code.get(), nullptr));
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2);
    for (std::string_view piece : pieces) {
      size_t pos = 0;  // end of the last match
      size_t search = 0;
      size_t b = 0, e = 0;
      while (search <= piece.size() && next_match(code.get(), md.get(), piece, search, &b, &e)) {
        if (e == b) {  // empty match: not a piece; step over one character
          if (b >= piece.size()) break;
          search = b + utf8_char_len(piece, b);
          continue;
        }
        if (b > pos) next.push_back(piece.substr(pos, b - pos));
        next.push_back(piece.substr(b, e - b));
        pos = search = e;
      }
      if (pos < piece.size()) next.push_back(piece.substr(pos));
    }
    pieces = std::move(next);
  }
  return pieces;
}

}  // namespace stride
