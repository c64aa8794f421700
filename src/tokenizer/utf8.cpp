#include "tokenizer/utf8.h"

#include <array>

namespace stride::utf8 {

size_t seq_len(uint8_t lead) {
  static constexpr size_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLookup[lead >> 4];
}

uint32_t decode_lenient(std::string_view s, size_t pos, size_t* len) {
  const auto at = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const auto cont = [&](size_t i) { return i < s.size() && (at(i) & 0xC0) == 0x80; };
  const uint8_t b0 = at(pos);
  *len = 1;
  if (!(b0 & 0x80)) return b0;
  if (!(b0 & 0x40)) return kReplacement;  // stray continuation byte
  if (!(b0 & 0x20)) {
    if (!cont(pos + 1)) return kReplacement;
    *len = 2;
    return ((b0 & 0x1Fu) << 6) | (at(pos + 1) & 0x3Fu);
  }
  if (!(b0 & 0x10)) {
    if (!cont(pos + 1) || !cont(pos + 2)) return kReplacement;
    *len = 3;
    return ((b0 & 0x0Fu) << 12) | ((at(pos + 1) & 0x3Fu) << 6) | (at(pos + 2) & 0x3Fu);
  }
  if (!(b0 & 0x08)) {
    if (!cont(pos + 1) || !cont(pos + 2) || !cont(pos + 3)) return kReplacement;
    *len = 4;
    return ((b0 & 0x07u) << 18) | ((at(pos + 1) & 0x3Fu) << 12) | ((at(pos + 2) & 0x3Fu) << 6) |
           (at(pos + 3) & 0x3Fu);
  }
  return kReplacement;
}

void append(std::string& out, uint32_t cp) {
  if (cp <= 0x7F) {
    out.push_back(static_cast<char>(cp));
  } else if (cp <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string sanitize(std::string_view text, bool replace_surrogates) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = 1;
    uint32_t cp = decode_lenient(text, pos, &len);
    if (cp > 0x10FFFF || (replace_surrogates && cp >= 0xD800 && cp <= 0xDFFF)) cp = kReplacement;
    append(out, cp);
    pos += len;
  }
  return out;
}

namespace {

// Allowed range of the second byte for a strict lead byte; {0,0} when the
// byte cannot start a multi-byte sequence.
struct LeadInfo {
  int n;           // total sequence length
  uint8_t lo, hi;  // range of the second byte
};

LeadInfo lead_info(uint8_t b) {
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

std::string take_complete(std::string& pending, bool final) {
  std::string out;
  size_t pos = 0;
  const size_t n = pending.size();
  while (pos < n) {
    const uint8_t b = static_cast<uint8_t>(pending[pos]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++pos;
      continue;
    }
    const LeadInfo li = lead_info(b);
    if (li.n == 0) {
      append(out, kReplacement);
      ++pos;
      continue;
    }
    // Count the valid continuation bytes that follow (the "maximal subpart").
    int k = 1;
    bool broken = false;
    while (k < li.n && pos + k < n) {
      const uint8_t c = static_cast<uint8_t>(pending[pos + k]);
      const uint8_t lo = k == 1 ? li.lo : 0x80, hi = k == 1 ? li.hi : 0xBF;
      if (c < lo || c > hi) {
        broken = true;
        break;
      }
      ++k;
    }
    if (k == li.n) {
      out.append(pending, pos, k);
      pos += k;
    } else if (broken || final) {
      append(out, kReplacement);
      pos += k;
    } else {
      break;  // incomplete: wait for more bytes
    }
  }
  pending.erase(0, pos);
  return out;
}

bool is_valid(std::string_view text) {
  std::string copy(text);
  const std::string out = take_complete(copy, true);
  return out == text;
}

namespace {

struct ByteMaps {
  std::array<std::string, 256> to_unicode;
  std::array<int, 512> from_unicode;  // every image is below U+0200
  ByteMaps() {
    from_unicode.fill(-1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256u + extra++;
      append(to_unicode[b], cp);
      from_unicode[cp] = b;
    }
  }
};

const ByteMaps& byte_maps() {
  static const ByteMaps maps;
  return maps;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return byte_maps().to_unicode[b]; }

int unicode_to_byte(uint32_t cp) {
  return cp < 512 ? byte_maps().from_unicode[cp] : -1;
}

}  // namespace stride::utf8
