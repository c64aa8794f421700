#include "dist/partial_merge.h"

#include <algorithm>

namespace stride::dist {

void merge_partials(const PartialsLayout& layout, const float* parts, int n_parts, float* out) {
  const int rows = layout.rows, dv = layout.dv;
  std::vector<float> acc((size_t)dv);
  for (int r = 0; r < rows; ++r) {
    SoftmaxPartial state;
    std::fill(acc.begin(), acc.end(), 0.f);
    for (int i = 0; i < n_parts; ++i) {
      const float* part = parts + (size_t)i * layout.floats();
      const SoftmaxPartial shard{part[r], part[rows + r]};
      softmax_merge(state, acc.data(), shard, part + 2 * (size_t)rows + (size_t)r * dv, dv);
    }
    // As the kernel writes a row: o * (1 / d), zeros for a row that saw no key.
    const float inv = state.d > 0.f ? 1.f / state.d : 0.f;
    float* dst = out + (size_t)r * dv;
    for (int t = 0; t < dv; ++t) dst[t] = acc[t] * inv;
  }
}

}  // namespace stride::dist
