#pragma once
// `stride tokenize`: prints the token ids of a prompt or of a file's bytes.
#include <optional>
#include <string>

namespace stride {

// Tokenizes `prompt`, or the exact bytes of `file`, with the vocabulary of the
// GGUF at `model_path` (vocabulary-only files work). Prints the ids on one line
// separated by spaces. BOS is prepended only when `bos` is set (then even for
// models whose add_bos_token is false). Returns 0, or 1 after one "error: ..."
// line on stderr.
int cmd_tokenize(const std::string& model_path, const std::optional<std::string>& prompt,
                 const std::optional<std::string>& file, bool bos);

}  // namespace stride
