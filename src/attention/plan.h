#pragma once
// The host side of attention: which KV pages each block of queries reads.
// A plan is a BSR-style page list (FlashInfer's indptr/indices): block b reads
// entries [indptr[b], indptr[b+1]). Only pages holding at least one key that
// some query of the block attends are listed; the kernel masks the rest of an
// edge page with policy_attends on the slots' stored positions.
#include <cstdint>
#include <span>
#include <vector>

#include "attention/policy.h"
#include "attention/work_partition.h"
#include "core/status.h"

namespace stride {

struct AttentionPlan {
  int q_block = 1;       // queries per block
  int n_q = 0;           // queries in total, at positions q_pos0 + i
  int64_t q_pos0 = 0;
  std::vector<int32_t> indptr;      // [n_blocks + 1]
  std::vector<int32_t> page_ids;    // [n_entries] physical page
  std::vector<int32_t> page_valid;  // [n_entries] written slots in that page
  std::vector<int64_t> page_first;  // [n_entries] position of slot 0
  std::vector<uint8_t> page_full;   // [n_entries] 1: every key visible to every query of the block
  // Optional per-kv-head lists (top-k selects per kv head). Empty: every kv
  // head reads the block's whole list. Else block b, kv head h reads entries
  // [head_indptr[b * n_kv_heads + h], head_indptr[b * n_kv_heads + h + 1]),
  // which lie inside [indptr[b], indptr[b + 1]).
  int n_kv_heads = 0;
  std::vector<int32_t> head_indptr;  // [n_blocks * n_kv_heads + 1]
  // The kernel's work items (partition_work), set by the planner once the
  // lists are final; the kernel refuses a plan without one.
  WorkPartition work;

  int n_blocks() const { return (int)indptr.size() - 1; }
  int64_t n_entries() const { return (int64_t)page_ids.size(); }
  bool per_head() const { return !head_indptr.empty(); }
  int64_t entry_begin(int b, int h) const {
    return per_head() ? head_indptr[(size_t)b * n_kv_heads + h] : indptr[b];
  }
  int64_t entry_end(int b, int h) const {
    return per_head() ? head_indptr[(size_t)b * n_kv_heads + h + 1] : indptr[b + 1];
  }
};

// Key range [k_first, k_last] against query range [q_first, q_last] under p.
// Both are exact consequences of policy_attends (the tests check them by brute force).
bool policy_any_visible(const PolicySpec& p, int64_t q_first, int64_t q_last, int64_t k_first,
                        int64_t k_last);
bool policy_all_visible(const PolicySpec& p, int64_t q_first, int64_t q_last, int64_t k_first,
                        int64_t k_last);

// page_table: logical page -> physical page id (-1 once released); logical page
// L holds positions [L * page_size, (L + 1) * page_size). Keys exist for
// positions [0, kv_len). Queries sit at [q_pos0, q_pos0 + n_q).
AttentionPlan plan_attention(const PolicySpec& p, const std::vector<int32_t>& page_table,
                             int page_size, int64_t kv_len, int64_t q_pos0, int n_q, int q_block);
// The same plan's entries that fall in logical pages [first_page, first_page
// + pages.size()), pages[i] backing logical page first_page + i (a shard of
// the sequence held by one process): the pages before first_page are not
// looked at, so under a window it costs the pages it lists, not the position.
AttentionPlan plan_attention_pages(const PolicySpec& p, std::span<const int32_t> pages, int64_t first_page,
                                   int page_size, int64_t kv_len, int64_t q_pos0, int n_q, int q_block);

// Brute-force check of a plan with policy_attends over every (query, slot)
// pair: every listed page holds a key some query of its block attends, is
// listed once in ascending position order, and `full` is only set when every
// key is visible to every query. Debug builds run it on every plan.
Status check_plan(const AttentionPlan& plan, const PolicySpec& p, int page_size, int64_t kv_len);

// The plan's arrays are consistent and every entry names a page of a pool of
// n_pages pages of page_size slots: O(entries), so the kernel checks every
// plan it is given before reading a page.
Status check_plan_bounds(const AttentionPlan& plan, int32_t n_pages, int page_size, int n_kv_heads);

// The query block size the cache uses for n_q queries.
int default_q_block(int n_q);
// The query block of a layer's plan: top-k selects per query (1) unless the
// policy asks for per-block selection, so a query's pages never depend on
// which other queries share its call.
int policy_q_block(const PolicySpec& p, int n_q);

}  // namespace stride
