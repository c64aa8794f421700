// Fill-in-the-middle prompts: where the markers come from (GGUF keys first,
// then the vocabulary's marker texts), the prefix-suffix-middle layout
// llama.cpp's server documents ([BOS] <PRE> prefix <SUF> suffix <MID> middle),
// and a clear refusal for a vocabulary without markers.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>

#include "loader/gguf_file.h"
#include "serving/fim_prompt.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace stride {
namespace {

Vocab vocab_of(std::vector<std::string> texts) {
  Vocab v;
  v.text = std::move(texts);
  v.attr.assign(v.text.size(), kAttrNormal);
  for (size_t i = 0; i < v.text.size(); ++i) v.token_to_id[v.text[i]] = (int32_t)i;
  return v;
}

TEST(FimTokens, GgufKeysWinOverMarkerTexts) {
  Vocab v = vocab_of({"a", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "x", "y", "z"});
  FimTokenIds keys;
  keys.pre = 4;
  keys.suf = 5;
  keys.mid = 6;
  detect_special_tokens(&v, keys);
  EXPECT_EQ(v.fim_pre, 4);
  EXPECT_EQ(v.fim_suf, 5);
  EXPECT_EQ(v.fim_mid, 6);
}

TEST(FimTokens, MarkerTextsWhenNoKeys) {
  for (const auto& [pre, suf, mid] : {std::tuple<std::string, std::string, std::string>{"<|fim_prefix|>",
                                                                                       "<|fim_suffix|>",
                                                                                       "<|fim_middle|>"},
                                      {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
                                      {"\xE2\x96\x81<PRE>", "\xE2\x96\x81<SUF>", "\xE2\x96\x81<MID>"}}) {
    Vocab v = vocab_of({"a", mid, "b", pre, suf});
    detect_special_tokens(&v, {});
    EXPECT_EQ(v.fim_pre, 3) << pre;
    EXPECT_EQ(v.fim_suf, 4) << suf;
    EXPECT_EQ(v.fim_mid, 1) << mid;
    EXPECT_TRUE(v.attr[3] & kAttrControl);
  }
  Vocab none = vocab_of({"a", "b"});
  detect_special_tokens(&none, {});
  EXPECT_EQ(none.fim_pre, -1);
}

// A tokenizer whose encoding is one token per byte (id = byte + 10), so the
// layout can be read off directly.
class ByteTokenizer final : public Tokenizer {
 public:
  explicit ByteTokenizer(bool add_bos) : add_bos_(add_bos) {}
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const override {
    EXPECT_FALSE(parse_special) << "FIM texts are plain text";
    std::vector<int32_t> out;
    if (add_bos) out.push_back(bos_id());
    for (unsigned char c : text) out.push_back(10 + c);
    return out;
  }
  std::vector<int32_t> encode_with_literals(std::string_view text, const std::vector<TextSpan>&,
                                            bool add_bos) const override {
    return encode(text, add_bos, true);
  }
  std::string token_to_piece(int32_t) const override { return ""; }
  int n_vocab() const override { return 300; }
  int32_t bos_id() const override { return 1; }
  int32_t eos_id() const override { return 2; }
  bool add_bos_default() const override { return add_bos_; }
  bool is_eog(int32_t id) const override { return id == 2; }
  bool is_special(int32_t id) const override { return id < 10; }
  FimTokens fim_tokens() const override { return {5, 6, 7}; }

 private:
  bool add_bos_;
};

TEST(FimPrompt, PrefixSuffixMiddleLayout) {
  auto ids = serving::fim_prompt(ByteTokenizer(false), "ab", "c", "d");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{5, 10 + 'a', 10 + 'b', 6, 10 + 'c', 7, 10 + 'd'}));
  auto empty = serving::fim_prompt(ByteTokenizer(false), "", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, (std::vector<int32_t>{5, 6, 7}));
}

TEST(FimPrompt, BosGoesFirstWhenTheModelAddsIt) {
  auto ids = serving::fim_prompt(ByteTokenizer(true), "a", "b");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 5, 10 + 'a', 6, 10 + 'b', 7}));
}

TEST(FimPrompt, VocabularyWithoutMarkersIsRefused) {
  auto f = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/../shared/fixtures/vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(**f);
  ASSERT_TRUE(tok.ok());
  EXPECT_FALSE((*tok)->fim_tokens().available());
  auto ids = serving::fim_prompt(**tok, "a", "b");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), StatusCode::kUnsupported);
}

TEST(FimPrompt, QwenCoderMarkersAreItsFimTokens) {
  auto f = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto tok = Tokenizer::from_gguf(**f);
  ASSERT_TRUE(tok.ok());
  const FimTokens fim = (*tok)->fim_tokens();
  EXPECT_EQ(fim.prefix, (*tok)->find_token("<|fim_prefix|>"));
  EXPECT_EQ(fim.suffix, (*tok)->find_token("<|fim_suffix|>"));
  EXPECT_EQ(fim.middle, (*tok)->find_token("<|fim_middle|>"));
  EXPECT_TRUE(fim.available());
  // The markers' spellings inside the code stay text.
  auto ids = serving::fim_prompt(**tok, "x = '<|fim_suffix|>'", "");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(std::count(ids->begin(), ids->end(), fim.suffix), 1);
}

}  // namespace
}  // namespace stride
