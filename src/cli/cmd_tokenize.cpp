#include "cli/cmd_tokenize.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace stride {

namespace {

int fail_with(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int cmd_tokenize(const std::string& model_path, const std::optional<std::string>& prompt,
                 const std::optional<std::string>& file, bool bos) {
  if (prompt.has_value() == file.has_value()) {
    return fail_with("give exactly one of --prompt or --file");
  }
  std::string text;
  if (prompt) {
    text = *prompt;
  } else {
    std::ifstream in(*file, std::ios::binary);
    if (!in) return fail_with("cannot open '" + *file + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return fail_with("cannot read '" + *file + "'");
    text = ss.str();
  }

  auto gguf = GGUFFile::open(model_path);
  if (!gguf.ok()) return fail_with(gguf.status().to_string());
  auto tok = Tokenizer::from_gguf(**gguf);
  if (!tok.ok()) return fail_with(model_path + ": " + tok.status().to_string());

  const std::vector<int32_t> ids = (*tok)->encode(text, bos, /*parse_special=*/true);
  std::string line;
  line.reserve(ids.size() * 6 + 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line.push_back(' ');
    line += std::to_string(ids[i]);
  }
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stdout);
  return 0;
}

}  // namespace stride
