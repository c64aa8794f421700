#pragma once
// One page of one kv head against the query rows of a work item (the fused
// paged attention kernel, isa/attention_kernel.cpp): the rows' running
// state, the page as the tiles read it, the online-softmax step and the
// value accumulation, rows in fours, pairs and ones. For the kernel's
// variants: include after isa/begin.h, attention/attention_tiles.h and
// attention/attention_tiles_keys_major.h.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "attention/attention_kernel.h"
#include "kernels/simd/loaders.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

// A worker's buffers, kept in its scratch (thread_pool.h) and reused across
// calls so decode does not allocate.
struct Scratch {
  std::vector<float> q;    // [rows, dk] scaled queries
  std::vector<float> qs;   // [rows, dk] scaled queries shifted for sink keys (cache-relative)
  std::vector<float> kf;   // [page_size, dk] f16 page widened (when many rows read it)
  std::vector<float> vf;   // [page_size, dv]
  std::vector<float> kt;   // [dk, keys_major_ld(page_size)] f32 page's keys transposed (prefill)
  std::vector<float> s;    // [4, page_size] scores of a row tile
  std::vector<float> pr;   // [4, page_size] probabilities of a row tile
  std::vector<float> m, d; // [rows] running state of the current segment
  std::vector<float> o;    // [rows, dv]
  std::vector<SoftmaxPartial> fold;  // [rows] segments folded so far
  std::vector<float> fold_o;         // [rows, dv]
};

// Software prefetch of [p, p + bytes) into L2, one hint per cache line.
inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(c + off, _MM_HINT_T1);
}

struct Geometry {
  int n_kv, group, dk, dv, page_size;
};

// One page of one kv head as the row tiles read it, in its stored type.
template <class L>
struct PageRows {
  const typename L::Elem* k = nullptr;  // [n, dk]
  const typename L::Elem* v = nullptr;  // [n, dv]
  const float* ks = nullptr;            // [n] key scales (int8)
  const float* vs = nullptr;            // [n] value scales (int8)
  const float* kt = nullptr;            // [dk, ld] keys transposed (f32 rows, many rows per page)
  int ld = 0;
};

// F32Rows over an f16 pool reads the page widened into scratch: with more
// than one tile of rows per page (prefill) one widening pass is cheaper than
// widening at every load, as F16Rows does (decode). Widening is exact, so
// both give the same bits. With keys_major the keys are transposed straight
// from the pool for the keys-major score tile, and widened as rows only when
// need_k (sink keys scored with the shifted query read them as rows).
template <class L>
PageRows<L> page_rows(const KvPool& pool, int32_t page, int h, int n, const Geometry& g,
                      bool keys_major, bool need_k, Scratch& sc) {
  if constexpr (std::is_same_v<L, simd::F32Rows>) {
    const bool f32 = pool.storage() == KvStorage::F32;
    PageRows<L> rows{f32 ? pool.k32(page, h) : sc.kf.data(), f32 ? pool.v32(page, h) : sc.vf.data()};
    if (!f32) {
      if (!keys_major || need_k) simd::f16_to_f32(pool.k(page, h), sc.kf.data(), (int64_t)n * g.dk);
      simd::f16_to_f32(pool.v(page, h), sc.vf.data(), (int64_t)n * g.dv);
    }
    if (keys_major) {
      rows.ld = tiles::keys_major_ld(g.page_size);
      rows.kt = sc.kt.data();
      if (f32) tiles::transpose_keys<simd::F32Rows>(pool.k32(page, h), n, g.dk, sc.kt.data(), rows.ld);
      else tiles::transpose_keys<simd::F16Rows>(pool.k(page, h), n, g.dk, sc.kt.data(), rows.ld);
    }
    return rows;
  } else if constexpr (std::is_same_v<L, simd::F16Rows>) {
    return {pool.k(page, h), pool.v(page, h)};
  } else {
    return {pool.k8(page, h), pool.v8(page, h), pool.k_scale(page, h), pool.v_scale(page, h)};
  }
}

// Pages are scattered in the pool, so the hardware prefetcher stops at each
// page's end; decode at depth was stalled on exactly these loads. Fetch the
// next page ahead (f32 pages are only used for exact comparisons).
void prefetch_page(const KvPool& pool, int32_t page, int h, const Geometry& g) {
  const int64_t keys = (int64_t)g.page_size * g.dk, values = (int64_t)g.page_size * g.dv;
  if (pool.storage() == KvStorage::F16) {
    prefetch_bytes(pool.k(page, h), keys * 2);
    prefetch_bytes(pool.v(page, h), values * 2);
  } else if (pool.storage() == KvStorage::Int8) {
    prefetch_bytes(pool.k8(page, h), keys);
    prefetch_bytes(pool.v8(page, h), values);
    prefetch_bytes(pool.k_scale(page, h), g.page_size * 4);
    prefetch_bytes(pool.v_scale(page, h), g.page_size * 4);
  }
}

// What the rows of one work item share while they stream one page.
struct PageStep {
  const PolicySpec& policy;
  const AttentionParams& p;
  const Geometry& g;
  int64_t row_pos0;     // position of row 0's query; row r sits at row_pos0 + r / group
  const int32_t* kpos;  // [n] stored positions of the page's slots
  int n;                // valid slots
  bool full;            // every key visible to every row
  bool has_sinks;       // the page holds sink keys seen by the shifted query
};

// Turns the raw scores s of row r on one page into probabilities pr
// relative to the row's new running max, updating (m, d). Returns false when
// the page holds no key this row sees (state untouched).
template <class L>
bool score_row(Scratch& sc, const PageStep& st, const PageRows<L>& page, int r, float* s,
               float* pr, float& alpha) {
  const int n = st.n, dk = st.g.dk;
  if (st.has_sinks) {  // sink keys see the query shifted back (cache-relative R-SWA)
    const float* qsr = sc.qs.data() + (int64_t)r * dk;
    for (int t = 0; t < n && st.kpos[t] < st.policy.sinks; ++t)
      tiles::dot_tile<L, 1, 1>(&qsr, page.k, page.ks, t, dk, &s);
  }
  if (st.p.softcap > 0.f)
    for (int t = 0; t < n; ++t) s[t] = st.p.softcap * std::tanh(s[t] / st.p.softcap);
  if (!st.full) {  // edge page: the policy predicate on the slots' stored positions
    const int64_t q_pos = st.row_pos0 + r / st.g.group;
    for (int t = 0; t < n; ++t)
      if (!policy_attends(st.policy, q_pos, st.kpos[t])) s[t] = -INFINITY;
  }
  const float mx = tiles::row_max(s, n);
  if (mx == -INFINITY) return false;
  const float m_new = std::max(sc.m[r], mx);
  alpha = std::exp(sc.m[r] - m_new);  // 0 on the row's first visible page
  sc.d[r] = sc.d[r] * alpha + tiles::exp_shift_sum(s, m_new, pr, n);
  sc.m[r] = m_new;
  // int8 values: fold each token's scale into its probability (d is summed).
  if constexpr (L::kScaled)
    for (int t = 0; t < n; ++t) pr[t] *= page.vs[t];
  return true;
}

// Rows [r0, r0 + R) over one page: one tile of scores, the softmax step per
// row, one tile of value accumulation (rows with no visible key skip it).
template <class L, int R>
void attend_rows(Scratch& sc, const PageStep& st, const PageRows<L>& page, int r0) {
  const Geometry& g = st.g;
  float* s[R];
  float* pr[R];
  const float* qr[R];
  float* o[R];
  for (int i = 0; i < R; ++i) {
    s[i] = sc.s.data() + (int64_t)i * g.page_size;
    pr[i] = sc.pr.data() + (int64_t)i * g.page_size;
    qr[i] = sc.q.data() + (int64_t)(r0 + i) * g.dk;
    o[i] = sc.o.data() + (int64_t)(r0 + i) * g.dv;
  }
  if constexpr (std::is_same_v<L, simd::F32Rows>) {
    if (page.kt) tiles::dot_rows_keys_major<R>(qr, page.kt, page.ld, st.n, g.dk, s);
    else tiles::dot_rows<L, R>(qr, page.k, page.ks, st.n, g.dk, s);
  } else {
    tiles::dot_rows<L, R>(qr, page.k, page.ks, st.n, g.dk, s);
  }
  float alpha[R];
  bool all = true, any[R];
  for (int i = 0; i < R; ++i) {
    alpha[i] = 1.f;
    any[i] = score_row<L>(sc, st, page, r0 + i, s[i], pr[i], alpha[i]);
    all = all && any[i];
  }
  if (all) {
    tiles::pv_rows<L, R>(o, alpha, pr, page.v, st.n, g.dv);
    return;
  }
  for (int i = 0; i < R; ++i)
    if (any[i]) tiles::pv_rows<L, 1>(&o[i], &alpha[i], &pr[i], page.v, st.n, g.dv);
}

// Folds the current segment's state into sc.fold and starts a fresh one.
void end_segment(Scratch& sc, int rows, int dv) {
  for (int r = 0; r < rows; ++r)
    softmax_merge(sc.fold[r], sc.fold_o.data() + (int64_t)r * dv, SoftmaxPartial{sc.m[r], sc.d[r]},
                  sc.o.data() + (int64_t)r * dv, dv);
  std::fill(sc.m.begin(), sc.m.end(), -INFINITY);
  std::fill(sc.d.begin(), sc.d.end(), 0.f);
  std::fill(sc.o.begin(), sc.o.end(), 0.f);
}

// Plan entry e (of a segment ending at e1) for `rows` rows whose queries are
// in sc. Rows go in fours, then a pair, then one, so each K and V load feeds
// several rows; the tiles give the same bits for a row whichever group it is in.
template <class L>
void run_page(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
              const AttentionParams& p, const Geometry& g, int h, int64_t row_pos0, int rows,
              bool shift, int64_t e, int64_t e1, Scratch& sc) {
  const int32_t page = plan.page_ids[e];
  const int32_t* kpos = pool.positions(page);
  if (e + 1 < e1) prefetch_page(pool, plan.page_ids[e + 1], h, g);
  const bool has_sinks = shift && kpos[0] < policy.sinks;
  // Many rows per page (prefill): the keys transposed once feed the keys-major score tile.
  const bool keys_major = std::is_same_v<L, simd::F32Rows> && rows > 4 && g.dk % 8 == 0;
  const PageRows<L> rows_of_page = page_rows<L>(pool, page, h, plan.page_valid[e], g, keys_major, has_sinks, sc);
  const PageStep st{policy, p, g, row_pos0, kpos, plan.page_valid[e], plan.page_full[e] != 0, has_sinks};
  int r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) attend_rows<L, 4>(sc, st, rows_of_page, r0);
  if (r0 + 2 <= rows) {
    attend_rows<L, 2>(sc, st, rows_of_page, r0);
    r0 += 2;
  }
  if (r0 < rows) attend_rows<L, 1>(sc, st, rows_of_page, r0);
}

}  // namespace
}  // namespace stride::isa::STRIDE_ISA_NS
