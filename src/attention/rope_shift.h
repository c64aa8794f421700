#pragma once
// Re-rotating an already rotated vector: RoPE rotations compose, so rotating
// the query that carries position q by `delta` gives the query at q + delta.
// Cache-relative R-SWA uses delta = -rswa_sink_shift(...) for sink keys.
#include <cstdint>

namespace stride {

struct RopeParams {
  float base = 10000.f;
  float freq_scale = 1.f;
  int rot_dim = 0;  // rotated dims; 0 means head_dim
  bool neox = false;
};

// x: [head_dim]; angles theta_i = freq_scale * base^(-2i/rot_dim), computed in double.
//   neox: pairs (i, i + rot_dim/2); otherwise adjacent pairs (2i, 2i+1).
void rope_rotate_by(float* x, int head_dim, int64_t delta, const RopeParams& rp);

}  // namespace stride
