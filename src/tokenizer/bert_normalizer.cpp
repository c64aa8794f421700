#include "tokenizer/bert_normalizer.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "tokenizer/utf8.h"

namespace stride {

namespace {

bool is_whitespace(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace((UChar32)c); }

// Categories Cc, Cf, Cs and Co, except the three whitespace controls. Unassigned
// code points (Cn) stay, as in Hugging Face tokenizers (they become [UNK]).
bool is_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  const int8_t t = u_charType((UChar32)c);
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR || t == U_SURROGATE || t == U_PRIVATE_USE_CHAR;
}

// The CJK Unified Ideographs blocks BERT pads with spaces (not Hangul, kana).
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  switch (u_charType((UChar32)c)) {
    case U_CONNECTOR_PUNCTUATION:
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

std::u32string decode(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    const uint32_t cp = utf8::decode_lenient(text, i, &len);
    // Surrogates and overlong forms are not characters: U+FFFD, dropped by cleaning.
    out.push_back((cp >= 0xD800 && cp <= 0xDFFF) ? utf8::kReplacement : (char32_t)cp);
    i += len;
  }
  return out;
}

std::u32string strip_accents(const std::u32string& text) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(err);
  if (U_FAILURE(err)) return text;
  std::u32string out;
  out.reserve(text.size());
  icu::UnicodeString decomposed;
  for (char32_t c : text) {
    decomposed.remove();
    nfd->normalize(icu::UnicodeString((UChar32)c), decomposed, err);
    if (U_FAILURE(err)) return text;
    for (int32_t i = 0; i < decomposed.length();) {
      const UChar32 d = decomposed.char32At(i);
      i += U16_LENGTH(d);
      if (u_charType(d) != U_NON_SPACING_MARK) out.push_back((char32_t)d);
    }
  }
  return out;
}

std::u32string lowercase(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c == 0x130) {  // the one unconditional multi-character lowercase mapping
      out.push_back(U'i');
      out.push_back(0x307);
    } else {
      out.push_back((char32_t)u_tolower((UChar32)c));
    }
  }
  return out;
}

}  // namespace

std::u32string bert_normalize(std::string_view text, const BertNormalizerOptions& opts) {
  std::u32string s = decode(text);
  if (opts.clean_text) {
    std::u32string cleaned;
    cleaned.reserve(s.size());
    for (char32_t c : s) {
      if (c == 0 || c == utf8::kReplacement || is_control(c)) continue;
      cleaned.push_back(is_whitespace(c) ? U' ' : c);
    }
    s = std::move(cleaned);
  }
  if (opts.handle_chinese_chars) {
    std::u32string spaced;
    spaced.reserve(s.size());
    for (char32_t c : s) {
      if (is_chinese_char(c)) {
        spaced.push_back(U' ');
        spaced.push_back(c);
        spaced.push_back(U' ');
      } else {
        spaced.push_back(c);
      }
    }
    s = std::move(spaced);
  }
  if (opts.strip_accents) s = strip_accents(s);
  if (opts.lowercase) s = lowercase(s);
  return s;
}

std::vector<std::u32string> bert_pre_tokenize(const std::u32string& text) {
  std::vector<std::u32string> words;
  std::u32string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  for (char32_t c : text) {
    if (is_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      words.push_back(std::u32string(1, c));
    } else {
      cur.push_back(c);
    }
  }
  flush();
  return words;
}

}  // namespace stride
