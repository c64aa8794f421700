// Element-wise ops split over a ThreadPool (see ops_parallel.h). Each chunk
// runs the serial kernel on whole rows or on 8-aligned element ranges.
#include "kernels/ops_parallel.h"

#include <algorithm>

#include "kernels/ops.h"

namespace stride {

namespace {

// Below this many elements an op runs on the caller: a dispatch costs a few
// microseconds, about what the serial kernel needs for this much data.
constexpr int64_t kMinParallel = 1 << 14;

// fn(r0, r1, worker) over row ranges of [0, n_rows), rows of `row_len`
// elements; worker indexes the pool's scratch.
template <typename Fn>
void for_rows(int64_t n_rows, int64_t row_len, ThreadPool& pool, Fn&& fn) {
  if (pool.size() <= 1 || n_rows < 2 || n_rows * row_len < kMinParallel) {
    fn(int64_t{0}, n_rows, 0);
    return;
  }
  // Several chunks per thread, claimed dynamically, so the threads that are
  // running take over the share of one the OS has descheduled.
  const int chunks = (int)std::min<int64_t>(n_rows, 4 * (int64_t)pool.size());
  pool.run_chunks(chunks, [&](int c, int nc, int worker) {
    const int64_t r0 = n_rows * c / nc, r1 = n_rows * (c + 1) / nc;
    if (r0 < r1) fn(r0, r1, worker);
  });
}

// fn(i0, len) over element ranges of [0, n) that start at multiples of 8: the
// vector loops of the serial kernels then see the same 8-element groups and
// the same scalar tail as in one call over all n.
template <typename Fn>
void for_elems(int64_t n, ThreadPool& pool, Fn&& fn) {
  if (pool.size() <= 1 || n < kMinParallel) {
    fn(int64_t{0}, n);
    return;
  }
  const int64_t octets = (n + 7) / 8;
  for_rows(octets, 8, pool, [&](int64_t b0, int64_t b1, int) {
    const int64_t i0 = b0 * 8, i1 = std::min(n, b1 * 8);
    fn(i0, i1 - i0);
  });
}

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps,
             ThreadPool& pool) {
  for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1, int) {
    rmsnorm(x + r0 * n, w, y + r0 * n, r1 - r0, n, eps);
  });
}

void rmsnorm_add(float* o, const float* w, float* x, int64_t n_rows, int64_t n, float eps,
                 ThreadPool& pool) {
  for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {  // row by row: o[r] is still in L1 for the add
      rmsnorm(o + r * n, w, o + r * n, 1, n, eps);
      add_inplace(x + r * n, o + r * n, n);
    }
  });
}

void add_inplace(float* y, const float* x, int64_t n, ThreadPool& pool) {
  for_elems(n, pool, [&](int64_t i0, int64_t len) { add_inplace(y + i0, x + i0, len); });
}

void add_rows(float* y, const float* b, int64_t n_rows, int64_t n, ThreadPool& pool) {
  for_rows(n_rows, n, pool, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) add_inplace(y + r * n, b, n);
  });
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool) {
  for_elems(n, pool, [&](int64_t i0, int64_t len) { silu_mul(gate + i0, up + i0, out + i0, len); });
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool& pool) {
  for_elems(n, pool, [&](int64_t i0, int64_t len) {
    gelu_tanh_mul(gate + i0, up + i0, out + i0, len);
  });
}

void rope_qk(float* q, int n_head_q, float* k, int n_head_k, const int32_t* pos, int64_t n_tok,
             int head_dim, const RopeTable& table, ThreadPool& pool) {
  float* xs[2] = {q, k};
  const int heads[2] = {n_head_q, n_head_k};
  const int n_x = k ? 2 : 1;
  // A token's cos/sin cost about as much as rotating its heads: count both.
  const int64_t per_tok = (int64_t)(n_head_q + (k ? n_head_k : 0) + 2) * head_dim;
  for_rows(n_tok, per_tok, pool, [&](int64_t t0, int64_t t1, int worker) {
    rope_tokens(xs, heads, n_x, pos, t0, t1, head_dim, table, pool.scratch(worker).get<RopeScratch>());
  });
}

}  // namespace stride
