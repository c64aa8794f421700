#pragma once
// Cuts special tokens (control, user-defined, unknown) out of the input text
// the way llama.cpp's tokenizer_st_partition does: tokens are taken longest
// first, each one at every non-overlapping place, left to right, where it lies
// wholly inside text that no longer-priority token has claimed.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace stride {

// A byte range [begin, end) of an input text.
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
};

struct Fragment {
  int32_t token = -1;     // >= 0: a special token
  std::string_view text;  // otherwise: raw text to tokenize normally
};

class SpecialSplitter {
 public:
  explicit SpecialSplitter(const Vocab& vocab);
  // parse_special=false still cuts user-defined tokens (as llama.cpp does).
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;
  // As split(text, true), except that a control token touching any byte of
  // `literal` (user-supplied text inside chat markup) stays plain text.
  std::vector<Fragment> split(std::string_view text, const std::vector<TextSpan>& literal) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // byte -> child node, sorted
    int32_t rank = -1;                              // index into order_, when a token ends here
  };
  int32_t child(int32_t node, uint8_t byte) const;
  // literal_before: [text.size() + 1] count of literal bytes before each position, or empty.
  std::vector<Fragment> split_impl(std::string_view text, bool parse_special,
                                   const std::vector<uint32_t>& literal_before) const;

  const Vocab& vocab_;
  std::vector<Node> nodes_;     // node 0 is the root
  std::vector<int32_t> order_;  // rank -> token id (priority order)
  std::vector<bool> control_;   // rank -> skipped when !parse_special
};

}  // namespace stride
