#pragma once
// The word-frequency tasks' lists, apart from their prompts so tests can
// count them: common words (cwe: a numbered list where 10 words appear many
// times and the rest rarely) and frequent words (fwe: made-up words drawn
// from a Zipf distribution).
#include <cstdint>
#include <string>
#include <vector>

namespace stride {

struct WordList {
  std::vector<std::string> words;     // in the order they are shown
  std::vector<std::string> expected;  // the most frequent ones, most frequent first
};

// `items` words: kCommonWords words `common` times each, the rest `rare`
// times each (rare < common), drawn from `vocabulary` (made-up words when it
// runs out), shuffled.
constexpr int kCommonWords = 10;
WordList common_words_list(const std::vector<std::string>& vocabulary, uint64_t seed, int64_t items);

// `count` words drawn from a Zipf(alpha = 2) law over made-up words; the
// expected answer is the kFrequentWords most frequent, with a strict gap
// to the next one (a tie is broken by moving one occurrence).
constexpr int kFrequentWords = 3;
WordList frequent_words_list(uint64_t seed, int64_t count);

}  // namespace stride
