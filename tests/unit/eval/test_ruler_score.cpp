// RULER's string_match_all on hand-written outputs.
#include <gtest/gtest.h>

#include "eval/ruler_score.h"

namespace stride {
namespace {

TEST(RulerScore, ShareOfExpectedStringsFound) {
  const std::vector<std::string> four = {"1234567", "7654321", "1111111", "2222222"};
  EXPECT_DOUBLE_EQ(score_answer(" 1234567, 7654321, 1111111 and 2222222.", four), 1.0);
  EXPECT_DOUBLE_EQ(score_answer("1234567 and 1111111", four), 0.5);
  EXPECT_DOUBLE_EQ(score_answer("I do not know.", four), 0.0);
  EXPECT_DOUBLE_EQ(score_answer("", four), 0.0);
  EXPECT_DOUBLE_EQ(score_answer("765432", {"7654321"}), 0.0);  // a prefix is not the number
}

TEST(RulerScore, IgnoresCase) {
  EXPECT_DOUBLE_EQ(score_answer("They are: QUIET, Harbor", {"quiet", "harbor", "willow"}), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(score_answer("vars: abcde and FGHIJ", {"ABCDE", "fghij"}), 1.0);
}

TEST(RulerScore, AccuracyIsTheMeanOfTrials) {
  AccuracyMean m;
  EXPECT_EQ(m.value(), 0.0);
  m.add(1.0);
  m.add(0.5);
  m.add(0.0);
  EXPECT_DOUBLE_EQ(m.value(), 0.5);
  EXPECT_EQ(m.count(), 3);
  EXPECT_DOUBLE_EQ(score_answer("anything", {}), 1.0);
}

}  // namespace
}  // namespace stride
