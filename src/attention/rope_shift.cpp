#include "attention/rope_shift.h"

#include <algorithm>
#include <cmath>

namespace stride {

void rope_rotate_by(float* x, int head_dim, int64_t delta, const RopeTable& table) {
  if (delta == 0) return;
  const int rot = std::min(table.rot_dim(), head_dim) & ~1;
  const int half = rot / 2;
  for (int i = 0; i < half; ++i) {
    const double a = (double)delta * table.inv_freq[i];
    const double c = std::cos(a), s = std::sin(a);
    const int i0 = table.neox ? i : 2 * i;
    const int i1 = table.neox ? i + half : 2 * i + 1;
    const double x0 = x[i0], x1 = x[i1];
    x[i0] = (float)(x0 * c - x1 * s);
    x[i1] = (float)(x0 * s + x1 * c);
  }
}

}  // namespace stride
