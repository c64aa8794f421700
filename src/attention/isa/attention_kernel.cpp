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
#include "attention/attention_tiles_keys_major.h"
#include "attention/isa/attention_page.h"

namespace stride::isa::STRIDE_ISA_NS {
namespace {

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

// Whether the item's segments read a page holding a sink key: only those
// pages see the shifted queries, so only then are they worth rotating.
bool reads_sink_page(const AttentionPlan& plan, const PolicySpec& policy, const Geometry& g, const SegmentRange& r) {
  if (r.s1 <= r.s0) return false;
  const WorkPartition& w = plan.work;
  const int64_t e0 = r.s0 == w.bh_segments[(size_t)r.b * g.n_kv + r.h] ? plan.entry_begin(r.b, r.h)
                                                                        : w.segment_end[r.s0 - 1];
  for (int64_t e = e0; e < w.segment_end[r.s1 - 1]; ++e)
    if (plan.page_first[e] < policy.sinks) return true;
  return false;
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
  if (rows > 4) sc.kt.resize((size_t)dk * tiles::keys_major_ld(g.page_size));

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
  const bool shift = rswa_sink_shift(policy, row_pos0 + nq - 1) > 0 && reads_sink_page(plan, policy, g, r);
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

// out row of (query i, head) <- o / d; or, with partial, its (m, d, o) as they are.
void write_rows(const Scratch& sc, const AttentionPlan& plan, const AttentionParams& p,
                const Geometry& g, int b, int h, int rows, float* out, const AttentionPartialOut* partial) {
  const int q_first = b * plan.q_block;
  for (int r = 0; r < rows; ++r) {
    const int i = r / g.group, j = r % g.group;
    const int64_t row = (int64_t)(q_first + i) * p.n_head + (int64_t)h * g.group + j;
    const float* src = sc.o.data() + (int64_t)r * g.dv;
    if (partial) {
      partial->m[row] = sc.m[r];
      partial->d[row] = sc.d[r];
      std::copy(src, src + g.dv, partial->o + row * g.dv);
      continue;
    }
    float* dst = out + row * g.dv;
    const float inv = sc.d[r] > 0.f ? 1.f / sc.d[r] : 0.f;
    for (int t = 0; t < g.dv; ++t) dst[t] = src[t] * inv;
  }
}

// Folds each row's segment partials in order (as run_item does serially),
// then normalises as write_rows does.
void fold_segments(const AttentionPlan& plan, const AttentionParams& p, const Geometry& g,
                   const WorkPartition& w, const std::vector<SoftmaxPartial>& part_md,
                   const std::vector<float>& part_o, float* out, const AttentionPartialOut* partial,
                   Scratch& sc) {
  const int max_rows = plan.q_block * g.group;
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
    write_rows(sc, plan, p, g, b, h, rows, out, partial);
  }
}

}  // namespace

Status attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                       const AttentionParams& p, const float* q, float* out,
                       const AttentionPartialOut* partial, ThreadPool& threads) {
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
  auto body = [&](WorkerScratch& ws) {
    Scratch& sc = ws.get<Scratch>();
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
        write_rows(sc, plan, p, g, range.b, range.h, rows, out, partial);
        continue;
      }
      for (int r = 0; r < rows; ++r) {
        part_md[(size_t)item * max_rows + r] = {sc.m[r], sc.d[r]};
        std::copy(sc.o.begin() + (int64_t)r * g.dv, sc.o.begin() + (int64_t)(r + 1) * g.dv,
                  part_o.begin() + ((int64_t)item * max_rows + r) * g.dv);
      }
    }
  };
  if (inline_run) body(threads.scratch(0));
  else threads.run_chunks(threads.size(), [&](int, int, int worker) { body(threads.scratch(worker)); });
  if (!split) return Status::Ok();
  fold_segments(plan, p, g, w, part_md, part_o, out, partial, threads.scratch(0).get<Scratch>());
  return Status::Ok();
}

}  // namespace stride::isa::STRIDE_ISA_NS
#include "kernels/isa/end.h"
