#include "eval/wilson_interval.h"

#include <algorithm>
#include <cmath>

namespace stride {

RateInterval wilson_interval(double rate, int n, double z) {
  if (n <= 0) return {};
  const double p = std::clamp(rate, 0.0, 1.0);
  const double z2n = z * z / n;
  const double center = (p + z2n / 2) / (1 + z2n);
  const double half = z / (1 + z2n) * std::sqrt(p * (1 - p) / n + z2n / (4.0 * n));
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

}  // namespace stride
