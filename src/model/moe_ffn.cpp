#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/matmul.h"
#include "kernels/ops_parallel.h"
#include "model/moe_activation.h"

namespace stride {

namespace {

const PackedMatrix* packed_of(const std::unique_ptr<PackedMatrix>& p) { return p.get(); }

void project(const TensorView& w, const PackedMatrix* packed, const float* x, float* y, int64_t n, ThreadPool& pool) {
  if (packed) {
    matmul_packed(*packed, x, y, n, pool);
  } else {
    matmul(w, x, y, n, pool);
  }
}

// out[m, n_embd] = down(act(gate(x)) * up(x)) for x [m, n_embd]; gate/up: [m, ff] scratch.
void swiglu_block(const ExpertWeights& w, const PackedExpert* p, const ModelConfig& c, const float* x, int64_t m,
                  float* gate, float* up, float* out, ThreadPool& pool) {
  const PackedMatrix* pg = p ? packed_of(p->gate) : nullptr;
  const PackedMatrix* pu = p ? packed_of(p->up) : nullptr;
  if (pg && pu) {  // activations quantized once for both
    const PackedMatrix* ws[2] = {pg, pu};
    float* ys[2] = {gate, up};
    matmul_packed_multi(ws, ys, 2, x, m, pool);
  } else {
    project(w.gate, pg, x, gate, m, pool);
    project(w.up, pu, x, up, m, pool);
  }
  const int64_t ff = w.gate.rows(), count = m * ff;
  add_bias_rows(gate, w.gate_bias, m, ff);
  add_bias_rows(up, w.up_bias, m, ff);
  if (c.moe.swiglu_limit > 0) {
    pool.parallel_for(m, 8, [&](int64_t r0, int64_t r1) {
      clamped_swiglu(c.moe, gate + r0 * ff, up + r0 * ff, (r1 - r0) * ff);
    });
  } else if (c.act == Activation::GeluTanh) {
    gelu_tanh_mul(gate, up, gate, count, pool);
  } else {
    silu_mul(gate, up, gate, count, pool);
  }
  project(w.down, p ? packed_of(p->down) : nullptr, gate, out, m, pool);
  add_bias_rows(out, w.down_bias, m, c.n_embd);
}

// Groups the (token, slot) pairs by expert: offset, row_token and slot_row.
void group_rows(const MoeConfig& c, int n, MoeScratch& s) {
  const int k = s.routing.k;
  s.offset.assign((size_t)c.n_expert + 1, 0);
  for (int32_t e : s.routing.expert) ++s.offset[(size_t)e + 1];
  for (int e = 0; e < c.n_expert; ++e) s.offset[(size_t)e + 1] += s.offset[(size_t)e];
  std::vector<int32_t> next(s.offset.begin(), s.offset.end() - 1);
  s.row_token.resize((size_t)n * k);
  s.slot_row.resize((size_t)n * k);
  for (int t = 0; t < n; ++t) {  // in token order, so each expert's rows keep it
    for (int j = 0; j < k; ++j) {
      const int32_t row = next[(size_t)s.routing.expert[(size_t)t * k + j]]++;
      s.row_token[(size_t)row] = t;
      s.slot_row[(size_t)t * k + j] = row;
    }
  }
}

}  // namespace

void moe_ffn(const ModelConfig& c, const MoeWeights& w, const PackedMoe* packed, const float* h, float* y, int n,
             MoeScratch& s, ThreadPool& pool) {
  const MoeConfig& m = c.moe;
  const int64_t E = c.n_embd;
  const int k = m.n_expert_used;
  const int64_t rows = (int64_t)n * k;

  s.logits.resize((size_t)n * m.n_expert);
  matmul(w.router, h, s.logits.data(), n, pool);  // [n, n_expert]
  add_bias_rows(s.logits.data(), w.router_bias, n, m.n_expert);
  route_tokens(m, s.logits.data(), n, s.routing);
  group_rows(m, n, s);

  const int64_t ff = std::max(m.n_ff_expert, m.n_ff_shared);
  s.xs.resize((size_t)(rows * E));
  s.ys.resize((size_t)(rows * E));
  s.gate.resize((size_t)(std::max<int64_t>(rows, n) * ff));
  s.up.resize(s.gate.size());
  pool.parallel_for(rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(&s.xs[(size_t)(r * E)], h + (int64_t)s.row_token[(size_t)r] * E, sizeof(float) * E);
  });

  // One grouped matmul per expert over its contiguous rows.
  for (int e = 0; e < m.n_expert; ++e) {
    const int64_t r0 = s.offset[(size_t)e], count = s.offset[(size_t)e + 1] - r0;
    if (count == 0) continue;
    const PackedExpert* pe = packed && !packed->experts.empty() ? &packed->experts[(size_t)e] : nullptr;
    swiglu_block(w.experts[(size_t)e], pe, c, &s.xs[(size_t)(r0 * E)], count, s.gate.data(), s.up.data(),
                 &s.ys[(size_t)(r0 * E)], pool);
  }

  if (w.has_shared()) {
    s.shared.resize((size_t)n * E);
    swiglu_block(w.shared, packed ? &packed->shared : nullptr, c, h, n, s.gate.data(), s.up.data(),
                 s.shared.data(), pool);
  }

  // Scatter-add per token, slots in routing order: the sum does not depend on
  // which other tokens share the step.
  const float* shared_gate = reinterpret_cast<const float*>(w.shared_gate.data);
  pool.parallel_for(n, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* yt = y + t * E;
      std::fill(yt, yt + E, 0.f);
      for (int j = 0; j < k; ++j) {
        const float wj = s.routing.weight[(size_t)(t * k + j)];
        const float* src = &s.ys[(size_t)((int64_t)s.slot_row[(size_t)(t * k + j)] * E)];
        for (int64_t i = 0; i < E; ++i) yt[i] += wj * src[i];
      }
      if (!w.has_shared()) continue;
      const float* ht = h + t * E;
      double dot = 0;
      for (int64_t i = 0; i < E; ++i) dot += (double)ht[i] * shared_gate[i];
      const float g = (float)(1.0 / (1.0 + std::exp(-dot)));
      const float* st = &s.shared[(size_t)(t * E)];
      for (int64_t i = 0; i < E; ++i) yt[i] += g * st[i];
    }
  });
}

}  // namespace stride
