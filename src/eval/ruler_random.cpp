#include "eval/ruler_random.h"

#include <array>
#include <string_view>

namespace stride {

namespace {

// Plain words with no digits, so a key never looks like a value.
constexpr std::array<const char*, 48> kAdjectives = {
    "quiet",   "amber",   "brisk",  "coastal", "dusty",   "eager",   "faded",  "gentle",
    "hollow",  "idle",    "jagged", "keen",    "lunar",   "mellow",  "narrow", "olive",
    "pale",    "rapid",   "silent", "tidal",   "upper",   "vivid",   "wooden", "young",
    "ancient", "bitter",  "crimson", "distant", "early",  "frozen",  "golden", "humble",
    "inner",   "jolly",   "little", "misty",   "noble",   "orange",  "proud",  "rustic",
    "scarlet", "tender",  "urban",  "velvet",  "wild",    "yellow",  "zealous", "careful"};
constexpr std::array<const char*, 48> kNouns = {
    "harbor",  "lantern", "meadow",  "canyon",  "falcon",  "glacier", "orchard", "pebble",
    "quarry",  "river",   "saddle",  "thicket", "valley",  "willow",  "anchor",  "beacon",
    "cellar",  "desert",  "engine",  "forest",  "garden",  "hammer",  "island",  "jacket",
    "kettle",  "ladder",  "mirror",  "needle",  "oyster",  "pillow",  "rabbit",  "sparrow",
    "tunnel",  "violin",  "wagon",   "basket",  "candle",  "dolphin", "feather", "granite",
    "horizon", "marble",  "pepper",  "rocket",  "statue",  "teapot",  "walnut",  "zephyr"};
constexpr std::string_view kConsonants = "bdfgklmnprstvz";
constexpr std::string_view kVowels = "aeiou";

}  // namespace

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t SplitMix64::below(uint64_t n) {
  // Reject the top partial block of 2^64 so every residue is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x = next();
  while (x >= limit) x = next();
  return x % n;
}

double SplitMix64::unit() { return (double)(next() >> 11) * 0x1.0p-53; }

std::string SplitMix64::digits(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (char)('0' + (i == 0 ? 1 + below(9) : below(10)));
  return s;
}

std::string SplitMix64::letters(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (char)('A' + below(26));
  return s;
}

uint64_t derive_seed(uint64_t seed, std::initializer_list<uint64_t> parts) {
  uint64_t h = SplitMix64(seed).next();
  for (uint64_t p : parts) h = SplitMix64(h ^ (p * 0xD6E8FEB86659FD93ull + 0x632BE59BD9B4E019ull)).next();
  return h;
}

std::string pseudo_word(SplitMix64& rng, int syllables) {
  std::string s;
  for (int i = 0; i < syllables; ++i) {
    s += kConsonants[rng.below(kConsonants.size())];
    s += kVowels[rng.below(kVowels.size())];
  }
  return s;
}

std::string word_key(SplitMix64& rng) {
  const char* a = kAdjectives[rng.below(kAdjectives.size())];
  const char* n = kNouns[rng.below(kNouns.size())];
  return std::string(a) + "-" + n;
}

std::string uuid_key(SplitMix64& rng) {
  constexpr const char* kHex = "0123456789abcdef";
  std::string s;
  for (int group : {8, 4, 4, 4, 12}) {
    if (!s.empty()) s += '-';
    for (int i = 0; i < group; ++i) s += kHex[rng.below(16)];
  }
  return s;
}

}  // namespace stride
