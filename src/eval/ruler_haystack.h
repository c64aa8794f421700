#pragma once
// The haystack of the RULER-style tasks: a long real document cut into
// sentences (and lines), from which a task takes a run of consecutive
// sentences at a seeded place and hides its needles between them at given
// depths. Depths are measured in tokens, so a needle at depth 0.5 has half
// of the run's tokens before it whatever the sentence lengths.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "tokenizer/special_split.h"
#include "tokenizer/tokenizer.h"

namespace stride {

// A sentence to hide: placed between two sentences of the run.
struct HaystackInsert {
  double depth = 0;  // 0: before the run's first sentence, 1: after its last
  std::string text;
};

struct WovenText {
  std::string text;
  std::vector<size_t> insert_offsets;  // byte offset of each insert in `text`, in the order given
};

class Haystack {
 public:
  // Splits `text` and counts every sentence's tokens once with `tok`.
  // InvalidArgument when the text holds no sentence.
  static Expected<Haystack> from_text(std::string text, const Tokenizer& tok);

  size_t sentence_count() const { return sentences_.size(); }
  int64_t total_tokens() const { return total_tokens_; }
  // How many sentences from `first` hold about `tokens` tokens (at most all of them).
  int64_t sentences_for_tokens(size_t first, int64_t tokens) const;
  // `count` consecutive sentences from `first` (wrapping past the end), each
  // insert placed at the sentence boundary nearest to its depth.
  WovenText weave(size_t first, size_t count, const std::vector<HaystackInsert>& inserts) const;
  // Distinct all-lower-case words of 4 to 10 letters, in order of first appearance.
  const std::vector<std::string>& vocabulary() const { return vocabulary_; }

 private:
  std::string text_;
  std::vector<TextSpan> sentences_;      // byte ranges; each keeps its trailing whitespace
  std::vector<int32_t> sentence_tokens_;  // tokens of each sentence alone
  int64_t total_tokens_ = 0;
  std::vector<std::string> vocabulary_;
};

}  // namespace stride
