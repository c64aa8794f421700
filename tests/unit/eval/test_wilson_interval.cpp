// Wilson score intervals against the published values of Newcombe (1998),
// "Two-sided confidence intervals for the single proportion", Statistics in
// Medicine 17:857-872, Table II, method 3 (score interval without continuity
// correction), to four decimals.
#include <gtest/gtest.h>

#include "eval/wilson_interval.h"

namespace stride {
namespace {

void expect_interval(int successes, int n, double lo, double hi) {
  const RateInterval ci = wilson_interval((double)successes / n, n);
  EXPECT_NEAR(ci.lo, lo, 5e-5) << successes << "/" << n;
  EXPECT_NEAR(ci.hi, hi, 5e-5) << successes << "/" << n;
}

TEST(WilsonInterval, MatchesNewcombesTable) {
  expect_interval(81, 263, 0.2553, 0.3662);
  expect_interval(15, 148, 0.0624, 0.1605);
  expect_interval(0, 20, 0.0000, 0.1611);
  expect_interval(1, 29, 0.0061, 0.1718);
}

TEST(WilsonInterval, StaysInsideTheUnitRangeAndIsNotEmptyAtTheEnds) {
  const RateInterval all = wilson_interval(1.0, 20);
  EXPECT_DOUBLE_EQ(all.hi, 1.0);
  EXPECT_LT(all.lo, 1.0);
  EXPECT_GT(all.lo, 0.8);
  const RateInterval none = wilson_interval(0.0, 10);
  EXPECT_DOUBLE_EQ(none.lo, 0.0);
  EXPECT_GT(none.hi, 0.25);
}

TEST(WilsonInterval, NarrowsWithMoreTrials) {
  const RateInterval few = wilson_interval(0.5, 10), many = wilson_interval(0.5, 1000);
  EXPECT_LT(many.hi - many.lo, (few.hi - few.lo) / 5);
}

TEST(WilsonInterval, NoTrialsSayNothing) {
  const RateInterval ci = wilson_interval(0.7, 0);
  EXPECT_EQ(ci.lo, 0.0);
  EXPECT_EQ(ci.hi, 1.0);
}

}  // namespace
}  // namespace stride
