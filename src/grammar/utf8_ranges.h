#pragma once
// Code point sets as UTF-8 byte automata: a set of code points becomes a
// list of byte-range sequences (each sequence one UTF-8 length and one run of
// lead/continuation ranges), so the fast matcher works on bytes and a token
// that ends inside a character is checked like any other prefix.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_ast.h"

namespace stride::grammar {

struct ByteRange {
  uint8_t lo = 0, hi = 0;  // inclusive
};
using ByteRangeSeq = std::vector<ByteRange>;  // 1 to 4 ranges, one per byte

// Every code point of `s` is encoded by exactly one of the returned sequences,
// and every byte string a sequence accepts is the encoding of one of them.
std::vector<ByteRangeSeq> utf8_sequences(const CodepointSet& s);

void append_utf8(uint32_t cp, std::string& out);

// The character starting at s[i]: its length in bytes and code point in cp,
// or 0 when the bytes there are not valid UTF-8 (overlong, surrogate, cut off).
int decode_utf8(std::string_view s, size_t i, uint32_t& cp);

}  // namespace stride::grammar
