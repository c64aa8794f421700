#pragma once
// Tokenizers read from GGUF metadata: SentencePiece-style (llama, gemma: scores,
// byte fallback) and byte-level BPE (gpt2 family, pre-tokenizer chosen by
// tokenizer.ggml.pre). Behaviour matches llama.cpp's.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "loader/gguf_file.h"
#include "tokenizer/special_split.h"

namespace stride {

// Fill-in-the-middle marker tokens (-1: the vocabulary has none).
struct FimTokens {
  int32_t prefix = -1, suffix = -1, middle = -1;
  bool available() const { return prefix >= 0 && suffix >= 0 && middle >= 0; }
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  static Expected<std::unique_ptr<Tokenizer>> from_gguf(const GGUFFile& file);
  // A Hugging Face folder's tokenizer.json (BPE: byte-level or
  // SentencePiece-style), with its tokenizer_config.json,
  // generation_config.json and config.json for end-of-generation ids.
  static Expected<std::unique_ptr<Tokenizer>> from_hf_folder(const std::string& dir);

  // add_bos: prepend BOS if the model's rules say so (tokenizer.ggml.add_bos_token).
  // parse_special: text like "<|im_start|>" becomes its special token id.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_bos,
                                      bool parse_special = true) const = 0;
  // Chat prompts: control tokens in the markup become their ids, while text
  // inside `literal` spans (message contents) is always plain text, so a user
  // who writes "<|im_end|>" cannot open a turn of their own. Otherwise
  // identical to encode(text, add_bos, true).
  virtual std::vector<int32_t> encode_with_literals(std::string_view text, const std::vector<TextSpan>& literal,
                                                    bool add_bos) const = 0;
  // The raw bytes of one token (may be a partial UTF-8 sequence). Control and
  // unknown tokens render as "" (as in generated text).
  virtual std::string token_to_piece(int32_t id) const = 0;
  // Like token_to_piece, but control tokens render as their text ("<|im_end|>").
  virtual std::string token_to_piece_special(int32_t id) const { return token_to_piece(id); }
  // The id of the token whose text is exactly `text`, or -1.
  virtual int32_t find_token(std::string_view text) const { return -1; }
  // Concatenated pieces as valid UTF-8 (malformed bytes become U+FFFD).
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string decode(const std::vector<int32_t>& ids, bool render_special) const;

  virtual int n_vocab() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;
  virtual bool add_bos_default() const = 0;
  // End-of-generation: EOS, EOT, <|im_end|>, <end_of_turn> ...
  virtual bool is_eog(int32_t id) const = 0;
  virtual bool is_special(int32_t id) const = 0;
  // From the GGUF's tokenizer.ggml.fim_{pre,suf,mid}_token_id (or the older
  // prefix/suffix/middle keys), else the vocabulary's marker texts.
  virtual FimTokens fim_tokens() const { return {}; }
};

// Turns a stream of token ids into text without splitting UTF-8 characters:
// bytes of an incomplete character are held back until it completes.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool render_special = false)
      : tok_(tok), render_special_(render_special) {}
  std::string push(int32_t id);  // newly completed text
  std::string flush();           // whatever is left (invalid bytes as U+FFFD)

 private:
  const Tokenizer& tok_;
  bool render_special_ = false;
  std::string pending_;
};

}  // namespace stride
