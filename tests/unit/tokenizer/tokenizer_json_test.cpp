// tokenizer.json support, checked against Hugging Face tokenizers: real
// tokenizers (converted by transformers from GGUF vocabularies into HF
// folders) encode a corpus of tricky strings to the same ids, with and
// without the post-processor's BOS; and the pre-tokenizer table splits text
// exactly as tokenizers' Split does with the published regexes (qwen2,
// llama-bpe, tekken, gpt-4o). Goldens: scripts/oracles/tokenizer_json_goldens.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/hf_json_pipeline.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "vocab_fixture.h"

namespace stride {
namespace {

using nlohmann::json;

const std::string kGoldenDir = std::string(STRIDE_SOURCE_DIR) + "/tests/data/generated/tokenizer_json";

const json& goldens() {
  static const json j = [] {
    std::ifstream f(kGoldenDir + "/goldens.json");
    return f ? json::parse(f) : json();
  }();
  return j;
}

// Each tokenizer.json must encode every string as tokenizers does, and decode
// plain text back.
TEST(TokenizerJson, MatchesHuggingFaceTokenizers) {
  ASSERT_TRUE(goldens().contains("tokenizers")) << kGoldenDir << "/goldens.json missing: run scripts/setup";
  int tokenizers = 0, strings = 0;
  for (const auto& [name, entry] : goldens()["tokenizers"].items()) {
    auto tok = Tokenizer::from_hf_folder(kGoldenDir + "/" + entry["dir"].get<std::string>());
    ASSERT_TRUE(tok.ok()) << name << ": " << tok.status().to_string();
    int failures = 0;
    for (const json& c : entry["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto plain = (*tok)->encode(text, /*add_bos=*/false);
      const auto with_bos = (*tok)->encode(text, /*add_bos=*/true);
      const auto want_plain = c["ids"].get<std::vector<int32_t>>();
      const auto want_bos = c["ids_with_special"].get<std::vector<int32_t>>();
      EXPECT_EQ(plain, want_plain) << name << " '" << text << "': got " << testing::ids_to_string(plain)
                                   << ", want " << testing::ids_to_string(want_plain);
      EXPECT_EQ(with_bos, want_bos) << name << " (with BOS) '" << text << "'";
      failures += plain != want_plain || with_bos != want_bos;
      ++strings;
    }
    const std::string text = "Hello world: café, 你好 🚀\n  x = 1234;";
    std::string decoded = (*tok)->decode((*tok)->encode(text, false, false));
    // SentencePiece-style files prefix a space that their decoder strips.
    if (decoded.size() == text.size() + 1 && decoded[0] == ' ') decoded.erase(0, 1);
    EXPECT_EQ(decoded, text) << name;
    std::printf("  %-34s %zu strings, %d differ\n", name.c_str(), entry["cases"].size(), failures);
    ++tokenizers;
  }
  std::printf("%d tokenizer.json files, %d strings compared with Hugging Face tokenizers\n", tokenizers,
              strings);
  EXPECT_GE(tokenizers, 5);
}

TEST(TokenizerJson, PreTokenizerTableSplitsLikeHuggingFace) {
  ASSERT_TRUE(goldens().contains("splits")) << "goldens missing: run scripts/setup";
  for (const auto& [name, entry] : goldens()["splits"].items()) {
    auto spec = lookup_pre_tokenizer(name);
    ASSERT_TRUE(spec.ok()) << name;
    auto pre = PreTokenizer::compile(spec->regexes);
    ASSERT_TRUE(pre.ok()) << pre.status().to_string();
    // The published regex itself, compiled by stride, must split the same way too.
    auto published = PreTokenizer::compile({entry["regex"].get<std::string>()});
    ASSERT_TRUE(published.ok()) << published.status().to_string();
    ASSERT_GT(entry["cases"].size(), 50u) << name;
    for (const json& c : entry["cases"]) {
      const std::string text = c["text"].get<std::string>();
      const auto want = c["pieces"].get<std::vector<std::string>>();
      for (const PreTokenizer* p : {&*pre, &*published}) {
        std::vector<std::string> got;
        for (std::string_view w : p->split(text)) got.emplace_back(w);
        EXPECT_EQ(got, want) << name << (p == &*pre ? " (table)" : " (published regex)") << ": '" << text << "'";
      }
    }
  }
}

// tokenizer.json pre_tokenizer entries (Split with merged behaviours, Digits,
// Sequence) cut text as tokenizers' pre_tokenize_str does.
TEST(TokenizerJson, PreTokenizerEntriesSplitLikeHuggingFace) {
  ASSERT_TRUE(goldens().contains("json_splits")) << "goldens missing: run scripts/setup";
  ASSERT_GE(goldens()["json_splits"].size(), 5u);
  for (const json& entry : goldens()["json_splits"]) {
    const json root = {{"model", {{"type", "BPE"}}}, {"pre_tokenizer", entry["pre_tokenizer"]}};
    auto spec = spec_from_tokenizer_json(root);
    ASSERT_TRUE(spec.ok()) << spec.status().to_string();
    auto pre = PreTokenizer::compile(spec->regexes);
    ASSERT_TRUE(pre.ok()) << pre.status().to_string();
    for (const json& c : entry["cases"]) {
      const std::string text = c["text"].get<std::string>();
      std::vector<std::string> got;
      for (std::string_view w : pre->split(text)) got.emplace_back(w);
      EXPECT_EQ(got, c["pieces"].get<std::vector<std::string>>()) << entry["pre_tokenizer"].dump() << ": '" << text << "'";
    }
  }
}

TEST(TokenizerJson, HostileFilesAreErrors) {
  const std::string dir = ::testing::TempDir() + "/stride_tokenizer_json_hostile";
  std::filesystem::create_directories(dir);
  const char* const bad[] = {
      "[]",
      "{}",
      R"({"model": {"type": "Unigram", "vocab": []}})",
      R"({"model": {"type": "BPE", "vocab": [], "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 99999999999}, "merges": []}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1]}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": "x"}]})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}, "behavior": "Isolated"}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "NFKC"}})",
  };
  for (const char* text : bad) {
    std::ofstream(dir + "/tokenizer.json") << text;
    auto tok = Tokenizer::from_hf_folder(dir);
    EXPECT_FALSE(tok.ok()) << text;
  }
  // Odd types where a value is optional load or fail, but never throw.
  const char* const odd[] = {
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "post_processor": {"type": 5}})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1, "content": "<s>", "special": "yes"}]})",
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": 3, "ignore_merges": "no"}})",
  };
  for (const char* text : odd) {
    std::ofstream(dir + "/tokenizer.json") << text;
    EXPECT_NO_THROW((void)Tokenizer::from_hf_folder(dir)) << text;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stride
