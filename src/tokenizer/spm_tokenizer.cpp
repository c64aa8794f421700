// SentencePiece-style tokenization, as llama.cpp's llm_tokenizer_spm.

#include "tokenizer/space_mark.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_tokenizer.h"

namespace stride {

SpmTokenizer::SpmTokenizer(Vocab vocab) : VocabTokenizer(std::move(vocab)) { build_piece_cache(); }

std::string SpmTokenizer::render_normal(const std::string& text) const { return unescape_spaces(text); }

int32_t SpmTokenizer::byte_token(uint8_t b) const {
  static const char* hex = "0123456789ABCDEF";
  const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
  int32_t id = vocab_.find(std::string_view(name, 6));
  if (id < 0) id = vocab_.find(std::string_view(reinterpret_cast<const char*>(&b), 1));
  return id >= 0 ? id : vocab_.unk;
}

void SpmTokenizer::encode_fragments(const std::vector<Fragment>& fragments,
                                    std::vector<int32_t>& out) const {
  // llama.cpp prefixes a space to the first text and to text after a special token.
  bool prev_special = true;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
    } else {
      encode_text(f.text, vocab_.add_space_prefix && prev_special, out);
      prev_special = false;
    }
  }
}

void SpmTokenizer::encode_text(std::string_view raw, bool prefix_space,
                               std::vector<int32_t>& out) const {
  std::string text;
  text.reserve(raw.size() + 8);
  if (prefix_space) text.append(kSpaceMark);
  append_escaped_spaces(text, raw);

  std::vector<MergeSymbol> syms = split_into_symbols(text);
  merge_symbols(text, syms, [&](std::string_view l, std::string_view r) -> std::optional<double> {
    // Neighbouring symbols are adjacent spans of the text.
    const int32_t id = vocab_.find(std::string_view(l.data(), l.size() + r.size()));
    if (id < 0) return std::nullopt;
    return static_cast<double>(vocab_.score[id]);  // highest score first
  });

  // Every merged symbol is a token; leftover single characters that are not
  // fall back to their bytes.
  for (int i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const std::string_view s(text.data() + syms[i].offset, syms[i].n);
    const int32_t id = vocab_.find(s);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : s) {
      const int32_t b = byte_token(static_cast<uint8_t>(c));
      if (b >= 0) out.push_back(b);
    }
  }
}

}  // namespace stride
