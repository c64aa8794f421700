#pragma once
// WordPiece, as BERT-style encoders tokenize (Hugging Face tokenizers'
// WordPiece model behind BertNormalizer + BertPreTokenizer, read from a
// tokenizer.json): each word is split greedily into the longest vocabulary
// pieces, continuations prefixed with "##"; a word with no split, or longer
// than max_input_chars_per_word characters, becomes [UNK]. encode() wraps the
// pieces in [CLS] ... [SEP]. Text that spells a special token ("[SEP]")
// stays text, as everywhere in stride.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/bert_normalizer.h"

namespace stride {

class WordPieceTokenizer {
 public:
  // A tokenizer.json whose model is WordPiece (normalizer: BertNormalizer or none).
  static Expected<std::unique_ptr<WordPieceTokenizer>> from_json_file(const std::string& path);
  static Expected<std::unique_ptr<WordPieceTokenizer>> from_json_text(std::string_view json_text);

  // add_special: [CLS] first and [SEP] last.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true) const;

  int n_vocab() const { return (int)pieces_.size(); }
  const std::string& piece(int32_t id) const { return pieces_.at((size_t)id); }
  int32_t cls_id() const { return cls_; }
  int32_t sep_id() const { return sep_; }
  int32_t unk_id() const { return unk_; }

 private:
  WordPieceTokenizer() = default;
  void encode_word(const std::u32string& word, std::vector<int32_t>& out) const;
  int32_t find(const std::string& piece) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> pieces_;  // [n_vocab] id -> piece
  std::string prefix_ = "##";
  size_t max_word_chars_ = 100;
  BertNormalizerOptions norm_;
  int32_t unk_ = -1, cls_ = -1, sep_ = -1;
};

}  // namespace stride
