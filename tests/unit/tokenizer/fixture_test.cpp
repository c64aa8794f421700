// llama.cpp's tokenizer test vectors (test-tokenizer-0): every string of the
// .inp file must tokenize (no BOS) to the matching line of the .out file.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace stride {
namespace {

// The fixtures live beside the repository, in shared/fixtures/vocab.
std::string fixture_dir() { return std::string(STRIDE_SOURCE_DIR) + "/../shared/fixtures/vocab/"; }

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The .inp strings are separated by "\n__ggml_vocab_test__\n"; the file ends
// with a separator, so the last split piece is empty and is dropped.
std::vector<std::string> split_inputs(const std::string& all) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t p = all.find(sep, start);
    if (p == std::string::npos) {
      out.push_back(all.substr(start));
      break;
    }
    out.push_back(all.substr(start, p - start));
    start = p + sep.size();
  }
  out.pop_back();
  return out;
}

std::vector<std::vector<int32_t>> read_outputs(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<std::vector<int32_t>> out;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::vector<int32_t> ids;
    int32_t id;
    while (ls >> id) ids.push_back(id);
    out.push_back(ids);
  }
  return out;
}

void check_fixture(const std::string& name) {
  const std::string dir = fixture_dir();
  auto file = GGUFFile::open(dir + name);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();

  const auto inputs = split_inputs(read_all(dir + name + ".inp"));
  const auto expected = read_outputs(dir + name + ".out");
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
