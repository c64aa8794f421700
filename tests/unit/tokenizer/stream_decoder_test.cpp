// UTF-8 safety of decoding: characters split across byte tokens are held back
// until complete; malformed bytes become U+FFFD.
#include <gtest/gtest.h>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace stride {
namespace {

const std::string kRocket = "\xF0\x9F\x9A\x80";  // U+1F680
const std::string kFFFD = "\xEF\xBF\xBD";

std::unique_ptr<Tokenizer> load(const std::string& name, std::unique_ptr<GGUFFile>* keep) {
  auto f = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/../shared/fixtures/vocab/" + name);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  *keep = std::move(*f);
  auto t = Tokenizer::from_gguf(**keep);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(Utf8, TakeCompleteHoldsIncompleteTail) {
  std::string pending = "a\xF0\x9F";
  EXPECT_EQ(utf8::take_complete(pending, false), "a");
  EXPECT_EQ(pending, "\xF0\x9F");
  pending += "\x9A\x80!";
  EXPECT_EQ(utf8::take_complete(pending, false), kRocket + "!");
  EXPECT_TRUE(pending.empty());
}

TEST(Utf8, MalformedBytesBecomeReplacement) {
  std::string p1 = "\xC0\x80x";  // overlong NUL: two bad bytes
  EXPECT_EQ(utf8::take_complete(p1, false), kFFFD + kFFFD + "x");
  std::string p2 = "\xE2\x28\xA1";  // bad continuation, then a stray one
  EXPECT_EQ(utf8::take_complete(p2, false), kFFFD + "(" + kFFFD);
  std::string p3 = "\xED\xA0\x80";  // UTF-16 surrogate
  EXPECT_EQ(utf8::take_complete(p3, false), kFFFD + kFFFD + kFFFD);
  std::string p4 = "\xF0\x9F\x9A";  // truncated at the end: one U+FFFD on flush
  EXPECT_EQ(utf8::take_complete(p4, false), "");
  EXPECT_EQ(utf8::take_complete(p4, true), kFFFD);
  EXPECT_TRUE(p4.empty());
}

TEST(Utf8, SanitizeFollowsLlamaCppDecoding) {
  // Overlong forms decode (to NUL here); stray bytes become U+FFFD.
  EXPECT_EQ(utf8::sanitize("a\xC0\x80" "b"), std::string("a\0b", 3));
  EXPECT_EQ(utf8::sanitize("\x80z\xFF"), kFFFD + "z" + kFFFD);
  EXPECT_TRUE(utf8::is_valid(utf8::sanitize("\xED\xA0\x80\xF4\x90\x80\x80")));
  // llama.cpp keeps surrogates; code points past U+10FFFF are never kept.
  EXPECT_EQ(utf8::sanitize("\xED\xA0\x80\xF4\x90\x80\x80", false), "\xED\xA0\x80" + kFFFD);
}

TEST(StreamDecoder, SpmByteTokensOfAnEmoji) {
  std::unique_ptr<GGUFFile> file;
  auto tok = load("ggml-vocab-llama-spm.gguf", &file);
  ASSERT_TRUE(tok);
  // No "\xF0\x9F\x9A\x80" piece exists: it falls back to <0xF0>... which sit at id 3 + byte.
  const auto ids = tok->encode(kRocket, false);
  ASSERT_GE(ids.size(), 4u);
  const std::vector<int32_t> tail(ids.end() - 4, ids.end());
  EXPECT_EQ(tail, (std::vector<int32_t>{3 + 0xF0, 3 + 0x9F, 3 + 0x9A, 3 + 0x80}));
  StreamDecoder dec(*tok);
  EXPECT_EQ(dec.push(3 + 0xF0), "");
  EXPECT_EQ(dec.push(3 + 0x9F), "");
  EXPECT_EQ(dec.push(3 + 0x9A), "");
  EXPECT_EQ(dec.push(3 + 0x80), kRocket);
  EXPECT_EQ(dec.flush(), "");
  EXPECT_EQ(tok->decode(ids), " " + kRocket);  // the space prefix stays in the pieces
}

TEST(StreamDecoder, Gpt2PiecesSplitInsideACharacter) {
  std::unique_ptr<GGUFFile> file;
  auto tok = load("ggml-vocab-gpt-2.gguf", &file);
  ASSERT_TRUE(tok);
  // From the fixture: "🚀" is 8582 248 222, pieces F0 9F | 9A | 80.
  ASSERT_EQ(tok->encode(kRocket, false), (std::vector<int32_t>{8582, 248, 222}));
  EXPECT_EQ(tok->token_to_piece(8582), "\xF0\x9F");
  StreamDecoder dec(*tok);
  std::string out;
  EXPECT_EQ(dec.push(15496), "Hello");
  EXPECT_EQ(dec.push(8582), "");
  EXPECT_EQ(dec.push(248), "");
  EXPECT_EQ(dec.push(222), kRocket);
  // A character cut short is flushed as one U+FFFD.
  EXPECT_EQ(dec.push(8582), "");
  EXPECT_EQ(dec.flush(), kFFFD);
  EXPECT_EQ(dec.flush(), "");
}

TEST(StreamDecoder, ControlTokensRenderOnlyWhenAsked) {
  std::unique_ptr<GGUFFile> file;
  auto tok = load("ggml-vocab-gpt-2.gguf", &file);
  ASSERT_TRUE(tok);
  const std::vector<int32_t> ids = {15496, 50256, 995};  // "Hello" <|endoftext|> " world"
  EXPECT_TRUE(tok->is_special(50256));
  EXPECT_TRUE(tok->is_eog(50256));
  EXPECT_FALSE(tok->is_eog(15496));
  EXPECT_EQ(tok->decode(ids), "Hello world");
  EXPECT_EQ(tok->decode(ids, /*render_special=*/true), "Hello<|endoftext|> world");
  EXPECT_EQ(tok->token_to_piece(-1), "");
  EXPECT_EQ(tok->token_to_piece(tok->n_vocab()), "");
  // parse_special: the text of the control token becomes the token.
  EXPECT_EQ(tok->encode("Hello<|endoftext|>", false, true), (std::vector<int32_t>{15496, 50256}));
  EXPECT_NE(tok->encode("Hello<|endoftext|>", false, false).back(), 50256);
}

}  // namespace
}  // namespace stride
