// BPE tokenization, as llama.cpp's llm_tokenizer_bpe: byte-level (GPT-2
// mapping) or SentencePiece-style on raw UTF-8 (Gemma 4, Llama 2 tokenizer.json).
#include <cstdio>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/space_mark.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_tokenizer.h"

namespace stride {

namespace {

// Undoes the GPT-2 byte mapping; llama.cpp marks unmappable characters visibly.
std::string unmap_bytes(const std::string& text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    const uint32_t cp = utf8::decode_lenient(text, pos, &len);
    const int b = utf8::unicode_to_byte(cp);
    if (b >= 0) {
      out.push_back(static_cast<char>(b));
    } else {
      std::string enc;
      utf8::append(enc, cp);
      out += "[UNK_BYTE_0x";
      for (char c : enc) {
        char hex[3];
        std::snprintf(hex, sizeof(hex), "%02x", static_cast<uint8_t>(c));
        out += hex;
      }
      out += text + "]";
    }
    pos += len;
  }
  return out;
}

}  // namespace

Expected<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(Vocab vocab) {
  auto spec = lookup_pre_tokenizer(vocab.pre);
  if (!spec.ok()) return spec.status();
  return create(std::move(vocab), std::move(*spec));
}

Expected<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(Vocab vocab, PreTokenizerSpec spec) {
  auto pre = PreTokenizer::compile(spec.regexes);
  if (!pre.ok()) return pre.status();
  auto pre_ptr = std::make_unique<PreTokenizer>(std::move(*pre));
  return std::unique_ptr<BpeTokenizer>(
      new BpeTokenizer(std::move(vocab), std::move(pre_ptr), std::move(spec)));
}

BpeTokenizer::BpeTokenizer(Vocab vocab, std::unique_ptr<PreTokenizer> pre, PreTokenizerSpec spec)
    : VocabTokenizer(std::move(vocab)), pre_(std::move(pre)), spec_(std::move(spec)) {
  build_piece_cache();
}

BpeTokenizer::~BpeTokenizer() = default;

std::string BpeTokenizer::render_normal(const std::string& text) const {
  return spec_.escape_whitespace ? unescape_spaces(text) : unmap_bytes(text);
}

void BpeTokenizer::encode_fragments(const std::vector<Fragment>& fragments,
                                    std::vector<int32_t>& out) const {
  std::string word;
  bool prev_special = true;
  for (size_t i = 0; i < fragments.size(); ++i) {
    const Fragment& f = fragments[i];
    if (f.token >= 0) {
      out.push_back(f.token);
      prev_special = true;
      continue;
    }
    bool prefix = spec_.prefix_space_first_only ? i == 0 : spec_.prefix_space && prev_special;
    if (f.text.empty() || (spec_.prefix_space_unless_space && f.text[0] == ' ')) prefix = false;
    prev_special = false;
    // llama.cpp tokenizes the text re-encoded from its code points (keeping
    // surrogates); PCRE2 needs valid UTF-8, so it splits a same-length copy.
    std::string text = utf8::sanitize(f.text, /*replace_surrogates=*/false);
    if (spec_.escape_whitespace) {
      std::string escaped;
      escaped.reserve(text.size() + 16);
      append_escaped_spaces(escaped, text);
      text = std::move(escaped);
    }
    if (prefix) text.insert(0, kSpaceMark);
    const std::string valid =
        spec_.byte_level ? utf8::sanitize(text, /*replace_surrogates=*/true) : text;
    for (std::string_view w : pre_->split(valid)) {
      const size_t offset = static_cast<size_t>(w.data() - valid.data());
      if (!spec_.byte_level) {
        encode_word(std::string(text, offset, w.size()), out);
        continue;
      }
      word.clear();
      for (size_t i = offset; i < offset + w.size(); ++i) {
        word += utf8::byte_to_unicode(static_cast<uint8_t>(text[i]));
      }
      encode_word(word, out);
    }
  }
}

void BpeTokenizer::append_byte_tokens(std::string_view bytes, std::vector<int32_t>& out) const {
  static const char* hex = "0123456789ABCDEF";
  for (char c : bytes) {
    int32_t id = -1;
    if (spec_.byte_level) {
      id = vocab_.find(std::string_view(&c, 1));
    } else {
      const auto b = static_cast<uint8_t>(c);
      const char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
      id = vocab_.find(std::string_view(name, 6));
      if (id < 0 && spec_.unk_fallback) id = vocab_.unk;
    }
    if (id >= 0) out.push_back(id);
  }
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  const bool whole = spec_.ignore_merges ||
                     (spec_.newline_words_whole && word.find_first_not_of('\n') == std::string::npos);
  if (whole) {
    const int32_t id = vocab_.find(word);
    if (id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<MergeSymbol> syms = split_into_symbols(word);
  merge_symbols(word, syms, [&](std::string_view l, std::string_view r) -> std::optional<double> {
    const int32_t rank = vocab_.find_merge(l, r);
    if (rank < 0) return std::nullopt;
    return -static_cast<double>(rank);  // lowest rank first
  });

  for (int i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const std::string_view s(word.data() + syms[i].offset, syms[i].n);
    const int32_t id = vocab_.find(s);
    if (id >= 0) {
      out.push_back(id);
    } else {
      append_byte_tokens(s, out);  // each byte of the symbol's text, as llama.cpp
    }
  }
}

}  // namespace stride
