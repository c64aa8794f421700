// Pre-tokenizer regex sequences: hand-derived splits for the main families.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"

namespace stride {
namespace {

std::vector<std::string> split(const std::string& pre, const std::string& text) {
  auto spec = lookup_pre_tokenizer(pre);
  EXPECT_TRUE(spec.ok()) << spec.status().to_string();
  if (!spec.ok()) return {};
  auto p = PreTokenizer::compile(spec->regexes);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  if (!p.ok()) return {};
  std::vector<std::string> out;
  for (auto w : p->split(text)) out.emplace_back(w);
  return out;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, EveryKnownNameCompiles) {
  for (const char* name :
       {"", "default", "llama3", "llama-bpe", "dbrx", "chatglm-bpe", "glm4", "deepseek-llm",
        "deepseek-v3", "deepseek-coder", "falcon", "starcoder", "refact", "command-r", "smollm",
        "gpt-2", "mpt", "olmo", "qwen2", "stablelm2", "qwen35", "poro-chat", "bloom", "viking",
        "tekken", "gpt-4o", "llama4", "chameleon", "exaone", "jais"}) {
    auto spec = lookup_pre_tokenizer(name);
    ASSERT_TRUE(spec.ok()) << name;
    auto p = PreTokenizer::compile(spec->regexes);
    EXPECT_TRUE(p.ok()) << name << ": " << p.status().to_string();
  }
  auto bad = lookup_pre_tokenizer("nonsense");
  EXPECT_EQ(bad.status().code(), StatusCode::kUnsupported);
}

TEST(PreTokenizer, Gpt2) {
  // "  end": \s+(?!\S) leaves the last space to join " end".
  EXPECT_EQ(split("gpt-2", "Hello world's  end\n"),
            (Words{"Hello", " world", "'s", " ", " end", "\n"}));
  // Contractions are case-sensitive in GPT-2; a lone tab before a letter is a gap.
  EXPECT_EQ(split("gpt-2", "I'M\tx 12"), (Words{"I", "'", "M", "\t", "x", " 12"}));
}

TEST(PreTokenizer, SmollmSplitsDigitsFirst) {
  // \p{N} runs first, so the space before the digits is left on its own.
  EXPECT_EQ(split("smollm", "ab 123"), (Words{"ab", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, Llama3) {
  EXPECT_EQ(split("llama3", "I'M 1234567"), (Words{"I", "'M", " ", "123", "456", "7"}));
  EXPECT_EQ(split("llama3", "x!?\n\n  y"), (Words{"x", "!?\n\n", " ", " y"}));
}

TEST(PreTokenizer, Qwen2SingleDigits) {
  EXPECT_EQ(split("qwen2", "abc 12"), (Words{"abc", " ", "1", "2"}));
}

TEST(PreTokenizer, DeepseekCoderAndFalcon) {
  EXPECT_EQ(split("deepseek-coder", "ab\ncd"), (Words{"ab", "\n", "cd"}));
  // Punctuation first, then GPT-2, then runs of three ASCII digits.
  EXPECT_EQ(split("falcon", "a, 1234"), (Words{"a", ",", " ", "123", "4"}));
}

TEST(PreTokenizer, WhitespaceUsesLlamaCppSet) {
  const std::string p = rewrite_whitespace_classes("[^\\s\\p{L}]+|\\s+(?!\\S)");
  EXPECT_EQ(p.find("\\s"), std::string::npos) << p;
  EXPECT_EQ(p.find("\\S"), std::string::npos) << p;
  EXPECT_EQ(p.rfind("[^\\t-\\r ", 0), 0u) << p;
  // U+180E is not whitespace for llama.cpp (PCRE2's UCP \s says it is), so it
  // joins the punctuation run instead of being left as a gap.
  EXPECT_EQ(split("gpt-2", "a \xE1\xA0\x8E!"), (Words{"a", " \xE1\xA0\x8E!"}));
}

}  // namespace
}  // namespace stride
