#pragma once
// UTF-8 helpers shared by the tokenizers: llama.cpp's lenient decoding (so the
// same input bytes become the same code points), strict validation for the
// stream decoder, and GPT-2's byte <-> printable-unicode mapping.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stride::utf8 {

inline constexpr uint32_t kReplacement = 0xFFFD;

// Length of the sequence a lead byte announces, from its high nibble only
// (continuation bytes count as 1), exactly as llama.cpp splits text into chars.
size_t seq_len(uint8_t lead);

// Decodes the code point at s[pos] the way llama.cpp does (overlong forms are
// accepted; truncated or malformed sequences are invalid). Sets *len to the
// bytes consumed (1 on error) and returns kReplacement on error.
uint32_t decode_lenient(std::string_view s, size_t pos, size_t* len);

void append(std::string& out, uint32_t cp);

// Re-encodes text code point by code point with decode_lenient: invalid bytes
// and values past U+10FFFF become U+FFFD. Surrogates (U+D800..DFFF) are kept,
// as llama.cpp keeps them, unless `replace_surrogates`; only then is the result
// strictly valid UTF-8. A surrogate and U+FFFD both take 3 bytes, so the two
// forms of a text have the same byte offsets.
std::string sanitize(std::string_view text, bool replace_surrogates = true);

// Strictly valid UTF-8 (no overlongs, no surrogates, <= U+10FFFF)?
bool is_valid(std::string_view text);

// Moves the longest decodable prefix of `pending` to the returned string.
// Malformed bytes become U+FFFD. An incomplete sequence at the end is kept in
// `pending` unless `final` is set, in which case it also becomes U+FFFD.
std::string take_complete(std::string& pending, bool final);

// GPT-2 byte-level BPE: each byte maps to one printable code point.
const std::string& byte_to_unicode(uint8_t b);
// Inverse mapping; -1 when the code point is not one of the 256 images.
int unicode_to_byte(uint32_t cp);

}  // namespace stride::utf8
