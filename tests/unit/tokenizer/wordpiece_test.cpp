// WordPiece (all-MiniLM-L6-v2's tokenizer.json) against Hugging Face
// tokenizers: tests/data/generated/wordpiece_goldens.json is written by
// scripts/oracles/wordpiece_goldens.py (scripts/setup).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tokenizer/wordpiece_tokenizer.h"

namespace stride {
namespace {

using nlohmann::json;

const std::string kSource = STRIDE_SOURCE_DIR;

std::unique_ptr<WordPieceTokenizer> minilm() {
  auto tok = WordPieceTokenizer::from_json_file(kSource + "/models/all-MiniLM-L6-v2/tokenizer.json");
  EXPECT_TRUE(tok.ok()) << tok.status().to_string() << " (run scripts/fetch_models)";
  return tok.ok() ? std::move(*tok) : nullptr;
}

TEST(WordPiece, MatchesHuggingFaceTokenizers) {
  std::ifstream f(kSource + "/tests/data/generated/wordpiece_goldens.json");
  ASSERT_TRUE(f) << "tests/data/generated/wordpiece_goldens.json missing: run scripts/setup";
  const json goldens = json::parse(f);
  auto tok = minilm();
  ASSERT_TRUE(tok);
  const json& cases = goldens["cases"];
  ASSERT_GT(cases.size(), 200u);
  int mismatches = 0;
  for (const json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    const auto got = tok->encode(text);
    EXPECT_EQ(got, expected) << "text: '" << text << "'";
    mismatches += got != expected;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(WordPiece, SpecialTokenSpellingsStayText) {
  auto tok = minilm();
  ASSERT_TRUE(tok);
  const auto ids = tok->encode("[SEP]", /*add_special=*/false);
  EXPECT_EQ(ids.size(), 3u);  // "[", "sep", "]"
  for (int32_t id : ids) EXPECT_NE(id, tok->sep_id());
  const auto wrapped = tok->encode("a");
  ASSERT_EQ(wrapped.size(), 3u);
  EXPECT_EQ(wrapped.front(), tok->cls_id());
  EXPECT_EQ(wrapped.back(), tok->sep_id());
}

TEST(WordPiece, MalformedUtf8IsDropped) {
  auto tok = minilm();
  ASSERT_TRUE(tok);
  // Invalid bytes become U+FFFD, which cleaning removes, as for the character itself.
  EXPECT_EQ(tok->encode("ab\xff\xfe cd"), tok->encode("ab cd"));
  EXPECT_EQ(tok->encode("\xed\xa0\x80"), tok->encode(""));
}

// A small hand-written vocabulary: the greedy longest-match rule and [UNK].
TEST(WordPiece, GreedyLongestMatchAndUnknownWords) {
  const char* json_text = R"({
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                   "strip_accents": null, "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 9,
              "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "un": 3, "##aff": 4, "##able": 5,
                        "unaff": 6, "##a": 7, "!": 8, "cafe": 9}}})";
  auto tok = WordPieceTokenizer::from_json_text(json_text);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto& t = **tok;
  EXPECT_EQ(t.encode("unaffable", false), (std::vector<int32_t>{6, 5}));   // "unaff" beats "un"
  EXPECT_EQ(t.encode("UNAFFABLE!", false), (std::vector<int32_t>{6, 5, 8}));
  EXPECT_EQ(t.encode("unx", false), (std::vector<int32_t>{0}));            // no split: the word is [UNK]
  EXPECT_EQ(t.encode("Café", false), (std::vector<int32_t>{9}));           // accents stripped
  EXPECT_EQ(t.encode("unaffaaaaa", false), (std::vector<int32_t>{0}));     // 10 characters > 9
  EXPECT_EQ(t.encode("", true), (std::vector<int32_t>{1, 2}));
}

TEST(WordPiece, RejectsWhatItCannotRun) {
  EXPECT_FALSE(WordPieceTokenizer::from_json_text("[]").ok());
  EXPECT_FALSE(WordPieceTokenizer::from_json_text(R"({"model": {"type": "BPE", "vocab": {}}})").ok());
  EXPECT_FALSE(WordPieceTokenizer::from_json_text(
                   R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "[CLS]": 5}}})").ok());
  EXPECT_FALSE(WordPieceTokenizer::from_json_text(
                   R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})").ok());  // no [UNK]/[CLS]/[SEP]
}

}  // namespace
}  // namespace stride
