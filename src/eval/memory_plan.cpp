#include "eval/memory_plan.h"

#include <algorithm>

#include "kv/kv_pages_needed.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_key_codes.h"

namespace stride {

int64_t policy_pages_held(const PolicySpec& p, int64_t context, int page_size, int prefill_chunk) {
  // Pages are reserved a chunk ahead, then released after the chunk commits:
  // the same count the scheduler admits by (kv/kv_pages_needed.h).
  return layer_pages_for_growth(p, page_size, 0, context + prefill_chunk, prefill_chunk);
}

MemoryPlan plan_memory(const MemoryPlanInput& in) {
  const ModelConfig& c = in.config;
  MemoryPlan m;
  m.weight_bytes = in.weight_bytes;
  const KvPoolShape shape{c.n_head_kv, c.head_dim, c.head_dim_v, in.page_size, in.kv_storage};
  const int64_t page_bytes = shape.bytes_per_page();
  bool topk = false;
  int64_t coded_pages = 0;  // pages held by layers whose second stage reads int8 copies
  for (int l = 0; l < c.n_layer; ++l) {
    const PolicySpec& p = l < (int)in.layer_policies.size() ? in.layer_policies[l] : PolicySpec{};
    const int64_t held = policy_pages_held(p, in.context, in.page_size, in.prefill_chunk);
    m.kv_pages_per_seq += held;
    topk = topk || p.kind == PolicyKind::TopK;
    if (p.kind == PolicyKind::TopK && p.rerank_estimate && p.rerank_int8 && PageKeyCodes::supported(c.head_dim))
      coded_pages += held;
  }
  // Top-k keeps a per-channel min and max (f32) per page and kv head.
  const int64_t summary_bytes = topk ? (int64_t)c.n_head_kv * c.head_dim * 2 * 4 : 0;
  m.key_code_bytes = coded_pages * PageKeyCodes::bytes_per_page(c.n_head_kv, c.head_dim, in.page_size) * in.batch;
  m.kv_bytes = m.kv_pages_per_seq * (page_bytes + summary_bytes) * in.batch + m.key_code_bytes;
  // Chunk scratch (f32): x, h, o [n, n_embd]; q [n, n_head * hd]; k, v;
  // attention out; gate, up [n, n_ff]; plus the last token's logits.
  const int64_t n = std::min<int64_t>(in.prefill_chunk, std::max<int64_t>(in.context, 1));
  const int64_t per_token = 3LL * c.n_embd + (int64_t)c.n_head * c.head_dim +
                            (int64_t)c.n_head_kv * (c.head_dim + c.head_dim_v) +
                            (int64_t)c.n_head * c.head_dim_v + 2LL * c.n_ff;
  m.activation_bytes = 4 * (n * per_token + c.n_vocab);
  m.total_bytes = m.weight_bytes + m.kv_bytes + m.activation_bytes;
  // The seed's W is the attention span: the window, or L for full attention.
  int64_t W = in.context;
  for (const PolicySpec& p : in.layer_policies)
    if (p.kind == PolicyKind::Window || p.kind == PolicyKind::RSWA)
      W = std::min<int64_t>(W, p.window + p.sinks);
  m.seed_formula_bytes = 4 * (W * in.context + in.context * (int64_t)c.n_embd);
  return m;
}

int64_t largest_context(MemoryPlanInput in, int64_t budget, int64_t cap) {
  in.context = 1;
  if (plan_memory(in).total_bytes > budget) return 0;
  in.context = cap;
  if (plan_memory(in).total_bytes <= budget) return cap;
  int64_t lo = 1, hi = cap;  // plan(lo) fits, plan(hi) does not; memory grows with L
  while (hi - lo > 1) {
    in.context = lo + (hi - lo) / 2;
    (plan_memory(in).total_bytes <= budget ? lo : hi) = in.context;
  }
  return lo;
}

int64_t largest_batch(MemoryPlanInput in, int64_t budget) {
  in.batch = 1;
  const MemoryPlan one = plan_memory(in);
  const int64_t fixed = one.weight_bytes + one.activation_bytes;
  if (one.kv_bytes <= 0 || budget < fixed) return budget >= fixed && one.kv_bytes <= 0 ? 1 : 0;
  return std::max<int64_t>(0, (budget - fixed) / one.kv_bytes);
}

}  // namespace stride
