// Byte-level BPE tokenization, as llama.cpp's llm_tokenizer_bpe.
#include <cstdio>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/symbol_merge.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab_tokenizer.h"

namespace stride {

namespace {

}  // namespace

Expected<std::unique_ptr<BpeTokenizer>> BpeTokenizer::create(Vocab vocab) {
  auto spec = lookup_pre_tokenizer(vocab.pre);
  if (!spec.ok()) return spec.status();
  auto pre = PreTokenizer::compile(spec->regexes);
  if (!pre.ok()) return pre.status();
  auto pre_ptr = std::make_unique<PreTokenizer>(std::move(*pre));
  return std::unique_ptr<BpeTokenizer>(
      new BpeTokenizer(std::move(vocab), std::move(pre_ptr), spec->ignore_merges));
}

BpeTokenizer::BpeTokenizer(Vocab vocab, std::unique_ptr<PreTokenizer> pre, bool ignore_merges)
    : VocabTokenizer(std::move(vocab)), pre_(std::move(pre)), ignore_merges_(ignore_merges) {
  build_piece_cache();
}

BpeTokenizer::~BpeTokenizer() = default;

std::string BpeTokenizer::render_normal(const std::string& text) const {
  // Undo the GPT-2 byte mapping; llama.cpp marks unmappable characters visibly.
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

void BpeTokenizer::encode_fragments(const std::vector<Fragment>& fragments,
                                    std::vector<int32_t>& out) const {
  std::string word;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    // llama.cpp tokenizes the text re-encoded from its code points (keeping
    // surrogates); PCRE2 needs valid UTF-8, so it splits a same-length copy.
    const std::string text = utf8::sanitize(f.text, /*replace_surrogates=*/false);
    const std::string valid = utf8::sanitize(f.text, /*replace_surrogates=*/true);
    for (std::string_view w : pre_->split(valid)) {
      const size_t offset = static_cast<size_t>(w.data() - valid.data());
      word.clear();
      for (size_t i = offset; i < offset + w.size(); ++i) {
        word += utf8::byte_to_unicode(static_cast<uint8_t>(text[i]));
      }
      encode_word(word, out);
    }
  }
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
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
      continue;
    }
    // llama.cpp then tries each single byte of the mapped text as a token.
    for (char c : s) {
      const int32_t b = vocab_.find(std::string_view(&c, 1));
      if (b >= 0) out.push_back(b);
    }
  }
}

}  // namespace stride
