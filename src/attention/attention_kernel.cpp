#include "attention/attention_kernel.h"

#include <algorithm>
#include <cstring>
#include <atomic>
#include <cmath>
#include <vector>

#include "attention/rope_shift.h"
#include "attention/simd.h"
#include "attention/simd_int8.h"

namespace stride {

namespace {

// Per-thread buffers, reused across calls so decode does not allocate.
struct Scratch {
  std::vector<float> q;    // [rows, dk] scaled queries
  std::vector<float> qs;   // [rows, dk] scaled queries shifted for sink keys (cache-relative)
  std::vector<float> kf;   // [page_size, dk] f16 pages widened
  std::vector<float> vf;   // [page_size, dv]
  std::vector<float> s;    // [2, page_size] scores of a row pair
  std::vector<float> pr;   // [2, page_size] probabilities of a row pair
  std::vector<float> m, d; // [rows] running state of the current segment
  std::vector<float> o;    // [rows, dv]
  std::vector<SoftmaxPartial> fold;  // [rows] segments folded so far
  std::vector<float> fold_o;         // [rows, dv]
};

// A row's pages are summed in segments of kSegmentPages pages, cut at fixed
// key positions (not at the call's or thread's boundaries), each from a fresh
// softmax state, and the segments are folded left to right with
// softmax_merge. Serially or split across threads, the same operations run
// in the same order, so a row's result depends only on its keys.
constexpr int kSegmentPages = 8;

int64_t segment_of(const KvPool& pool, const AttentionPlan& plan, int64_t e, int page_size) {
  return pool.positions(plan.page_ids[e])[0] / ((int64_t)kSegmentPages * page_size);
}

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// Four query rows at a time (prefill): each load of a key or value row from
// the page feeds four rows, halving the page traffic of the row-pair loops,
// which was what bound prefill at head_dim 256 (a widened 32-token page of K
// plus V is 64 KiB, past L1). Each (row, key) dot product is summed in the
// order of simd::dot_rows_x2's main loop and each output element in that of
// simd::pv_accumulate_x2. d % 8 == 0.

// s_r[t] = q_r . k[t] for rows r < 4, keys t < n; k: [n, d]. kKeys keys per
// pass: 4 rows x kKeys accumulators.
template <int kKeys>
void dot_rows_x4_keys(const float* const* q, const float* k, int t, int d, float* const* s) {
  const float* kt = k + (int64_t)t * d;
  __m256 a[4][kKeys];
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < kKeys; ++j) a[r][j] = _mm256_setzero_ps();
  for (int i = 0; i < d; i += 8) {
    __m256 kv[kKeys];
    for (int j = 0; j < kKeys; ++j) {
      kv[j] = _mm256_loadu_ps(kt + (int64_t)j * d + i);
      __asm__("" : "+v"(kv[j]));  // in a register, not reloaded per row
    }
    for (int r = 0; r < 4; ++r) {
      const __m256 qv = _mm256_loadu_ps(q[r] + i);
      for (int j = 0; j < kKeys; ++j) a[r][j] = _mm256_fmadd_ps(qv, kv[j], a[r][j]);
    }
  }
  for (int j = 0; j < kKeys; ++j) {
    alignas(16) float sums[4];
    _mm_store_ps(sums, simd::hsum4(a[0][j], a[1][j], a[2][j], a[3][j]));
    for (int r = 0; r < 4; ++r) s[r][t + j] = sums[r];
  }
}

void dot_rows_x4(const float* const* q, const float* k, int n, int d, float* const* s) {
#ifdef __AVX512VL__
  constexpr int kKeys = 4;  // 32 vector registers: 16 accumulators
#else
  constexpr int kKeys = 2;
#endif
  int t = 0;
  for (; t + kKeys <= n; t += kKeys) dot_rows_x4_keys<kKeys>(q, k, t, d, s);
  for (; t < n; ++t) dot_rows_x4_keys<1>(q, k, t, d, s);
}

// o_r = o_r * alpha_r + sum_t p_r[t] * v[t] for rows r < 4; v: [n, d].
void pv_accumulate_x4(float* const* o, const float* alpha, const float* const* p, const float* v,
                      int n, int d) {
#ifdef __AVX512VL__
  constexpr int kVecs = 4;  // 32 vector registers: 16 accumulators
#else
  constexpr int kVecs = 2;
#endif
  constexpr int kCols = 8 * kVecs;
  int i = 0;
  for (; i + kCols <= d; i += kCols) {
    __m256 a[4][kVecs];
    for (int r = 0; r < 4; ++r) {
      const __m256 al = _mm256_set1_ps(alpha[r]);
      for (int j = 0; j < kVecs; ++j) a[r][j] = _mm256_mul_ps(al, _mm256_loadu_ps(o[r] + i + 8 * j));
    }
    for (int t = 0; t < n; ++t) {
      const float* vt = v + (int64_t)t * d + i;
      __m256 vv[kVecs];
      for (int j = 0; j < kVecs; ++j) {
        vv[j] = _mm256_loadu_ps(vt + 8 * j);
        // Keep the row in a register: folded into each FMA, it would be
        // loaded once per query row and the loop would be load-bound.
        __asm__("" : "+v"(vv[j]));
      }
      for (int r = 0; r < 4; ++r) {
        const __m256 pt = _mm256_set1_ps(p[r][t]);
        for (int j = 0; j < kVecs; ++j) a[r][j] = _mm256_fmadd_ps(pt, vv[j], a[r][j]);
      }
    }
    for (int r = 0; r < 4; ++r)
      for (int j = 0; j < kVecs; ++j) _mm256_storeu_ps(o[r] + i + 8 * j, a[r][j]);
  }
  for (; i < d; i += 8) {  // d % kCols: 8 columns at a time
    __m256 a[4];
    for (int r = 0; r < 4; ++r) a[r] = _mm256_mul_ps(_mm256_set1_ps(alpha[r]), _mm256_loadu_ps(o[r] + i));
    for (int t = 0; t < n; ++t) {
      const __m256 vv = _mm256_loadu_ps(v + (int64_t)t * d + i);
      for (int r = 0; r < 4; ++r) a[r] = _mm256_fmadd_ps(_mm256_set1_ps(p[r][t]), vv, a[r]);
    }
    for (int r = 0; r < 4; ++r) _mm256_storeu_ps(o[r] + i, a[r]);
  }
}

// Software prefetch of [p, p + bytes) into L2, one hint per cache line.
inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(c + off, _MM_HINT_T1);
}

struct Geometry {
  int n_kv, group, dk, dv, page_size;
};

// One page of one kv head as the inner loops read it: f32 rows (f32 pages in
// place, f16 pages widened into scratch) or int8 rows with per-token scales,
// which are widened in registers by the int8 loops.
struct PageView {
  const float* k = nullptr;    // [n, dk] f32
  const float* v = nullptr;    // [n, dv] f32
  const int8_t* k8 = nullptr;  // [n, dk] int8 pages
  const int8_t* v8 = nullptr;  // [n, dv]
  const float* ks = nullptr;   // [n] key scales
  const float* vs = nullptr;   // [n] value scales

  float key_dot(const float* q, int t, int dk) const {
    return k8 ? ks[t] * simd::dot_i8(q, k8 + (int64_t)t * dk, dk)
              : simd::dot_key(q, k + (int64_t)t * dk, dk);
  }
};

PageView view_page(const KvPool& pool, int32_t page, int h, int n, const Geometry& g, Scratch& sc) {
  PageView pv;
  switch (pool.storage()) {
    case KvStorage::F32:
      pv.k = pool.k32(page, h);
      pv.v = pool.v32(page, h);
      break;
    case KvStorage::F16:
      simd::f16_to_f32(pool.k(page, h), sc.kf.data(), (int64_t)n * g.dk);
      simd::f16_to_f32(pool.v(page, h), sc.vf.data(), (int64_t)n * g.dv);
      pv.k = sc.kf.data();
      pv.v = sc.vf.data();
      break;
    case KvStorage::Int8:
      pv.k8 = pool.k8(page, h);
      pv.v8 = pool.v8(page, h);
      pv.ks = pool.k_scale(page, h);
      pv.vs = pool.v_scale(page, h);
      break;
  }
  return pv;
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

// Turns the raw scores s of row r on one page into probabilities pr
// relative to the row's new running max, updating (m, d). Returns false when
// the page holds no key this row sees (state untouched).
bool score_row(Scratch& sc, const PolicySpec& policy, const AttentionParams& p,
               const PageView& page, const int32_t* kpos, int n, int dk, int r, int64_t q_pos,
               bool full, bool has_sinks, float* s, float* pr, float& alpha) {
  if (has_sinks) {  // sink keys see the query shifted back (cache-relative R-SWA)
    const float* qsr = sc.qs.data() + (int64_t)r * dk;
    for (int t = 0; t < n && kpos[t] < policy.sinks; ++t) s[t] = page.key_dot(qsr, t, dk);
  }
  if (p.softcap > 0.f)
    for (int t = 0; t < n; ++t) s[t] = p.softcap * std::tanh(s[t] / p.softcap);
  float mx = -INFINITY;
  if (full) {
    int t = 0;
    if (n >= 8) {  // max is exact: the order of the comparisons does not matter
      __m256 vm = _mm256_loadu_ps(s);
      for (t = 8; t + 8 <= n; t += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(s + t));
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vm), _mm256_extractf128_ps(vm, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      mx = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
    }
    for (; t < n; ++t) mx = std::max(mx, s[t]);
  } else {  // edge page: the policy predicate on the slots' stored positions
    for (int t = 0; t < n; ++t) {
      if (!policy_attends(policy, q_pos, kpos[t])) s[t] = -INFINITY;
      mx = std::max(mx, s[t]);
    }
  }
  if (mx == -INFINITY) return false;
  const float m_new = std::max(sc.m[r], mx);
  alpha = std::exp(sc.m[r] - m_new);  // 0 on the row's first visible page
  sc.d[r] = sc.d[r] * alpha + simd::exp_shift_sum(s, m_new, pr, n);
  sc.m[r] = m_new;
  return true;
}

// One work item: rows of query block b (all queries x the group's heads of kv
// head h) over plan entries [e0, e1). Leaves the unnormalised state in sc.
void run_item(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
              const AttentionParams& p, const Geometry& g, const float* q, int b, int h,
              int64_t e0, int64_t e1, Scratch& sc, int& rows_out) {
  const int q_first = b * plan.q_block;
  const int nq = std::min(plan.q_block, plan.n_q - q_first);
  const int rows = nq * g.group;
  rows_out = rows;
  const int dk = g.dk, dv = g.dv;
  sc.q.resize((size_t)rows * dk);
  sc.m.assign(rows, -INFINITY);
  sc.d.assign(rows, 0.f);
  sc.o.assign((size_t)rows * dv, 0.f);
  if (pool.storage() == KvStorage::F16) {
    sc.kf.resize((size_t)g.page_size * dk);
    sc.vf.resize((size_t)g.page_size * dv);
  }
  sc.s.resize(4 * (size_t)g.page_size);
  sc.pr.resize(4 * (size_t)g.page_size);

  // Row r = query i * group + head-in-group j; the scale is folded into q.
  const float scale = attention_scale(p, dk);
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < g.group; ++j) {
      const float* src = q + ((int64_t)(q_first + i) * p.n_head + (int64_t)h * g.group + j) * dk;
      float* dst = sc.q.data() + (int64_t)(i * g.group + j) * dk;
      for (int t = 0; t < dk; ++t) dst[t] = src[t] * scale;
    }
  auto row_pos = [&](int r) { return plan.q_pos0 + q_first + r / g.group; };

  // Cache-relative sinks: the query seen shifted back by delta for sink keys.
  const bool shift = rswa_sink_shift(policy, plan.q_pos0 + q_first + nq - 1) > 0;
  if (shift) {
    sc.qs = sc.q;
    const RopeParams rp{p.rope_base, p.rope_freq_scale, p.rope_dim, p.rope_neox};
    for (int r = 0; r < rows; ++r)
      rope_rotate_by(sc.qs.data() + (int64_t)r * dk, dk, -rswa_sink_shift(policy, row_pos(r)), rp);
  }

  sc.fold.assign(rows, SoftmaxPartial{});
  sc.fold_o.assign((size_t)rows * dv, 0.f);
  // Folds the current segment's state into sc.fold and starts a fresh one.
  auto end_segment = [&] {
    for (int r = 0; r < rows; ++r) {
      softmax_merge(sc.fold[r], sc.fold_o.data() + (int64_t)r * dv, SoftmaxPartial{sc.m[r], sc.d[r]},
                    sc.o.data() + (int64_t)r * dv, dv);
    }
    std::fill(sc.m.begin(), sc.m.end(), -INFINITY);
    std::fill(sc.d.begin(), sc.d.end(), 0.f);
    std::fill(sc.o.begin(), sc.o.end(), 0.f);
  };

  int64_t segment = e0 < e1 ? segment_of(pool, plan, e0, g.page_size) : 0;
  for (int64_t e = e0; e < e1; ++e) {
    if (const int64_t seg = segment_of(pool, plan, e, g.page_size); seg != segment) {
      end_segment();
      segment = seg;
    }
    const int32_t page = plan.page_ids[e];
    const int n = plan.page_valid[e];
    const bool full = plan.page_full[e] != 0;
    const int32_t* kpos = pool.positions(page);
    if (e + 1 < e1) prefetch_page(pool, plan.page_ids[e + 1], h, g);
    const PageView pv = view_page(pool, page, h, n, g, sc);
    const bool has_sinks = shift && kpos[0] < policy.sinks;
    // Rows go in fours (f32 rows) or pairs so each K and V load in the inner
    // loops feeds several rows.
    const bool quads = !pv.k8 && dk % 8 == 0 && dv % 8 == 0;
    int r0 = 0;
    if (quads) {
      for (; r0 + 4 <= rows; r0 += 4) {
        float* s[4];
        float* pr[4];
        const float* qr[4];
        float* o[4];
        for (int i = 0; i < 4; ++i) {
          s[i] = sc.s.data() + (int64_t)i * g.page_size;
          pr[i] = sc.pr.data() + (int64_t)i * g.page_size;
          qr[i] = sc.q.data() + (int64_t)(r0 + i) * dk;
          o[i] = sc.o.data() + (int64_t)(r0 + i) * dv;
        }
        dot_rows_x4(qr, pv.k, n, dk, s);
        float alpha[4] = {1.f, 1.f, 1.f, 1.f};
        bool any[4];
        for (int i = 0; i < 4; ++i)
          any[i] = score_row(sc, policy, p, pv, kpos, n, dk, r0 + i, row_pos(r0 + i), full,
                             has_sinks, s[i], pr[i], alpha[i]);
        if (any[0] && any[1] && any[2] && any[3]) {
          pv_accumulate_x4(o, alpha, pr, pv.v, n, dv);
        } else {
          for (int i = 0; i < 4; ++i)
            if (any[i]) simd::pv_accumulate(o[i], alpha[i], pr[i], pv.v, n, dv);
        }
      }
    }
    for (; r0 < rows; r0 += 2) {
      const int nr = std::min(2, rows - r0);
      float* s[2] = {sc.s.data(), sc.s.data() + g.page_size};
      float* pr[2] = {sc.pr.data(), sc.pr.data() + g.page_size};
      const float* q0 = sc.q.data() + (int64_t)r0 * dk;
      if (pv.k8) {
        if (nr == 2) simd::dot_rows_i8_x2(q0, q0 + dk, pv.k8, pv.ks, n, dk, s[0], s[1]);
        else simd::dot_rows_i8(q0, pv.k8, pv.ks, n, dk, s[0]);
      } else {
        if (nr == 2) simd::dot_rows_x2(q0, q0 + dk, pv.k, n, dk, s[0], s[1]);
        else simd::dot_rows(q0, pv.k, n, dk, s[0]);
      }
      float alpha[2] = {1.f, 1.f};
      bool any[2] = {false, false};
      for (int i = 0; i < nr; ++i) {
        any[i] = score_row(sc, policy, p, pv, kpos, n, dk, r0 + i, row_pos(r0 + i), full,
                           has_sinks, s[i], pr[i], alpha[i]);
        // int8 values: fold each token's scale into its probability (d is already summed).
        if (any[i] && pv.v8)
          for (int t = 0; t < n; ++t) pr[i][t] *= pv.vs[t];
      }
      float* o0 = sc.o.data() + (int64_t)r0 * dv;
      if (nr == 2 && any[0] && any[1]) {
        if (pv.v8)
          simd::pv_accumulate_i8_x2(o0, o0 + dv, alpha[0], alpha[1], pr[0], pr[1], pv.v8, n, dv);
        else
          simd::pv_accumulate_x2(o0, o0 + dv, alpha[0], alpha[1], pr[0], pr[1], pv.v, n, dv);
      } else {
        for (int i = 0; i < nr; ++i) {
          if (!any[i]) continue;
          float* oi = o0 + (int64_t)i * dv;
          if (pv.v8) simd::pv_accumulate_i8(oi, alpha[i], pr[i], pv.v8, n, dv);
          else simd::pv_accumulate(oi, alpha[i], pr[i], pv.v, n, dv);
        }
      }
    }
  }
  end_segment();
  for (int r = 0; r < rows; ++r) {
    sc.m[r] = sc.fold[r].m;
    sc.d[r] = sc.fold[r].d;
  }
  sc.o.swap(sc.fold_o);
}

// out row of (query i, head) <- o / d.
void write_rows(const Scratch& sc, const AttentionPlan& plan, const AttentionParams& p,
                const Geometry& g, int b, int h, int rows, float* out) {
  const int q_first = b * plan.q_block;
  for (int r = 0; r < rows; ++r) {
    const int i = r / g.group, j = r % g.group;
    float* dst = out + ((int64_t)(q_first + i) * p.n_head + (int64_t)h * g.group + j) * g.dv;
    const float* src = sc.o.data() + (int64_t)r * g.dv;
    const float inv = sc.d[r] > 0.f ? 1.f / sc.d[r] : 0.f;
    for (int t = 0; t < g.dv; ++t) dst[t] = src[t] * inv;
  }
}

}  // namespace

void softmax_merge(SoftmaxPartial& a, float* o, const SoftmaxPartial& b, const float* o2, int n) {
  if (b.m == -INFINITY) return;
  if (a.m == -INFINITY) {
    a = b;
    std::copy(o2, o2 + n, o);
    return;
  }
  const float m = std::max(a.m, b.m);
  const float ca = std::exp(a.m - m), cb = std::exp(b.m - m);
  for (int t = 0; t < n; ++t) o[t] = o[t] * ca + o2[t] * cb;
  a.d = a.d * ca + b.d * cb;
  a.m = m;
}

void attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                     const AttentionParams& p, const float* q, float* out, ThreadPool& threads) {
  const KvPoolShape& shape = pool.shape();
  const Geometry g{shape.n_kv_heads, p.n_head / shape.n_kv_heads, shape.head_dim_k,
                   shape.head_dim_v, shape.page_size};
  const int n_blocks = plan.n_blocks();
  if (n_blocks <= 0) return;

  // With too few (block, head) items for the threads (decode, one short
  // chunk), the segments of each row become the work items, and their
  // partials are folded in order afterwards: the same operations as the
  // serial fold in run_item, so the choice of path never changes a bit.
  int64_t max_entries = 0;
  for (int b = 0; b < n_blocks; ++b)
    max_entries = std::max<int64_t>(max_entries, plan.indptr[b + 1] - plan.indptr[b]);
  const int base_items = n_blocks * g.n_kv;
  const int max_rows = plan.q_block * g.group;
  struct Item {
    int bh;
    int64_t e0, e1;
  };
  std::vector<Item> items;
  std::vector<int> first_item;  // [base_items + 1]: the segments of (block, head) bh
  bool by_segment = threads.size() > 1 && base_items < 2 * threads.size() && max_entries >= 2 * kSegmentPages;
  if (by_segment) {
    first_item.reserve(base_items + 1);
    for (int bh = 0; bh < base_items; ++bh) {
      first_item.push_back((int)items.size());
      const int h = bh % g.n_kv, b = bh / g.n_kv;
      const int64_t lo = plan.entry_begin(b, h), hi = plan.entry_end(b, h);
      for (int64_t e = lo; e < hi;) {
        const int64_t seg = segment_of(pool, plan, e, g.page_size);
        int64_t end = e + 1;
        while (end < hi && segment_of(pool, plan, end, g.page_size) == seg) ++end;
        items.push_back({bh, e, end});
        e = end;
      }
    }
    first_item.push_back((int)items.size());
    // Partials of every segment at once: keep that bounded (long prefill
    // chunks with few blocks take the serial path, with the same result).
    const double bytes = (double)items.size() * max_rows * (g.dv + 2) * sizeof(float);
    if (bytes > 64.0 * (1 << 20)) by_segment = false;
  }
  const int n_items = by_segment ? (int)items.size() : base_items;

  // Segment partials: [n_items, max_rows] of (m, d) and [n_items, max_rows, dv] of o.
  std::vector<SoftmaxPartial> part_md;
  std::vector<float> part_o;
  if (by_segment) {
    part_md.resize((size_t)n_items * max_rows);
    part_o.resize((size_t)n_items * max_rows * g.dv);
  }

  // Tiny calls (short decode) run on the caller: waking workers costs more.
  const int64_t work = plan.n_entries() * g.n_kv * max_rows * g.page_size * (g.dk + g.dv);
  const bool inline_run = threads.size() == 1 || work < (int64_t)1 << 18;

  std::atomic<int> next{0};
  auto body = [&](int, int) {
    Scratch& sc = scratch();
    // Items are claimed from the last: later query blocks see more pages
    // (causal prefill), and taking the longest first balances the threads.
    for (int claimed; (claimed = next.fetch_add(1, std::memory_order_relaxed)) < n_items;) {
      const int item = n_items - 1 - claimed;
      int rows = 0;
      if (!by_segment) {
        const int h = item % g.n_kv, b = item / g.n_kv;
        run_item(pool, plan, policy, p, g, q, b, h, plan.entry_begin(b, h), plan.entry_end(b, h), sc, rows);
        write_rows(sc, plan, p, g, b, h, rows, out);
        continue;
      }
      const Item& it = items[item];
      run_item(pool, plan, policy, p, g, q, it.bh / g.n_kv, it.bh % g.n_kv, it.e0, it.e1, sc, rows);
      for (int r = 0; r < rows; ++r) {
        part_md[(size_t)item * max_rows + r] = {sc.m[r], sc.d[r]};
        std::copy(sc.o.begin() + (int64_t)r * g.dv, sc.o.begin() + (int64_t)(r + 1) * g.dv,
                  part_o.begin() + ((int64_t)item * max_rows + r) * g.dv);
      }
    }
  };
  if (inline_run) body(0, 1);
  else threads.run(body);
  if (!by_segment) return;

  // Fold each row's segments in order (as run_item does serially), then
  // normalise as write_rows does.
  Scratch& sc = scratch();
  for (int bh = 0; bh < base_items; ++bh) {
    const int h = bh % g.n_kv, b = bh / g.n_kv;
    const int nq = std::min(plan.q_block, plan.n_q - b * plan.q_block);
    const int rows = nq * g.group;
    sc.m.assign(rows, -INFINITY);
    sc.d.assign(rows, 0.f);
    sc.o.assign((size_t)rows * g.dv, 0.f);
    for (int r = 0; r < rows; ++r) {
      SoftmaxPartial st;
      float* acc = sc.o.data() + (int64_t)r * g.dv;
      for (int item = first_item[bh]; item < first_item[bh + 1]; ++item) {
        const size_t idx = (size_t)item * max_rows + r;
        softmax_merge(st, acc, part_md[idx], part_o.data() + idx * g.dv, g.dv);
      }
      sc.m[r] = st.m;
      sc.d[r] = st.d;
    }
    write_rows(sc, plan, p, g, b, h, rows, out);
  }
}

}  // namespace stride
