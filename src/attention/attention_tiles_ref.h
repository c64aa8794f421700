#pragma once
// Scalar references of the row tiles in attention_tiles.h, in double, for
// the tests: the same loaders, obviously correct loops.
#include <cmath>
#include <cstdint>

#include "kernels/simd/loaders.h"

namespace stride::tiles {

// s[t] = q . k[t] (times ks[t] for scaled rows); k: [n, d].
template <class L>
void dot_rows_ref(const float* q, const typename L::Elem* k, const float* ks, int n, int d,
                  float* s) {
  for (int t = 0; t < n; ++t) {
    double acc = 0;
    for (int i = 0; i < d; ++i) acc += (double)q[i] * L::at(k + (int64_t)t * d, i);
    if constexpr (L::kScaled) acc *= ks[t];
    s[t] = (float)acc;
  }
}

// o = o * alpha + sum_t p[t] * v[t]; v: [n, d].
template <class L>
void pv_rows_ref(float* o, float alpha, const float* p, const typename L::Elem* v, int n, int d) {
  for (int i = 0; i < d; ++i) {
    double acc = (double)o[i] * alpha;
    for (int t = 0; t < n; ++t) acc += (double)p[t] * L::at(v + (int64_t)t * d, i);
    o[i] = (float)acc;
  }
}

// p[i] = exp(s[i] - m), the difference taken in float as the kernel does;
// returns the sum.
inline float exp_shift_sum_ref(const float* s, float m, float* p, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    p[i] = (float)std::exp((double)(s[i] - m));
    sum += p[i];
  }
  return (float)sum;
}

}  // namespace stride::tiles
