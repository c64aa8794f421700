// Tokenizer::from_gguf, decoding and the UTF-8-safe stream decoder.
#include "tokenizer/tokenizer.h"

#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"
#include "tokenizer/vocab_tokenizer.h"

namespace stride {

Expected<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GGUFFile& file) {
  auto vocab = load_vocab(file);
  if (!vocab.ok()) return vocab.status();
  if (vocab->type == VocabType::kSpm) {
    return std::unique_ptr<Tokenizer>(std::make_unique<SpmTokenizer>(std::move(*vocab)));
  }
  auto bpe = BpeTokenizer::create(std::move(*vocab));
  if (!bpe.ok()) return bpe.status();
  return std::unique_ptr<Tokenizer>(std::move(*bpe));
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const { return decode(ids, false); }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
  StreamDecoder dec(*this, render_special);
  std::string out;
  for (int32_t id : ids) out += dec.push(id);
  out += dec.flush();
  return out;
}

std::string StreamDecoder::push(int32_t id) {
  pending_ += render_special_ ? tok_.token_to_piece_special(id) : tok_.token_to_piece(id);
  return utf8::take_complete(pending_, false);
}

std::string StreamDecoder::flush() { return utf8::take_complete(pending_, true); }

}  // namespace stride
