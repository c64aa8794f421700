#include "attention/rope_shift.h"

#include <cmath>

namespace stride {

void rope_rotate_by(float* x, int head_dim, int64_t delta, const RopeParams& rp) {
  if (delta == 0) return;
  const int rot = rp.rot_dim > 0 && rp.rot_dim <= head_dim ? rp.rot_dim : head_dim;
  const int half = rot / 2;
  for (int i = 0; i < half; ++i) {
    const double theta = (double)rp.freq_scale * std::pow((double)rp.base, -2.0 * i / rot);
    const double a = (double)delta * theta;
    const double c = std::cos(a), s = std::sin(a);
    const int i0 = rp.neox ? i : 2 * i;
    const int i1 = rp.neox ? i + half : 2 * i + 1;
    const double x0 = x[i0], x1 = x[i1];
    x[i0] = (float)(x0 * c - x1 * s);
    x[i1] = (float)(x0 * s + x1 * c);
  }
}

}  // namespace stride
