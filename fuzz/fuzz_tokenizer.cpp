// A real tokenizer (STRIDE_FUZZ_VOCAB: the SPM or the byte-level BPE fixture)
// on arbitrary bytes. Promises checked:
//   * encode yields ids inside the vocabulary, with or without special parsing;
//   * decode yields valid UTF-8 for any id sequence (unknown ids included);
//   * decode(encode(text)) == text for valid UTF-8 without special parsing,
//     except that SPM adds its prefix space and renders U+2581 as a space.
#include <cstdlib>
#include <vector>

#include "fuzz_support.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_tokenizer.h"

namespace {

using namespace stride;

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "fuzz_tokenizer(%s): %s (input %zu bytes)\n", STRIDE_FUZZ_VOCAB, what, input.size());
  std::abort();
}

void check_ids(const Tokenizer& t, const std::vector<int32_t>& ids, std::string_view input) {
  for (int32_t id : ids) {
    if (id < 0 || id >= t.n_vocab()) fail("encode produced an id outside the vocabulary", input);
  }
}

// The text decode must give back: what the tokenizer promises to round trip.
std::string expected_round_trip(const VocabTokenizer& t, std::string_view text) {
  if (t.vocab().type != VocabType::kSpm) return std::string(text);
  std::string out = t.vocab().add_space_prefix && !text.empty() ? " " : "";
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& loaded = fuzz::load_tokenizer(STRIDE_FUZZ_VOCAB);
  const Tokenizer& t = *loaded.tok;
  const auto* vt = dynamic_cast<const VocabTokenizer*>(&t);
  if (!vt) fail("the fixture did not give a vocabulary tokenizer", {});
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // Random bytes, special tokens parsed, as the server's prompt path does.
  const std::vector<int32_t> with_special = t.encode(text, true, true);
  check_ids(t, with_special, text);
  for (bool render : {false, true}) {
    if (!utf8::is_valid(t.decode(with_special, render))) fail("decode is not valid UTF-8", text);
  }

  // Round trip of plain text.
  const std::vector<int32_t> plain = t.encode(text, false, false);
  check_ids(t, plain, text);
  const std::string back = t.decode(plain);
  if (utf8::is_valid(text) && back != expected_round_trip(*vt, text)) {
    fail("decode(encode(text)) differs from the text", text);
  }

  // The same bytes read as token ids (some out of range) through the stream decoder.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < size; i += 2) {
    ids.push_back((int32_t)(data[i] | (data[i + 1] << 8)) * ((data[i] & 0x80) ? 1 : 2) - 64);
  }
  StreamDecoder dec(t, size & 1);
  std::string streamed;
  for (int32_t id : ids) streamed += dec.push(id);
  streamed += dec.flush();
  if (!utf8::is_valid(streamed)) fail("the stream decoder produced invalid UTF-8", text);
  return 0;
}
