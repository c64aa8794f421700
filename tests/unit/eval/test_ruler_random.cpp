// The suite's PRNG: splitmix64 against its published sequence, and the draws
// built on it (bounded, digits, seeds per part, shuffles).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "eval/ruler_random.h"

namespace stride {
namespace {

TEST(RulerRandom, SplitMix64MatchesTheReferenceSequence) {
  // Vigna's splitmix64.c from state 0.
  SplitMix64 r(0);
  EXPECT_EQ(r.next(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(r.next(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(r.next(), 0x06C45D188009454Full);
}

TEST(RulerRandom, BelowStaysInRangeAndCoversItEvenly) {
  SplitMix64 r(42);
  std::vector<int> hits(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const uint64_t v = r.below(7);
    ASSERT_LT(v, 7u);
    ++hits[v];
  }
  for (int h : hits) EXPECT_TRUE(h > 850 && h < 1150) << h;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(r.below(1), 0u);
  const double u = r.unit();
  EXPECT_TRUE(u >= 0 && u < 1);
}

TEST(RulerRandom, DigitsLettersAndKeysHaveTheirShape) {
  SplitMix64 r(7);
  for (int i = 0; i < 200; ++i) {
    const std::string d = r.digits(7);
    ASSERT_EQ(d.size(), 7u);
    EXPECT_NE(d[0], '0');
    EXPECT_TRUE(std::all_of(d.begin(), d.end(), [](char c) { return std::isdigit((unsigned char)c); }));
    const std::string l = r.letters(5);
    EXPECT_TRUE(std::all_of(l.begin(), l.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) << l;
  }
  const std::string u = uuid_key(r);
  ASSERT_EQ(u.size(), 36u);
  EXPECT_EQ(u[8], '-');
  EXPECT_EQ(u[23], '-');
  const std::string w = word_key(r);
  EXPECT_NE(w.find('-'), std::string::npos);
  EXPECT_TRUE(std::none_of(w.begin(), w.end(), [](char c) { return std::isdigit((unsigned char)c); }));
  EXPECT_EQ(pseudo_word(r, 3).size(), 6u);
}

TEST(RulerRandom, DerivedSeedsDependOnEveryPartAndItsOrder) {
  EXPECT_EQ(derive_seed(1, {2, 3}), derive_seed(1, {2, 3}));
  EXPECT_NE(derive_seed(1, {2, 3}), derive_seed(1, {3, 2}));
  EXPECT_NE(derive_seed(1, {2, 3}), derive_seed(2, {2, 3}));
  EXPECT_NE(derive_seed(1, {2}), derive_seed(1, {2, 0}));
}

TEST(RulerRandom, ShuffleIsASeededPermutation) {
  std::vector<int> a(50), b;
  std::iota(a.begin(), a.end(), 0);
  b = a;
  SplitMix64 r1(5), r2(5);
  shuffle(a, r1);
  shuffle(b, r2);
  EXPECT_EQ(a, b);
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 50; ++i) EXPECT_EQ(sorted[i], i);
  std::vector<int> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_NE(a, identity);
  SplitMix64 r3(9);
  const auto words = distinct(r3, 20, [](SplitMix64& r) { return r.digits(1); });
  EXPECT_EQ(words.size(), 9u);  // only 9 one-digit strings start non-zero: it gives up, not loops
}

}  // namespace
}  // namespace stride
