// llama.cpp's tokenizer test vectors (test-tokenizer-0): every string of the
// .inp file must tokenize (no BOS) to the matching line of the .out file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "vocab_fixture.h"

namespace stride {
namespace {

// The fixtures live beside the repository, in shared/fixtures/vocab.
std::string fixture_dir() { return std::string(STRIDE_SOURCE_DIR) + "/../shared/fixtures/vocab/"; }

void check_fixture(const std::string& name) {
  const std::string dir = fixture_dir();
  auto file = GGUFFile::open(dir + name);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();

  const auto inputs = testing::split_vocab_inputs(testing::read_whole_file(dir + name + ".inp"));
  const auto expected = testing::read_vocab_outputs(dir + name + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 40u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto got = (*tok)->encode(inputs[i], /*add_bos=*/false, /*parse_special=*/false);
    EXPECT_EQ(got, expected[i]) << "line " << i + 1 << ": '" << inputs[i] << "'";
  }
}

TEST(TokenizerFixture, LlamaSpmMatchesLlamaCpp) { check_fixture("ggml-vocab-llama-spm.gguf"); }

TEST(TokenizerFixture, Gpt2BpeMatchesLlamaCpp) { check_fixture("ggml-vocab-gpt-2.gguf"); }

}  // namespace
}  // namespace stride
