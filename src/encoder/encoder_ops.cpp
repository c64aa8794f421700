#include "encoder/encoder_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace stride {

namespace {

// Rows of one LayerNorm: two passes in float, the variance around the mean.
void layernorm_rows(const float* x, const float* w, const float* b, float* y, int64_t r0, int64_t r1, int64_t n,
                    float eps) {
  for (int64_t r = r0; r < r1; ++r) {
    const float* xr = x + r * n;  // [n]
    float* yr = y + r * n;        // [n]
    float sum = 0.f;
    for (int64_t i = 0; i < n; ++i) sum += xr[i];
    const float mean = sum / (float)n;
    float var = 0.f;
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    const float inv = 1.f / std::sqrt(var / (float)n + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - mean) * inv * w[i] + b[i];
  }
}

}  // namespace

void layernorm(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t n, float eps,
               ThreadPool& pool) {
  pool.parallel_for(n_rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)),
                    [&](int64_t r0, int64_t r1) { layernorm_rows(x, w, b, y, r0, r1, n, eps); });
}

void layernorm_ref(const float* x, const float* w, const float* b, float* y, int64_t n_rows, int64_t n, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double mean = 0.0, var = 0.0;
    for (int64_t i = 0; i < n; ++i) mean += xr[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= (double)n;
    const double inv = 1.0 / std::sqrt(var + (double)eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (float)((xr[i] - mean) * inv * w[i] + b[i]);
  }
}

void gelu_erf(float* x, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, 8192, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) x[i] = 0.5f * x[i] * (1.f + std::erf(x[i] * 0.70710678118654752f));
  });
}

void gelu_erf_ref(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = (float)(0.5 * x[i] * (1.0 + std::erf((double)x[i] / std::sqrt(2.0))));
}

void bidirectional_attention(const float* q, const float* k, const float* v, float* out, int n, int n_head,
                             int head_dim, int64_t stride, float scale, ThreadPool& pool) {
  // Work items: (head, block of 16 queries); each owns its scores.
  constexpr int kBlock = 16;
  const int n_blocks = (n + kBlock - 1) / kBlock;
  pool.run_chunks(n_head * n_blocks, [&](int item, int) {
    const int h = item / n_blocks;
    const int i0 = (item % n_blocks) * kBlock, i1 = std::min(n, i0 + kBlock);
    std::vector<float> p((size_t)n);     // [n] scores, then probabilities
    std::vector<float> acc((size_t)head_dim);
    for (int i = i0; i < i1; ++i) {
      const float* qi = q + i * stride + (int64_t)h * head_dim;
      float mx = -INFINITY;
      for (int j = 0; j < n; ++j) {
        const float* kj = k + j * stride + (int64_t)h * head_dim;
        float s = 0.f;
        for (int d = 0; d < head_dim; ++d) s += qi[d] * kj[d];
        p[(size_t)j] = s * scale;
        mx = std::max(mx, p[(size_t)j]);
      }
      float denom = 0.f;
      for (int j = 0; j < n; ++j) {
        p[(size_t)j] = std::exp(p[(size_t)j] - mx);
        denom += p[(size_t)j];
      }
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int j = 0; j < n; ++j) {
        const float* vj = v + j * stride + (int64_t)h * head_dim;
        const float pj = p[(size_t)j];
        for (int d = 0; d < head_dim; ++d) acc[(size_t)d] += pj * vj[d];
      }
      float* oi = out + i * stride + (int64_t)h * head_dim;
      const float inv = 1.f / denom;
      for (int d = 0; d < head_dim; ++d) oi[d] = acc[(size_t)d] * inv;
    }
  });
}

void bidirectional_attention_ref(const float* q, const float* k, const float* v, float* out, int n, int n_head,
                                 int head_dim, int64_t stride, float scale) {
  std::vector<double> p((size_t)n);
  for (int h = 0; h < n_head; ++h) {
    for (int i = 0; i < n; ++i) {
      double mx = -INFINITY;
      for (int j = 0; j < n; ++j) {
        double s = 0.0;
        for (int d = 0; d < head_dim; ++d) {
          s += (double)q[i * stride + h * head_dim + d] * k[j * stride + h * head_dim + d];
        }
        p[(size_t)j] = s * scale;
        mx = std::max(mx, p[(size_t)j]);
      }
      double denom = 0.0;
      for (int j = 0; j < n; ++j) denom += (p[(size_t)j] = std::exp(p[(size_t)j] - mx));
      for (int d = 0; d < head_dim; ++d) {
        double o = 0.0;
        for (int j = 0; j < n; ++j) o += p[(size_t)j] * v[j * stride + h * head_dim + d];
        out[i * stride + h * head_dim + d] = (float)(o / denom);
      }
    }
  }
}

}  // namespace stride
