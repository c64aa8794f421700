#pragma once
// What one RoPE rotation needs, whatever scaling produced it: a per-pair
// inverse frequency in double and a magnitude. Prefill, decode, the scalar
// references and R-SWA's re-rotation all read the same table, so a scaled
// model rotates identically on every path.
#include <cmath>
#include <vector>

namespace stride {

struct RopeTable {
  // [rot_dim / 2] angle of pair i at position p is p * inv_freq[i] (radians).
  std::vector<double> inv_freq;
  // cos and sin are multiplied by this (YaRN's and LongRoPE's attention
  // factor): q and k both carry it, so attention scores grow by its square.
  float magnitude = 1.f;
  // true: rotate (x[i], x[i + rot_dim/2]) as HF/NeoX; false: adjacent pairs
  // (x[2i], x[2i+1]) as llama GGUF files, whose Q/K rows were permuted.
  bool neox = false;

  int rot_dim() const { return 2 * (int)inv_freq.size(); }

  // Unscaled RoPE: inv_freq[i] = freq_scale * base^(-2i/rot_dim).
  static RopeTable plain(double base, int rot_dim, double freq_scale, bool neox) {
    RopeTable t;
    t.neox = neox;
    t.inv_freq.resize(rot_dim > 0 ? rot_dim / 2 : 0);
    for (int i = 0; i < (int)t.inv_freq.size(); ++i) {
      t.inv_freq[i] = freq_scale * std::pow(base, -2.0 * i / (double)rot_dim);
    }
    return t;
  }
};

}  // namespace stride
