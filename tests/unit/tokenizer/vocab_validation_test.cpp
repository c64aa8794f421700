// Tokenizer metadata validation and small hand-built vocabularies, written as
// GGUF files by a minimal writer.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace stride {
namespace {

// Builds the bytes of a GGUF v3 file with metadata only.
class GGUFBuilder {
 public:
  GGUFBuilder& str(const std::string& key, const std::string& v) {
    this->key(key, 8);
    string(v);
    return count();
  }
  GGUFBuilder& u32(const std::string& key, uint32_t v) {
    this->key(key, 4);
    pod(v);
    return count();
  }
  GGUFBuilder& boolean(const std::string& key, bool v) {
    this->key(key, 7);
    pod(static_cast<uint8_t>(v));
    return count();
  }
  GGUFBuilder& strings(const std::string& key, const std::vector<std::string>& v) {
    this->key(key, 9);
    pod(uint32_t{8});
    pod(static_cast<uint64_t>(v.size()));
    for (const auto& s : v) string(s);
    return count();
  }
  GGUFBuilder& floats(const std::string& key, const std::vector<float>& v) {
    this->key(key, 9);
    pod(uint32_t{6});
    pod(static_cast<uint64_t>(v.size()));
    for (float f : v) pod(f);
    return count();
  }
  GGUFBuilder& ints(const std::string& key, const std::vector<int32_t>& v) {
    this->key(key, 9);
    pod(uint32_t{5});
    pod(static_cast<uint64_t>(v.size()));
    for (int32_t i : v) pod(i);
    return count();
  }

  // Writes the file and opens it with GGUFFile.
  std::unique_ptr<GGUFFile> open(const std::string& name) const {
    std::string out = "GGUF";
    auto put = [&](auto v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    put(uint32_t{3});
    put(uint64_t{0});
    put(n_kv_);
    out += body_;
    out.append((32 - out.size() % 32) % 32, '\0');
    const std::string path = ::testing::TempDir() + "stride_tok_" + name + ".gguf";
    std::ofstream(path, std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
    auto f = GGUFFile::open(path);
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    return f.ok() ? std::move(*f) : nullptr;
  }

 private:
  template <typename T>
  void pod(T v) {
    body_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void string(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    body_ += s;
  }
  void key(const std::string& k, uint32_t type) {
    string(k);
    pod(type);
  }
  GGUFBuilder& count() {
    ++n_kv_;
    return *this;
  }
  std::string body_;
  uint64_t n_kv_ = 0;
};

const std::string kSp = "\xE2\x96\x81";  // "▁"

// A tiny SentencePiece vocabulary: ids 0..2 control, then pieces and bytes.
GGUFBuilder spm_base(size_t n_scores = 9, size_t n_types = 9) {
  std::vector<std::string> tokens = {"<unk>", "<s>",   "</s>",  "a",    "b",
                                     kSp + "a", kSp + "ab", "<0x63>", "<|x|>"};
  std::vector<float> scores = {0, 0, 0, -1, -2, -3, -0.5f, 0, 0};
  std::vector<int32_t> types = {2, 3, 3, 1, 1, 1, 1, 6, 4};
  scores.resize(n_scores);
  types.resize(n_types);
  GGUFBuilder b;
  b.str("tokenizer.ggml.model", "llama").strings("tokenizer.ggml.tokens", tokens);
  b.floats("tokenizer.ggml.scores", scores).ints("tokenizer.ggml.token_type", types);
  return b;
}

Status load_status(const GGUFBuilder& b, const std::string& name) {
  auto f = b.open(name);
  if (!f) return Internal("could not write " + name);
  auto t = Tokenizer::from_gguf(*f);
  return t.ok() ? Status::Ok() : t.status();
}

TEST(VocabValidation, TinySpmEncodesByHand) {
  auto f = spm_base().open("tiny_spm");
  ASSERT_TRUE(f);
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const auto& t = **tok;
  EXPECT_EQ(t.bos_id(), 1);  // llama.cpp's SPM defaults
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos_default());
  // "▁abc": "▁ab" (score -0.5) beats "▁a" + "b"; 'c' has no piece -> <0x63>.
  EXPECT_EQ(t.encode("abc", false), (std::vector<int32_t>{6, 7}));
  // A character with neither a piece nor byte tokens ("▁" here) becomes <unk>s.
  EXPECT_EQ(t.encode("a c", false), (std::vector<int32_t>{5, 0, 0, 0, 7}));
  EXPECT_EQ(t.encode("ab", true), (std::vector<int32_t>{1, 6}));
  // User-defined tokens are cut out even without parse_special; text after a
  // special token gets the space prefix again.
  EXPECT_EQ(t.encode("a<|x|>a", false, false), (std::vector<int32_t>{5, 8, 5}));
  EXPECT_EQ(t.encode("</s>a", false, true), (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(t.token_to_piece(6), " ab");
  EXPECT_EQ(t.token_to_piece(7), "c");
  EXPECT_EQ(t.token_to_piece(2), "");
  EXPECT_EQ(t.token_to_piece_special(2), "</s>");
  EXPECT_EQ(t.token_to_piece(8), "<|x|>");
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_FALSE(t.is_eog(1));
}

TEST(VocabValidation, LongestSpecialTokenIsCutFirst) {
  // llama.cpp cuts specials longest first: in "abcd", "bcd" wins over the
  // earlier but shorter "ab" (a left-to-right scan would pick "ab").
  GGUFBuilder b;
  b.str("tokenizer.ggml.model", "llama")
      .boolean("tokenizer.ggml.add_space_prefix", false)
      .strings("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "ab", "bcd", "d"})
      .floats("tokenizer.ggml.scores", {0, 0, 0, 0, 0, 0, 0})
      .ints("tokenizer.ggml.token_type", {2, 3, 3, 1, 3, 3, 1});
  auto f = b.open("overlap");
  ASSERT_TRUE(f);
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("abcd", false, true), (std::vector<int32_t>{3, 5}));
  EXPECT_EQ((*tok)->encode("abd", false, true), (std::vector<int32_t>{4, 6}));
}

TEST(VocabValidation, TinyBpeMergesByRank) {
  // "Ġ" is GPT-2's image of the space byte.
  GGUFBuilder b;
  b.str("tokenizer.ggml.model", "gpt2")
      .str("tokenizer.ggml.pre", "gpt-2")
      .strings("tokenizer.ggml.tokens", {"a", "b", "\xC4\xA0", "ab", "\xC4\xA0" "a", "\xC4\xA0" "ab"})
      .strings("tokenizer.ggml.merges", {"a b", "\xC4\xA0 a", "\xC4\xA0 ab", "\xC4\xA0a b"});
  auto f = b.open("tiny_bpe");
  ASSERT_TRUE(f);
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // " ab" -> Ġ a b: "a b" (rank 0) merges first, then "Ġ ab" (rank 2).
  EXPECT_EQ((*tok)->encode("ab ab", false), (std::vector<int32_t>{3, 5}));
  EXPECT_EQ((*tok)->token_to_piece(5), " ab");
  EXPECT_FALSE((*tok)->add_bos_default());
  EXPECT_EQ((*tok)->bos_id(), -1);
}

TEST(VocabValidation, MissingOrMismatchedArraysAreErrors) {
  GGUFBuilder no_tokens;
  no_tokens.str("tokenizer.ggml.model", "llama");
  Status s = load_status(no_tokens, "no_tokens");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("tokenizer.ggml.tokens"), std::string::npos) << s.to_string();

  GGUFBuilder no_model;
  no_model.strings("tokenizer.ggml.tokens", {"a"});
  s = load_status(no_model, "no_model");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("tokenizer.ggml.model"), std::string::npos) << s.to_string();

  s = load_status(spm_base(8, 9), "short_scores");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tokenizer.ggml.scores"), std::string::npos) << s.to_string();

  s = load_status(spm_base(9, 10), "long_types");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tokenizer.ggml.token_type"), std::string::npos) << s.to_string();

  GGUFBuilder no_merges;
  no_merges.str("tokenizer.ggml.model", "gpt2").strings("tokenizer.ggml.tokens", {"a"});
  s = load_status(no_merges, "no_merges");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tokenizer.ggml.merges"), std::string::npos) << s.to_string();
}

TEST(VocabValidation, SpecialIdsOutOfRangeAreErrors) {
  Status s = load_status(spm_base().u32("tokenizer.ggml.bos_token_id", 9), "bad_bos");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("bos_token_id"), std::string::npos) << s.to_string();
  s = load_status(spm_base().u32("tokenizer.ggml.eos_token_id", 1000), "bad_eos");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("eos_token_id"), std::string::npos) << s.to_string();
  EXPECT_TRUE(load_status(spm_base().u32("tokenizer.ggml.eos_token_id", 8), "ok_eos").ok());
}

TEST(VocabValidation, UnknownModelOrPreTokenizerIsUnsupported) {
  GGUFBuilder bert;
  bert.str("tokenizer.ggml.model", "bert").strings("tokenizer.ggml.tokens", {"a"});
  Status s = load_status(bert, "bert");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("bert"), std::string::npos);

  GGUFBuilder pre;
  pre.str("tokenizer.ggml.model", "gpt2")
      .str("tokenizer.ggml.pre", "no-such-pre")
      .strings("tokenizer.ggml.tokens", {"a"})
      .strings("tokenizer.ggml.merges", {});
  s = load_status(pre, "bad_pre");
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no-such-pre"), std::string::npos);
}

}  // namespace
}  // namespace stride
