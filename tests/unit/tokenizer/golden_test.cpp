// Real models against llama.cpp: tests/data/tokenizer_goldens.json is written by
// scripts/oracles/tokenizer_goldens.py (llama-cpp-python, vocab only).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace stride {
namespace {

using nlohmann::json;

const json& goldens() {
  static const json j = [] {
    std::ifstream f(std::string(STRIDE_SOURCE_DIR) + "/tests/data/tokenizer_goldens.json");
    return f ? json::parse(f) : json();
  }();
  return j;
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(goldens().contains("models")) << "tests/data/tokenizer_goldens.json missing";
    model_ = goldens()["models"][GetParam()];
    auto file = GGUFFile::open(std::string(STRIDE_SOURCE_DIR) + "/" +
                               model_["path"].get<std::string>());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    file_ = std::move(*file);
    auto tok = Tokenizer::from_gguf(*file_);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::move(*tok);
  }
  json model_;
  std::unique_ptr<GGUFFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_P(GoldenTest, EncodeMatchesLlamaCpp) {
  const json& cases = model_["cases"];
  ASSERT_GT(cases.size(), 40u);
  for (const json& c : cases) {
    const std::string text = c.contains("text_hex") ? from_hex(c["text_hex"].get<std::string>())
                                                      : c["text"].get<std::string>();
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    const auto got = tok_->encode(text, c["add_bos"].get<bool>(), c["parse_special"].get<bool>());
    EXPECT_EQ(got, expected) << "text: '" << text << "' add_bos=" << c["add_bos"]
                             << " parse_special=" << c["parse_special"];
  }
}

TEST_P(GoldenTest, VocabularyFactsMatchLlamaCpp) {
  EXPECT_EQ(tok_->n_vocab(), model_["n_vocab"].get<int>());
  EXPECT_EQ(tok_->bos_id(), model_["bos"].get<int32_t>());
  EXPECT_EQ(tok_->eos_id(), model_["eos"].get<int32_t>());
  EXPECT_EQ(tok_->add_bos_default(), model_["add_bos"].get<bool>());
  const auto eog = model_["eog"].get<std::set<int32_t>>();
  ASSERT_FALSE(eog.empty());
  for (int32_t id = 0; id < tok_->n_vocab(); ++id) {
    EXPECT_EQ(tok_->is_eog(id), eog.count(id) != 0) << "id " << id;
  }
}

TEST_P(GoldenTest, PiecesMatchLlamaCpp) {
  ASSERT_GT(model_["pieces"].size(), 300u);
  for (const auto& [id, hex] : model_["pieces"].items()) {
    EXPECT_EQ(tok_->token_to_piece(std::stoi(id)), from_hex(hex)) << "id " << id;
  }
  for (const auto& [id, hex] : model_["pieces_special"].items()) {
    EXPECT_EQ(tok_->token_to_piece_special(std::stoi(id)), from_hex(hex)) << "id " << id;
  }
}

// Encoding then decoding gives the text back for text without special tokens
// (SmolLM2 is byte-level so it is lossless; Gemma's pieces are too, since it
// has no space prefix).
TEST_P(GoldenTest, DecodeRoundTripsPlainText) {
  for (const json& c : model_["cases"]) {
    if (!c.contains("text")) continue;  // raw bytes: not valid UTF-8, no round trip
    const std::string text = c["text"];
    if (text.find('<') != std::string::npos) continue;  // may hold special tokens
    const auto ids = tok_->encode(text, false, true);
    EXPECT_EQ(tok_->decode(ids), text);
  }
}

INSTANTIATE_TEST_SUITE_P(RealModels, GoldenTest, ::testing::Values("smollm2", "gemma3"));

}  // namespace
}  // namespace stride
