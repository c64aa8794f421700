#include "tokenizer/vocab_tokenizer.h"

#include <cstdlib>

namespace stride {

VocabTokenizer::VocabTokenizer(Vocab vocab) : vocab_(std::move(vocab)), splitter_(vocab_) {}

void VocabTokenizer::build_piece_cache() {
  pieces_.resize(vocab_.text.size());
  for (size_t id = 0; id < vocab_.text.size(); ++id) {
    const uint32_t a = vocab_.attr[id];
    const std::string& t = vocab_.text[id];
    if (a & (kAttrUnknown | kAttrControl)) {
      pieces_[id].clear();
    } else if (a & kAttrUserDefined) {
      pieces_[id] = t;
    } else if (a & kAttrNormal) {
      pieces_[id] = render_normal(t);
    } else if (a & kAttrByte) {
      pieces_[id] = byte_piece(t);
    }  // unused / undefined tokens render as nothing
  }
}

std::string VocabTokenizer::byte_piece(const std::string& text) {
  if (text.size() < 5) return "";
  const std::string hex = text.substr(3, 2);
  return std::string(1, static_cast<char>(std::strtol(hex.c_str(), nullptr, 16)));
}

std::string VocabTokenizer::token_to_piece(int32_t id) const {
  return vocab_.valid_id(id) ? pieces_[id] : std::string();
}

std::string VocabTokenizer::token_to_piece_special(int32_t id) const {
  if (!vocab_.valid_id(id)) return "";
  if (vocab_.attr[id] & (kAttrUnknown | kAttrControl)) return vocab_.text[id];
  return pieces_[id];
}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_bos,
                                            bool parse_special) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  encode_fragments(splitter_.split(text, parse_special), out);
  return out;
}

std::vector<int32_t> VocabTokenizer::encode_with_literals(std::string_view text, const std::vector<TextSpan>& literal,
                                                          bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  encode_fragments(splitter_.split(text, literal), out);
  return out;
}

}  // namespace stride
