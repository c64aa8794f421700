#pragma once
// Byte-level BPE pre-tokenization: the text is cut into words by a sequence of
// regexes chosen by tokenizer.ggml.pre (llama.cpp's table). Each regex splits
// every piece left by the previous one; both matches and the gaps between
// them become pieces, and a regex never sees past the end of its piece.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stride {

struct PreTokenizerSpec {
  std::vector<std::string> regexes;
  bool ignore_merges = false;  // a word that is already a token is emitted whole
  bool add_bos = false;        // default for tokenizer.ggml.add_bos_token
  // false: SentencePiece-style BPE on raw UTF-8 (no GPT-2 byte mapping);
  // unknown bytes become <0xXX> tokens.
  bool byte_level = true;
  // Spaces become U+2581 before splitting (and back when decoding).
  bool escape_whitespace = false;
  // Prefix U+2581 to text after a special token (and at the start), or only
  // to text at the very start of the input; optionally not to text that
  // already starts with a space (Metaspace).
  bool prefix_space = false;
  bool prefix_space_first_only = false;
  bool prefix_space_unless_space = false;
  // Without byte_level: a byte with no <0xXX> token becomes the unknown token.
  bool unk_fallback = false;
  // A word of newlines only that is a token is emitted whole (Gemma 4).
  bool newline_words_whole = false;
};

// "" and "default" give llama.cpp's default; unknown names are an error.
Expected<PreTokenizerSpec> lookup_pre_tokenizer(const std::string& pre);

class PreTokenizer {
 public:
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  ~PreTokenizer();

  // Compiles the regexes with PCRE2 (UTF + UCP). `\s` / `\S` are rewritten to
  // the exact whitespace set llama.cpp uses.
  static Expected<PreTokenizer> compile(const std::vector<std::string>& regexes);

  // `text` must be valid UTF-8 (see utf8::sanitize). Returns the words, in order,
  // as views into `text`; together they cover it exactly.
  std::vector<std::string_view> split(std::string_view text) const;

 private:
  struct Impl;
  explicit PreTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Exposed for tests: the PCRE2 pattern after the `\s` rewrite.
std::string rewrite_whitespace_classes(const std::string& pattern);

}  // namespace stride
