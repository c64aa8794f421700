#pragma once
// BERT's text normalization and pre-tokenization, as Hugging Face tokenizers'
// BertNormalizer and BertPreTokenizer do it (the fast tokenizer that
// sentence-transformers loads):
//   1. clean: drop NUL, U+FFFD and control characters (categories Cc, Cf,
//      Cs, Co, except \t \n \r); every White_Space character becomes ' ';
//   2. CJK ideographs get a space on each side;
//   3. strip accents: NFD, then drop non-spacing marks (Mn);
//   4. lowercase (full Unicode mapping: U+0130 becomes "i" + U+0307);
//   5. split on whitespace and isolate every punctuation character (Unicode
//      P* categories and all ASCII punctuation, such as $ + < = > ^ ` |).
// Unicode data comes from ICU.
#include <string>
#include <string_view>
#include <vector>

namespace stride {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

// Steps 1-4. Malformed UTF-8 bytes become U+FFFD first (and so are dropped).
std::u32string bert_normalize(std::string_view text, const BertNormalizerOptions& opts);

// Step 5 over a normalized text: the words, each as UTF-32.
std::vector<std::u32string> bert_pre_tokenize(const std::u32string& text);

}  // namespace stride
