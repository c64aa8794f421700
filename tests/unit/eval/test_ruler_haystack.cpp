// The haystack: sentences cut on sentence and line boundaries, runs that
// reproduce the document, inserts at token depths, and the word list.
#include <gtest/gtest.h>

#include "ruler_test_support.h"

namespace stride {
namespace {

using ruler_test::smol;

const std::string kText =
    "Debian is a free operating system. It ships thousands of packages!\n"
    "1.2. Links\n\n"
    "Is apt the package manager? Yes, apt installs packages and their dependencies. "
    "Version 2. The end.\n";

TEST(RulerHaystack, SplitsOnSentencesAndLinesAndRebuildsTheText) {
  ASSERT_TRUE(smol());
  auto h = Haystack::from_text(kText, *smol()->tok);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  // "1.2." and "Version 2." end no sentence (a period after a digit).
  ASSERT_EQ(h->sentence_count(), 6u);
  EXPECT_EQ(h->weave(0, 6, {}).text, kText);
  EXPECT_EQ(h->weave(1, 1, {}).text, "It ships thousands of packages!\n");
  EXPECT_EQ(h->weave(2, 1, {}).text, "1.2. Links\n\n");
  // A run past the end wraps to the start.
  EXPECT_EQ(h->weave(5, 2, {}).text, "Version 2. The end.\nDebian is a free operating system. ");
  EXPECT_GT(h->total_tokens(), 30);
  EXPECT_EQ(h->sentences_for_tokens(0, 1), 1);
  EXPECT_EQ(h->sentences_for_tokens(0, 1 << 20), 6);
}

TEST(RulerHaystack, CutsOverlongSentencesAfterASpace) {
  ASSERT_TRUE(smol());
  std::string table;
  for (int i = 0; i < 40; ++i) table += "column" + std::to_string(i) + " ";  // 40 words, no period
  table += "end.\n";
  auto h = Haystack::from_text(table, *smol()->tok);
  ASSERT_TRUE(h.ok());
  ASSERT_GT(h->sentence_count(), 2u);
  std::string rebuilt;
  for (size_t i = 0; i < h->sentence_count(); ++i) {
    const std::string piece = h->weave(i, 1, {}).text;
    EXPECT_LE(piece.size(), 120u);
    EXPECT_TRUE(piece.back() == ' ' || piece.back() == '\n') << piece;
    rebuilt += piece;
  }
  EXPECT_EQ(rebuilt, table);
}

TEST(RulerHaystack, InsertsLandAtTheirTokenDepth) {
  ASSERT_TRUE(smol());
  auto h = Haystack::from_text(kText, *smol()->tok);
  ASSERT_TRUE(h.ok());
  const WovenText w = h->weave(0, 6, {{1.0, "END."}, {0.0, "START."}, {0.0, "SECOND."}});
  EXPECT_EQ(w.text.rfind("START. SECOND. Debian is", 0), 0u) << w.text;
  EXPECT_TRUE(w.text.ends_with("The end.\nEND.\n")) << w.text;  // after a line: a line of its own
  ASSERT_EQ(w.insert_offsets.size(), 3u);
  EXPECT_EQ(w.insert_offsets[1], 0u);
  EXPECT_EQ(w.insert_offsets[2], 7u);
  EXPECT_EQ(w.text.substr(w.insert_offsets[0], 4), "END.");
  // Depth 0.5: the boundary nearest half of the run's tokens.
  const WovenText mid = h->weave(0, 6, {{0.5, "MID."}});
  const int64_t before = (int64_t)smol()->tok->encode(mid.text.substr(0, mid.insert_offsets[0]), false).size();
  EXPECT_NEAR((double)before / (double)h->total_tokens(), 0.5, 0.25);
}

TEST(RulerHaystack, VocabularyHoldsPlainLowerCaseWords) {
  ASSERT_TRUE(smol());
  auto h = Haystack::from_text("Debian ships apt, x86_64 packages and packages; sudoers files are plain text.",
                               *smol()->tok);
  ASSERT_TRUE(h.ok());
  const std::vector<std::string> want = {"ships", "packages", "sudoers", "files", "plain", "text"};
  EXPECT_EQ(h->vocabulary(), want);  // no capitals, no 3-letter words, no x86_64, no repeats
}

TEST(RulerHaystack, EmptyTextIsAnError) {
  ASSERT_TRUE(smol());
  auto h = Haystack::from_text(" \n\n ", *smol()->tok);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace stride
