#pragma once
// The one source of randomness of the RULER-style suite (eval/ruler_*):
// splitmix64 and the few draws built on it. Every draw is defined here
// bit for bit, so a seed gives the same prompts with any standard library
// (std::uniform_int_distribution and friends differ between them).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace stride {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, n) without modulo bias; n > 0.
  uint64_t below(uint64_t n);
  // Uniform in [0, 1) with 53 bits.
  double unit();
  // n decimal digits, the first one non-zero (so the number keeps n digits).
  std::string digits(int n);
  // n upper-case letters.
  std::string letters(int n);

 private:
  uint64_t state_;
};

// A seed for one part of the suite (task, length, trial ...): the parts are
// mixed in order, so (1, 2) and (2, 1) give different seeds.
uint64_t derive_seed(uint64_t seed, std::initializer_list<uint64_t> parts);

// Fisher-Yates with SplitMix64.
template <typename T>
void shuffle(std::vector<T>& v, SplitMix64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// A pronounceable made-up word of `syllables` consonant-vowel pairs ("kovaru").
std::string pseudo_word(SplitMix64& rng, int syllables);
// A key made of two real words, "adjective-noun" ("quiet-harbor").
std::string word_key(SplitMix64& rng);
// A uuid-like key ("3f2a9c1e-7b4d-4e0f-9a61-c5d2e8b0f417").
std::string uuid_key(SplitMix64& rng);

// `count` distinct strings made by `make` (which draws from rng); gives up
// (returns fewer) only if make keeps repeating itself.
template <typename Make>
std::vector<std::string> distinct(SplitMix64& rng, size_t count, Make make) {
  std::vector<std::string> out;
  for (size_t tries = 0; out.size() < count && tries < count * 100 + 100; ++tries) {
    std::string s = make(rng);
    bool seen = false;
    for (const std::string& o : out) seen = seen || o == s;
    if (!seen) out.push_back(std::move(s));
  }
  return out;
}

}  // namespace stride
