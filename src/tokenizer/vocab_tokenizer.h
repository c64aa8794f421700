#pragma once
// What both GGUF tokenizers share: the vocabulary, the special-token
// partition of the input, BOS handling and the token -> piece cache. The
// subclasses only encode a fragment of plain text and render a normal token.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_split.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace stride {

class VocabTokenizer : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool add_bos,
                              bool parse_special = true) const override;
  std::vector<int32_t> encode_with_literals(std::string_view text, const std::vector<TextSpan>& literal,
                                            bool add_bos) const override;
  std::string token_to_piece(int32_t id) const override;
  std::string token_to_piece_special(int32_t id) const override;
  int32_t find_token(std::string_view text) const override { return vocab_.find(text); }

  int n_vocab() const override { return vocab_.n_vocab(); }
  int32_t bos_id() const override { return vocab_.bos; }
  int32_t eos_id() const override { return vocab_.eos; }
  bool add_bos_default() const override { return vocab_.add_bos; }
  bool is_eog(int32_t id) const override { return vocab_.eog.count(id) != 0; }
  bool is_special(int32_t id) const override {
    return vocab_.valid_id(id) && (vocab_.attr[id] & (kAttrControl | kAttrUnknown)) != 0;
  }

  FimTokens fim_tokens() const override { return {vocab_.fim_pre, vocab_.fim_suf, vocab_.fim_mid}; }

  const Vocab& vocab() const { return vocab_; }

 protected:
  explicit VocabTokenizer(Vocab vocab);
  // Fills the piece cache; call once the subclass is ready to render tokens.
  void build_piece_cache();
  // Encodes the text fragments between special tokens.
  virtual void encode_fragments(const std::vector<Fragment>& fragments,
                                std::vector<int32_t>& out) const = 0;
  // The bytes of a token of normal type.
  virtual std::string render_normal(const std::string& text) const = 0;
  // <0xXX> -> the byte.
  static std::string byte_piece(const std::string& text);

  Vocab vocab_;
  SpecialSplitter splitter_;
  std::vector<std::string> pieces_;  // [n_vocab] control/unknown tokens -> ""
};

// SentencePiece-style (tokenizer.ggml.model = "llama"): spaces become U+2581,
// adjacent pieces merge by best score, unknown pieces fall back to <0xXX>.
class SpmTokenizer final : public VocabTokenizer {
 public:
  explicit SpmTokenizer(Vocab vocab);

 private:
  void encode_fragments(const std::vector<Fragment>& fragments,
                        std::vector<int32_t>& out) const override;
  void encode_text(std::string_view raw, bool prefix_space, std::vector<int32_t>& out) const;
  std::string render_normal(const std::string& text) const override;
  int32_t byte_token(uint8_t b) const;
};

class PreTokenizer;

// BPE with merges by rank (tokenizer.ggml.model = "gpt2" / "gemma4", or a
// tokenizer.json BPE model): regex pre-tokenization, then either the GPT-2
// byte mapping (byte-level) or SentencePiece-style raw UTF-8 with U+2581 for
// spaces and <0xXX> byte fallback.
class BpeTokenizer final : public VocabTokenizer {
 public:
  // The pre-tokenizer named by vocab.pre (llama.cpp's table).
  static Expected<std::unique_ptr<BpeTokenizer>> create(Vocab vocab);
  static Expected<std::unique_ptr<BpeTokenizer>> create(Vocab vocab, PreTokenizerSpec spec);
  ~BpeTokenizer() override;

 private:
  BpeTokenizer(Vocab vocab, std::unique_ptr<PreTokenizer> pre, PreTokenizerSpec spec);
  void encode_fragments(const std::vector<Fragment>& fragments,
                        std::vector<int32_t>& out) const override;
  void encode_word(const std::string& word, std::vector<int32_t>& out) const;
  std::string render_normal(const std::string& text) const override;
  // Byte-level: the token of the mapped byte; otherwise <0xXX>, then unk.
  void append_byte_tokens(std::string_view bytes, std::vector<int32_t>& out) const;

  std::unique_ptr<PreTokenizer> pre_;
  PreTokenizerSpec spec_;
};

}  // namespace stride
