#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace stride::grammar {

namespace {

constexpr uint32_t kSurrogateLo = 0xD800, kSurrogateHi = 0xDFFF;

int utf8_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }
uint32_t max_of_length(int n) { return n == 1 ? 0x7F : n == 2 ? 0x7FF : n == 3 ? 0xFFFF : kMaxCodepoint; }

void encode(uint32_t cp, uint8_t* b, int n) {
  if (n == 1) {
    b[0] = (uint8_t)cp;
    return;
  }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    b[i] = (uint8_t)(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  b[0] = (uint8_t)(kLead[n] | cp);
}

// [lo, hi] of one UTF-8 length: split until each piece is a product of byte
// ranges (the classic utf8-ranges construction: a piece whose lower bytes
// span all of 80-BF in both ends is a product).
void split(uint32_t lo, uint32_t hi, std::vector<ByteRangeSeq>& out) {
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, a, n);
  encode(hi, b, n);
  ByteRangeSeq seq((size_t)n);
  for (int i = 0; i < n; ++i) seq[(size_t)i] = {a[i], b[i]};
  out.push_back(std::move(seq));
}

}  // namespace

CodepointSet normalize(CodepointSet s) {
  CodepointSet cut;
  for (CodepointRange r : s) {  // surrogates are not characters
    r.hi = std::min(r.hi, kMaxCodepoint);
    if (r.lo > r.hi) continue;
    if (r.lo < kSurrogateLo && r.hi >= kSurrogateLo) {
      cut.push_back({r.lo, kSurrogateLo - 1});
      if (r.hi > kSurrogateHi) cut.push_back({kSurrogateHi + 1, r.hi});
    } else if (r.lo >= kSurrogateLo && r.lo <= kSurrogateHi) {
      if (r.hi > kSurrogateHi) cut.push_back({kSurrogateHi + 1, r.hi});
    } else {
      cut.push_back(r);
    }
  }
  std::sort(cut.begin(), cut.end(), [](auto& a, auto& b) { return a.lo < b.lo; });
  CodepointSet out;
  for (const CodepointRange& r : cut) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodepointSet complement(const CodepointSet& s) {
  CodepointSet out;
  uint32_t next = 0;
  for (const CodepointRange& r : s) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodepoint) out.push_back({next, kMaxCodepoint});
  return normalize(std::move(out));
}

bool contains(const CodepointSet& s, uint32_t cp) {
  for (const CodepointRange& r : s)
    if (cp >= r.lo && cp <= r.hi) return true;
  return false;
}

std::vector<ByteRangeSeq> utf8_sequences(const CodepointSet& s) {
  std::vector<ByteRangeSeq> out;
  for (CodepointRange r : normalize(s)) {
    // One UTF-8 length at a time.
    uint32_t lo = r.lo;
    while (lo <= r.hi) {
      const uint32_t hi = std::min(r.hi, max_of_length(utf8_length(lo)));
      split(lo, hi, out);
      lo = hi + 1;
    }
  }
  return out;
}

void append_utf8(uint32_t cp, std::string& out) {
  uint8_t b[4];
  const int n = utf8_length(cp);
  encode(cp, b, n);
  out.append((const char*)b, (size_t)n);
}

int decode_utf8(std::string_view s, size_t i, uint32_t& cp) {
  if (i >= s.size()) return 0;
  const unsigned char c = (unsigned char)s[i];
  const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + (size_t)n > s.size()) return 0;
  cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (int k = 1; k < n; ++k) {
    const unsigned char b = (unsigned char)s[i + (size_t)k];
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > kMaxCodepoint || (cp >= kSurrogateLo && cp <= kSurrogateHi)) return 0;
  return n;
}

}  // namespace stride::grammar
