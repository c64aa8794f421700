// The fused paged attention kernel (attention_kernel.h), a kernel variant
// compiled once per CPU target (stride_isa_variant in CMakeLists.txt): avx2
// (16 ymm registers: 2-wide quad tiles) and avx512 (32 registers: 4-wide quad
// tiles, 512-bit dot and value tiles; attention_tiles.h). Everything here but
// attention_paged has internal linkage; attention_kernel.cpp registers the
// variants by path.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "attention/attention_kernel.h"
#include "attention/attention_kernel_paths.h"
#include "attention/rope_shift.h"
#include "attention/work_partition.h"
#include "kernels/simd/exp.h"
#include "kernels/simd/loaders.h"
#include "kernels/simd/reduce.h"

#include "kernels/isa/begin.h"
#include "attention/attention_tiles.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

// Per-thread buffers, reused across calls so decode does not allocate.
struct Scratch {
  std::vector<float> q;    // [rows, dk] scaled queries
  std::vector<float> qs;   // [rows, dk] scaled queries shifted for sink keys (cache-relative)
  std::vector<float> kf;   // [page_size, dk] f16 page widened (when many rows read it)
  std::vector<float> vf;   // [page_size, dv]
  std::vector<float> s;    // [4, page_size] scores of a row tile
  std::vector<float> pr;   // [4, page_size] probabilities of a row tile
  std::vector<float> m, d; // [rows] running state of the current segment
  std::vector<float> o;    // [rows, dv]
  std::vector<SoftmaxPartial> fold;  // [rows] segments folded so far
  std::vector<float> fold_o;         // [rows, dv]
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

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
};

// F32Rows over an f16 pool reads the page widened into scratch: with more
// than one tile of rows per page (prefill) one widening pass is cheaper than
// widening at every load, as F16Rows does (decode). Widening is exact, so
// both give the same bits.
template <class L>
PageRows<L> page_rows(const KvPool& pool, int32_t page, int h, int n, const Geometry& g,
                      Scratch& sc) {
  if constexpr (std::is_same_v<L, simd::F32Rows>) {
    if (pool.storage() == KvStorage::F32) return {pool.k32(page, h), pool.v32(page, h)};
    simd::f16_to_f32(pool.k(page, h), sc.kf.data(), (int64_t)n * g.dk);
    simd::f16_to_f32(pool.v(page, h), sc.vf.data(), (int64_t)n * g.dv);
    return {sc.kf.data(), sc.vf.data()};
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
  tiles::dot_rows<L, R>(qr, page.k, page.ks, st.n, g.dk, s);
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
  const PageRows<L> rows_of_page = page_rows<L>(pool, page, h, plan.page_valid[e], g, sc);
  const PageStep st{policy,     p,    g, row_pos0, kpos, plan.page_valid[e], plan.page_full[e] != 0,
                    shift && kpos[0] < policy.sinks};
  int r0 = 0;
  for (; r0 + 4 <= rows; r0 += 4) attend_rows<L, 4>(sc, st, rows_of_page, r0);
  if (r0 + 2 <= rows) {
    attend_rows<L, 2>(sc, st, rows_of_page, r0);
    r0 += 2;
  }
  if (r0 < rows) attend_rows<L, 1>(sc, st, rows_of_page, r0);
}

// Segments [s0, s1) of pair (b, h), each summed from a fresh state and
// folded into sc.fold (the plan's work partition says where they are cut).
struct SegmentRange {
  int b, h;
  int32_t s0, s1;
};

template <class L>
void run_pages(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
               const AttentionParams& p, const Geometry& g, int64_t row_pos0, int rows,
               bool shift, const SegmentRange& r, Scratch& sc) {
  const WorkPartition& w = plan.work;
  for (int32_t s = r.s0; s < r.s1; ++s) {
    const int64_t e0 = s == w.bh_segments[(size_t)r.b * g.n_kv + r.h] ? plan.entry_begin(r.b, r.h)
                                                                       : w.segment_end[s - 1];
    const int64_t e1 = w.segment_end[s];
    for (int64_t e = e0; e < e1; ++e) run_page<L>(pool, plan, policy, p, g, r.h, row_pos0, rows, shift, e, e1, sc);
    end_segment(sc, rows, g.dv);
  }
}

// One work item: rows of query block r.b (all queries x the group's heads of
// kv head r.h) over segments [r.s0, r.s1). Leaves the unnormalised state in sc.
void run_item(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
              const AttentionParams& p, const Geometry& g, const float* q, const SegmentRange& r,
              Scratch& sc, int& rows_out) {
  const int b = r.b, h = r.h;
  const int q_first = b * plan.q_block;
  const int nq = std::min(plan.q_block, plan.n_q - q_first);
  const int rows = nq * g.group;
  rows_out = rows;
  const int dk = g.dk, dv = g.dv;
  sc.q.resize((size_t)rows * dk);
  sc.m.assign(rows, -INFINITY);
  sc.d.assign(rows, 0.f);
  sc.o.assign((size_t)rows * dv, 0.f);
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
  const int64_t row_pos0 = plan.q_pos0 + q_first;

  // Cache-relative sinks: the query seen shifted back by delta for sink keys.
  const bool shift = rswa_sink_shift(policy, row_pos0 + nq - 1) > 0;
  if (shift) {
    sc.qs = sc.q;
    for (int r = 0; r < rows; ++r)
      rope_rotate_by(sc.qs.data() + (int64_t)r * dk, dk, -rswa_sink_shift(policy, row_pos0 + r / g.group),
                     *p.rope);
  }

  sc.fold.assign(rows, SoftmaxPartial{});
  sc.fold_o.assign((size_t)rows * dv, 0.f);
  // Attention sinks: the pair's first segment starts each row's running
  // state from its head's sink logit (weight exp(0) = 1, no value), so the
  // sink joins the denominator once however the keys are split.
  if (p.sink_logits && r.s0 == plan.work.bh_segments[(size_t)b * g.n_kv + h])
    for (int row = 0; row < rows; ++row)
      sc.fold[row] = SoftmaxPartial{attention_sink_logit(p, h * g.group + row % g.group), 1.f};
  switch (pool.storage()) {
    case KvStorage::F32:
      run_pages<simd::F32Rows>(pool, plan, policy, p, g, row_pos0, rows, shift, r, sc);
      break;
    case KvStorage::F16:
      if (rows > 4) {  // more than one tile of rows per page: widen once (page_rows)
        sc.kf.resize((size_t)g.page_size * dk);
        sc.vf.resize((size_t)g.page_size * dv);
        run_pages<simd::F32Rows>(pool, plan, policy, p, g, row_pos0, rows, shift, r, sc);
      } else {
        run_pages<simd::F16Rows>(pool, plan, policy, p, g, row_pos0, rows, shift, r, sc);
      }
      break;
    case KvStorage::Int8:
      run_pages<simd::I8Rows>(pool, plan, policy, p, g, row_pos0, rows, shift, r, sc);
      break;
  }
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

// Folds each row's segment partials in order (as run_item does serially),
// then normalises as write_rows does.
void fold_segments(const AttentionPlan& plan, const AttentionParams& p, const Geometry& g,
                   const WorkPartition& w, const std::vector<SoftmaxPartial>& part_md,
                   const std::vector<float>& part_o, float* out) {
  const int max_rows = plan.q_block * g.group;
  Scratch& sc = scratch();
  for (int bh = 0; bh < w.n_pairs(); ++bh) {
    const int h = bh % g.n_kv, b = bh / g.n_kv;
    const int nq = std::min(plan.q_block, plan.n_q - b * plan.q_block);
    const int rows = nq * g.group;
    sc.m.assign(rows, -INFINITY);
    sc.d.assign(rows, 0.f);
    sc.o.assign((size_t)rows * g.dv, 0.f);
    for (int r = 0; r < rows; ++r) {
      SoftmaxPartial st;
      float* acc = sc.o.data() + (int64_t)r * g.dv;
      for (int item = w.bh_segments[bh]; item < w.bh_segments[bh + 1]; ++item) {
        const size_t idx = (size_t)item * max_rows + r;
        softmax_merge(st, acc, part_md[idx], part_o.data() + idx * g.dv, g.dv);
      }
      sc.m[r] = st.m;
      sc.d[r] = st.d;
    }
    write_rows(sc, plan, p, g, b, h, rows, out);
  }
}

}  // namespace

Status attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                            const AttentionParams& p, const float* q, float* out, ThreadPool& threads) {
  const KvPoolShape& shape = pool.shape();
  if (p.n_head <= 0 || p.n_head % shape.n_kv_heads != 0)
    return InvalidArgument("attention: " + std::to_string(p.n_head) + " query heads for " +
                           std::to_string(shape.n_kv_heads) + " kv heads");
  STRIDE_RETURN_IF_ERROR(check_plan_bounds(plan, pool.n_pages(), shape.page_size, shape.n_kv_heads));
  const Geometry g{shape.n_kv_heads, p.n_head / shape.n_kv_heads, shape.head_dim_k,
                   shape.head_dim_v, shape.page_size};
  const int n_blocks = plan.n_blocks();
  if (n_blocks <= 0) return Status::Ok();

  STRIDE_RETURN_IF_ERROR(check_work_partition(plan, g.n_kv));
  const WorkPartition& w = plan.work;
  const bool split = w.split;
  const int n_pairs = w.n_pairs();
  const int max_rows = plan.q_block * g.group;
  const int n_items = split ? w.n_segments() : n_pairs;
  // The pair of each segment, when segments are the items.
  std::vector<int32_t> pair_of;
  if (split) {
    pair_of.resize((size_t)n_items);
    for (int bh = 0; bh < n_pairs; ++bh)
      std::fill(pair_of.begin() + w.bh_segments[bh], pair_of.begin() + w.bh_segments[bh + 1], bh);
  }

  // Segment partials: [n_items, max_rows] of (m, d) and [n_items, max_rows, dv] of o.
  std::vector<SoftmaxPartial> part_md;
  std::vector<float> part_o;
  if (split) {
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
      const int bh = split ? pair_of[(size_t)item] : item;
      const SegmentRange range{bh / g.n_kv, bh % g.n_kv, split ? item : w.bh_segments[bh],
                               split ? item + 1 : w.bh_segments[bh + 1]};
      int rows = 0;
      run_item(pool, plan, policy, p, g, q, range, sc, rows);
      if (!split) {
        write_rows(sc, plan, p, g, range.b, range.h, rows, out);
        continue;
      }
      for (int r = 0; r < rows; ++r) {
        part_md[(size_t)item * max_rows + r] = {sc.m[r], sc.d[r]};
        std::copy(sc.o.begin() + (int64_t)r * g.dv, sc.o.begin() + (int64_t)(r + 1) * g.dv,
                  part_o.begin() + ((int64_t)item * max_rows + r) * g.dv);
      }
    }
  };
  if (inline_run) body(0, 1);
  else threads.run(body);
  if (!split) return Status::Ok();
  fold_segments(plan, p, g, w, part_md, part_o, out);
  return Status::Ok();
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
