// Every tokenizer test vector that llama.cpp ships (models/ggml-vocab-*.gguf
// with .inp/.out pairs, unpacked by scripts/oracles/fetch_vocab_fixtures):
// each string of the .inp file must tokenize (no BOS, special text left as
// text) to the matching line of the .out file. Vocabularies that stride does
// not claim are listed with the reason in unclaimed_vocabs.txt; any other file
// that does not reproduce every line fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "vocab_fixture.h"

namespace stride {
namespace {

namespace fs = std::filesystem;

fs::path fixtures_dir() {
  if (const char* d = std::getenv("STRIDE_VOCAB_FIXTURES")) return d;
  const char* cache = std::getenv("STRIDE_CACHE");
  if (cache) return fs::path(cache) / "vocab-fixtures";
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache/stride/vocab-fixtures";
}

std::set<std::string> unclaimed() {
  std::set<std::string> out;
  std::ifstream f(fs::path(STRIDE_SOURCE_DIR) / "tests/unit/tokenizer/unclaimed_vocabs.txt");
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    out.insert(line.substr(0, line.find_first_of(" \t")));
  }
  return out;
}

// Lines of one fixture that stride reproduces; -1 when the vocabulary does not load.
struct FileResult {
  int lines = 0;
  int passed = 0;
  std::string first_failure;
};

FileResult run_fixture(const fs::path& gguf) {
  FileResult r;
  const auto inputs = testing::split_vocab_inputs(testing::read_whole_file(gguf.string() + ".inp"));
  const auto expected = testing::read_vocab_outputs(gguf.string() + ".out");
  r.lines = static_cast<int>(expected.size());
  if (inputs.size() != expected.size()) {
    r.first_failure = ".inp and .out differ in length";
    return r;
  }
  auto file = GGUFFile::open(gguf.string());
  if (!file.ok()) {
    r.first_failure = file.status().to_string();
    return r;
  }
  auto tok = Tokenizer::from_gguf(**file);
  if (!tok.ok()) {
    r.first_failure = tok.status().to_string();
    return r;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto got = (*tok)->encode(inputs[i], /*add_bos=*/false, /*parse_special=*/false);
    if (got == expected[i]) {
      ++r.passed;
    } else if (r.first_failure.empty()) {
      r.first_failure = "line " + std::to_string(i + 1) + " '" + inputs[i] + "': got " +
                        testing::ids_to_string(got) + ", want " + testing::ids_to_string(expected[i]);
    }
  }
  return r;
}

TEST(VocabCorpus, ClaimedVocabsMatchLlamaCpp) {
  const fs::path dir = fixtures_dir();
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 9 && name.compare(name.size() - 9, 9, ".gguf.out") == 0) {
      files.push_back(dir / name.substr(0, name.size() - 4));
    }
  }
  if (ec || files.empty()) FAIL() << "no fixtures in " << dir << ": run scripts/setup";
  std::sort(files.begin(), files.end());
  const std::set<std::string> skip = unclaimed();

  int files_passed = 0, lines_total = 0, lines_passed = 0;
  for (const fs::path& f : files) {
    const std::string name = f.filename().string();
    const FileResult r = run_fixture(f);
    lines_total += r.lines;
    lines_passed += r.passed;
    const bool all = r.lines > 0 && r.passed == r.lines;
    files_passed += all;
    if (skip.count(name)) {
      std::printf("  %-34s unclaimed, %d of %d lines\n", name.c_str(), r.passed, r.lines);
      continue;
    }
    std::printf("  %-34s %d of %d lines\n", name.c_str(), r.passed, r.lines);
    EXPECT_TRUE(all) << name << ": " << r.passed << " of " << r.lines << " lines; "
                     << r.first_failure;
  }
  std::printf("%d of %zu fixture files pass all lines (%d of %d lines)\n", files_passed,
              files.size(), lines_passed, lines_total);
  // The committed list names files that exist (no stale entries).
  for (const std::string& name : skip) {
    EXPECT_TRUE(fs::exists(dir / name)) << "unclaimed_vocabs.txt names a missing file: " << name;
  }
}

}  // namespace
}  // namespace stride
