#include "cli/cmd_tokenize.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "loader/gguf_file.h"
#include "loader/model_source.h"
#include "tokenizer/tokenizer.h"

namespace stride {

namespace {

// The exact bytes of a file (a directory or unreadable file is an error).
Expected<std::string> read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return IoError("cannot open '" + path + "': " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f.get())) > 0) out.append(buf, n);
  if (std::ferror(f.get())) return IoError("cannot read '" + path + "': " + std::strerror(errno));
  return out;
}

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
    auto read = read_file(*file);
    if (!read.ok()) return fail_with(read.status().message());
    text = std::move(*read);
  }

  std::error_code ec;
  Expected<std::unique_ptr<Tokenizer>> tok = Unsupported("no tokenizer");
  if (std::filesystem::is_directory(model_path, ec)) {
    tok = Tokenizer::from_hf_folder(model_path);  // an HF folder's tokenizer.json
  } else {
    auto gguf = open_gguf_file(model_path);  // plain or encrypted at rest
    if (!gguf.ok()) return fail_with(gguf.status().to_string());
    tok = Tokenizer::from_gguf(**gguf);
  }
  if (!tok.ok()) return fail_with(model_path + ": " + tok.status().to_string());

  // --bos asks for BOS explicitly, so it is added even where the model's
  // tokenizer.ggml.add_bos_token is false (SmolLM2); a model without BOS is an error.
  std::vector<int32_t> ids;
  if (bos) {
    if ((*tok)->bos_id() < 0) return fail_with(model_path + ": the model has no BOS token");
    ids.push_back((*tok)->bos_id());
  }
  const std::vector<int32_t> body = (*tok)->encode(text, /*add_bos=*/false, /*parse_special=*/true);
  ids.insert(ids.end(), body.begin(), body.end());
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
