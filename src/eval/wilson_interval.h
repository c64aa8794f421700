#pragma once
// Wilson's score interval for a success rate: unlike the normal
// approximation it stays inside [0, 1] and is not empty at 0 or n successes,
// which is where long-context cells (all found, none found) usually sit.
// A trial's RULER score may be fractional (the share of several values
// found); the interval then treats the mean score as the rate, which is
// what the suite's cells report.

namespace stride {

struct RateInterval {
  double lo = 0;
  double hi = 1;
};

// z = 1.96 gives the 95% interval. n <= 0 gives [0, 1].
RateInterval wilson_interval(double rate, int n, double z = 1.959963984540054);

}  // namespace stride
