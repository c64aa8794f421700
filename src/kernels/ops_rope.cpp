// Rotary position embedding. Angles are formed in double precision because
// positions reach 1e6+ and pos * theta in f32 would lose whole radians of phase.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernel_paths.h"
#include "kernels/ops.h"

namespace stride {

namespace {

// Usable rotary width: even, and no wider than a head or the table.
int clamp_rot_dim(const RopeTable& t, int head_dim) { return std::min(t.rot_dim(), head_dim) & ~1; }

}  // namespace

void rope_tokens(float* const* xs, const int* n_heads, int n_x, const int32_t* pos, int64_t t0,
                 int64_t t1, int head_dim, const RopeTable& table, RopeScratch& scratch) {
  const int rot_dim = clamp_rot_dim(table, head_dim);
  if (rot_dim <= 0) return;
  const int half = rot_dim / 2;
  const bool neox = table.neox;
  const double mag = table.magnitude;
  const kernels::KernelTable& k = kernels::active_kernels();
  std::vector<float>& cs = scratch.cs;
  std::vector<float>& sn = scratch.sn;
  cs.resize(rot_dim);
  sn.resize(rot_dim);
  for (int64_t t = t0; t < t1; ++t) {
    const double p = (double)pos[t];
    for (int i = 0; i < half; ++i) {
      const double a = p * table.inv_freq[i];
      const float c = (float)(std::cos(a) * mag), s = (float)(std::sin(a) * mag);
      if (neox) {
        cs[i] = c;
        sn[i] = s;
      } else {
        cs[2 * i] = cs[2 * i + 1] = c;
        sn[2 * i] = -s;
        sn[2 * i + 1] = s;
      }
    }
    for (int j = 0; j < n_x; ++j) {
      float* xt = xs[j] + t * (int64_t)n_heads[j] * head_dim;  // [n_heads, head_dim]
      for (int h = 0; h < n_heads[j]; ++h) {
        float* v = xt + (int64_t)h * head_dim;
        if (neox) {
          k.rotate_neox(v, cs.data(), sn.data(), half);
        } else {
          k.rotate_adjacent(v, cs.data(), sn.data(), rot_dim);
        }
      }
    }
  }
}

void rope(float* x, const int32_t* pos, int64_t n_tok, int n_heads, int head_dim, const RopeTable& table) {
  RopeScratch scratch;  // once per call, not per token
  rope_tokens(&x, &n_heads, 1, pos, 0, n_tok, head_dim, table, scratch);
}

void rope_ref(float* x, const int32_t* pos, int64_t n_tok, int n_heads, int head_dim, const RopeTable& table) {
  const int rot_dim = clamp_rot_dim(table, head_dim);
  const int half = rot_dim / 2;
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * (int64_t)head_dim;  // [head_dim]
      for (int i = 0; i < half; ++i) {
        const double a = (double)pos[t] * table.inv_freq[i];
        const double c = std::cos(a) * table.magnitude, s = std::sin(a) * table.magnitude;
        const int i0 = table.neox ? i : 2 * i;
        const int i1 = table.neox ? i + half : 2 * i + 1;
        const double x0 = v[i0], x1 = v[i1];
        v[i0] = (float)(x0 * c - x1 * s);
        v[i1] = (float)(x0 * s + x1 * c);
      }
    }
  }
}

}  // namespace stride
