#include "attention/plan.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace stride {

bool policy_any_visible(const PolicySpec& p, int64_t q_first, int64_t q_last, int64_t k_first,
                        int64_t k_last) {
  if (k_first > q_last) return false;  // causal: every key is after every query
  switch (p.kind) {
    case PolicyKind::Dense: return true;
    // Union over the block of the windows (q - W, q] is (q_first - W, q_last].
    case PolicyKind::Window: return k_last > q_first - p.window;
    case PolicyKind::RSWA: return k_first < p.sinks || k_last > q_first - p.window;
    case PolicyKind::TopK: return true;  // causal; the selection is the plan's
    case PolicyKind::Strided: {
      if (k_first < p.sinks || k_last > q_first - p.window) return true;
      // A strided block or a global range among the causally visible keys
      // [k_first, min(k_last, q_last)]?
      const int64_t k_end = std::min(k_last, q_last);
      for (const TokenRange& r : p.global_ranges)
        if (r.first <= k_end && r.last >= k_first) return true;
      const int64_t b0 = k_first / p.block, b1 = k_end / p.block;
      const int64_t first_multiple = (b0 + p.stride - 1) / p.stride * p.stride;
      return first_multiple <= b1;
    }
  }
  return false;
}

bool policy_all_visible(const PolicySpec& p, int64_t q_first, int64_t q_last, int64_t k_first,
                        int64_t k_last) {
  if (k_last > q_first) return false;  // the first query must already see the last key
  switch (p.kind) {
    case PolicyKind::Dense: return true;
    // The last query's window is the tightest.
    case PolicyKind::Window: return k_first > q_last - p.window;
    // No key of the page may fall in the gap [sinks, q_last - W] between sinks and window.
    case PolicyKind::RSWA:
      return std::max(k_first, p.sinks) > std::min(k_last, q_last - p.window);
    case PolicyKind::TopK: return true;
    // Globals, global ranges and strided blocks do not depend on the query; the last query's
    // window is the tightest. Pages are short, so check key by key.
    case PolicyKind::Strided:
      for (int64_t k = k_first; k <= k_last; ++k)
        if (!policy_attends(p, q_last, k)) return false;
      return true;
  }
  return false;
}

namespace {

// One list of a plan block: entries [e0, e1) for queries [qa, qb].
Status check_list(const AttentionPlan& plan, const PolicySpec& p, int page_size, int64_t kv_len,
                  int b, int64_t qa, int64_t qb, int64_t e0, int64_t e1) {
  int64_t prev_first = -1;
  for (int64_t e = e0; e < e1; ++e) {
    const int64_t ka = plan.page_first[e], kb = ka + plan.page_valid[e] - 1;
    const std::string where = "plan block " + std::to_string(b) + " page@" + std::to_string(ka);
    if (ka <= prev_first || ka % page_size != 0 || kb >= kv_len || kb < ka)
      return Internal(where + ": bad page range");
    prev_first = ka;
    bool any = false, all = true;
    for (int64_t q = qa; q <= qb; ++q)
      for (int64_t k = ka; k <= kb; ++k) {
        const bool vis = policy_attends(p, q, k);
        any = any || vis;
        all = all && vis;
      }
    if (!any) return Internal(where + ": listed page has no visible key");
    if (plan.page_full[e] && !all) return Internal(where + ": marked full but has hidden keys");
  }
  return Status::Ok();
}

}  // namespace

Status check_plan(const AttentionPlan& plan, const PolicySpec& p, int page_size, int64_t kv_len) {
  for (int b = 0; b < plan.n_blocks(); ++b) {
    const int64_t qa = plan.q_pos0 + (int64_t)b * plan.q_block;
    const int64_t qb = plan.q_pos0 + std::min<int64_t>((int64_t)(b + 1) * plan.q_block, plan.n_q) - 1;
    // Per-kv-head plans (top-k) hold one list per head inside the block's range.
    const int n_lists = plan.per_head() ? plan.n_kv_heads : 1;
    for (int h = 0; h < n_lists; ++h) {
      const int64_t e0 = plan.entry_begin(b, h), e1 = plan.entry_end(b, h);
      if (e0 < plan.indptr[b] || e1 > plan.indptr[b + 1] || e0 > e1)
        return Internal("plan block " + std::to_string(b) + ": head list outside the block");
      STRIDE_RETURN_IF_ERROR(check_list(plan, p, page_size, kv_len, b, qa, qb, e0, e1));
    }
  }
  return Status::Ok();
}

Status check_plan_bounds(const AttentionPlan& plan, int32_t n_pages, int page_size, int n_kv_heads) {
  const int64_t n = plan.n_entries();
  if (plan.q_block < 1 || plan.n_q < 0 || plan.indptr.empty() || plan.indptr[0] != 0 ||
      (int64_t)plan.indptr.back() != n)
    return Internal("attention plan: bad query blocks or block index");
  if (plan.n_blocks() != (plan.n_q + plan.q_block - 1) / plan.q_block)
    return Internal("attention plan: block count does not match the queries");
  if ((int64_t)plan.page_valid.size() != n || (int64_t)plan.page_first.size() != n ||
      (int64_t)plan.page_full.size() != n)
    return Internal("attention plan: entry arrays of different lengths");
  for (size_t b = 1; b < plan.indptr.size(); ++b)
    if (plan.indptr[b] < plan.indptr[b - 1]) return Internal("attention plan: block index goes backwards");
  for (int64_t e = 0; e < n; ++e)
    if (plan.page_ids[e] < 0 || plan.page_ids[e] >= n_pages || plan.page_valid[e] < 1 ||
        plan.page_valid[e] > page_size || plan.page_first[e] < 0)
      return Internal("attention plan: entry " + std::to_string(e) + " names no valid page");
  if (!plan.per_head()) return Status::Ok();
  if (plan.n_kv_heads != n_kv_heads || (int64_t)plan.head_indptr.size() != (int64_t)plan.n_blocks() * n_kv_heads + 1)
    return Internal("attention plan: per-head lists do not match the kv heads");
  for (int b = 0; b < plan.n_blocks(); ++b)
    for (int h = 0; h < n_kv_heads; ++h) {
      const int64_t e0 = plan.entry_begin(b, h), e1 = plan.entry_end(b, h);
      if (e0 < plan.indptr[b] || e1 > plan.indptr[b + 1] || e0 > e1)
        return Internal("attention plan: a head's list lies outside its block");
    }
  return Status::Ok();
}

int default_q_block(int n_q) { return n_q <= 1 ? 1 : std::min(n_q, 32); }

int policy_q_block(const PolicySpec& p, int n_q) {
  return p.kind == PolicyKind::TopK && !p.select_per_block ? 1 : default_q_block(n_q);
}

AttentionPlan plan_attention(const PolicySpec& p, const std::vector<int32_t>& page_table,
                             int page_size, int64_t kv_len, int64_t q_pos0, int n_q, int q_block) {
  return plan_attention_pages(p, page_table, 0, page_size, kv_len, q_pos0, n_q, q_block);
}

AttentionPlan plan_attention_pages(const PolicySpec& p, std::span<const int32_t> pages, int64_t first_page,
                                   int page_size, int64_t kv_len, int64_t q_pos0, int n_q, int q_block) {
  AttentionPlan plan;
  plan.q_block = std::max(1, q_block);
  plan.n_q = n_q;
  plan.q_pos0 = q_pos0;
  const int n_blocks = n_q <= 0 ? 0 : (n_q + plan.q_block - 1) / plan.q_block;
  plan.indptr.assign(1, 0);
  const int64_t n_logical =
      std::min<int64_t>(first_page + (int64_t)pages.size(), (kv_len + page_size - 1) / page_size);

  auto consider = [&](int64_t L, int64_t qa, int64_t qb) {
    const int64_t first = L * page_size;
    const int64_t last = std::min<int64_t>(first + page_size, kv_len) - 1;
    if (last < first || !policy_any_visible(p, qa, qb, first, last)) return;
    const int32_t phys = pages[(size_t)(L - first_page)];
    assert(phys >= 0 && "a visible page was released");
    if (phys < 0) return;
    plan.page_ids.push_back(phys);
    plan.page_valid.push_back((int32_t)(last - first + 1));
    plan.page_first.push_back(first);
    plan.page_full.push_back(policy_all_visible(p, qa, qb, first, last) ? 1 : 0);
  };

  for (int b = 0; b < n_blocks; ++b) {
    const int64_t qa = q_pos0 + (int64_t)b * plan.q_block;
    const int64_t qb = q_pos0 + std::min<int64_t>((int64_t)(b + 1) * plan.q_block, n_q) - 1;
    // Candidate logical pages, in ascending order; consider() filters exactly.
    const int64_t last_page = std::min<int64_t>(n_logical - 1, qb / page_size);
    int64_t window_from = 0;
    int64_t sink_to = -1;  // inclusive
    // Top-k and strided may read any page: every causal page is a candidate.
    if (p.kind == PolicyKind::Window || p.kind == PolicyKind::RSWA) {
      window_from = std::max<int64_t>(0, qa - p.window + 1) / page_size;
      if (p.kind == PolicyKind::RSWA && p.sinks > 0)
        sink_to = std::min<int64_t>(window_from - 1, (p.sinks - 1) / page_size);
    }
    for (int64_t L = first_page; L <= std::min(sink_to, last_page); ++L) consider(L, qa, qb);
    for (int64_t L = std::max(window_from, first_page); L <= last_page; ++L) consider(L, qa, qb);
    plan.indptr.push_back((int32_t)plan.page_ids.size());
  }
  return plan;
}

}  // namespace stride
