#include "attention/rope_shift.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace stride {

namespace {
// Independent RoPE at an absolute position, straight from the definition.
void rope_at(std::vector<float>& x, int64_t pos, int rot, double freq_scale, bool neox) {
  for (int i = 0; i < rot / 2; ++i) {
    const double a = pos * freq_scale * std::pow(10000.0, -2.0 * i / rot);
    const int i0 = neox ? i : 2 * i, i1 = neox ? i + rot / 2 : 2 * i + 1;
    const double x0 = x[i0], x1 = x[i1];
    x[i0] = (float)(x0 * std::cos(a) - x1 * std::sin(a));
    x[i1] = (float)(x0 * std::sin(a) + x1 * std::cos(a));
  }
}
}  // namespace

TEST(RopeShift, RotatingBackEqualsRopeAtTheShiftedPosition) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (bool neox : {false, true}) {
    for (int rot : {64, 32}) {
      RopeTable rp = RopeTable::plain(10000.0, rot, 0.5, neox);
      rp.magnitude = 1.7f;  // already carried by x: never applied again
      std::vector<float> raw(64);
      for (float& v : raw) v = nd(rng);
      std::vector<float> at_p = raw, at_shifted = raw;
      rope_at(at_p, 5000, rot, 0.5, neox);
      rope_at(at_shifted, 5000 - 4321, rot, 0.5, neox);
      rope_rotate_by(at_p.data(), 64, -4321, rp);
      for (int i = 0; i < 64; ++i) EXPECT_NEAR(at_p[i], at_shifted[i], 2e-4) << i;
      if (rot == 32) {
        for (int i = 32; i < 64; ++i) EXPECT_EQ(at_p[i], raw[i]);  // unrotated tail
      }
    }
  }
}

}  // namespace stride
