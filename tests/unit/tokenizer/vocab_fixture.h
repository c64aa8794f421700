#pragma once
// Reading llama.cpp's tokenizer test vectors: a .inp file of strings separated
// by "\n__ggml_vocab_test__\n" (usually ending with one) and a .out file with
// one line of space-separated token ids per string.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace stride::testing {

inline std::string read_whole_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<std::string> split_vocab_inputs(const std::string& all) {
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
  // Most files end with a separator; the empty piece after it is not a string.
  if (all.size() >= sep.size() && all.compare(all.size() - sep.size(), sep.size(), sep) == 0) {
    out.pop_back();
  }
  return out;
}

inline std::vector<std::vector<int32_t>> read_vocab_outputs(const std::string& path) {
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

inline std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? " " : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace stride::testing
