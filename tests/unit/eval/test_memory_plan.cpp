// The memory planner against hand-derived figures for a SmolLM2-135M-shaped
// config (30 layers, 3 kv heads of 64, d_model 576).
#include <gtest/gtest.h>

#include "eval/memory_plan.h"

namespace stride {

namespace {

MemoryPlanInput smol(const char* policy, int64_t context) {
  MemoryPlanInput in;
  in.config.n_layer = 30;
  in.config.n_head = 9;
  in.config.n_head_kv = 3;
  in.config.head_dim = in.config.head_dim_v = 64;
  in.config.n_embd = 576;
  in.config.n_ff = 1536;
  in.config.n_vocab = 49152;
  in.weight_bytes = 100'000'000;
  in.layer_policies.assign(30, *parse_policy(policy));
  in.context = context;
  return in;
}

}  // namespace

TEST(MemoryPlan, DenseKvIsLinearAtTwentyThreeKilobytesPerToken) {
  // Page = 32 tokens x 3 heads x 128 x 2 B = 24,576 B; pages cover context + one chunk.
  const MemoryPlan m = plan_memory(smol("dense", 8192));
  EXPECT_EQ(m.kv_pages_per_seq, 30 * ((8192 + 256) / 32));
  EXPECT_EQ(m.kv_bytes, m.kv_pages_per_seq * 24576);
  const MemoryPlan big = plan_memory(smol("dense", 8192 + 32 * 1000));
  EXPECT_EQ(big.kv_bytes - m.kv_bytes, 30LL * 1000 * 24576);  // 23,040 B per token
  EXPECT_EQ(m.total_bytes, m.weight_bytes + m.kv_bytes + m.activation_bytes);
  EXPECT_EQ(m.seed_formula_bytes, 4LL * (8192LL * 8192 + 8192LL * 576));
}

// rerank_keys=int8 keeps an int8 copy of each held page's keys: per page and
// kv head, 32 padded keys x (64 codes + a 4-byte scale + a 4-byte sum).
TEST(MemoryPlan, Int8RerankCountsTheKeyCopies) {
  const MemoryPlan bound = plan_memory(smol("topk:sparsity=0.9,prefill=dense", 8192));
  const MemoryPlan pool = plan_memory(smol("topk:sparsity=0.9,prefill=dense,estimate=rerank", 8192));
  const MemoryPlan coded = plan_memory(smol("topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8", 8192));
  EXPECT_EQ(pool.kv_bytes, bound.kv_bytes);
  EXPECT_EQ(pool.key_code_bytes, 0);
  EXPECT_EQ(coded.kv_pages_per_seq, bound.kv_pages_per_seq);
  EXPECT_EQ(coded.key_code_bytes, bound.kv_pages_per_seq * 3 * 32 * (64 + 8));
  EXPECT_EQ(coded.kv_bytes, bound.kv_bytes + coded.key_code_bytes);
  // Only the layers that ask for it, and pages of 24 keys are padded to 32.
  MemoryPlanInput half = smol("topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8", 8192);
  for (int l = 0; l < 15; ++l) half.layer_policies[(size_t)l] = *parse_policy("topk:sparsity=0.9,prefill=dense");
  half.page_size = 24;
  const int64_t held = (8192 + 256 + 23) / 24;
  EXPECT_EQ(plan_memory(half).key_code_bytes, 15 * held * 3 * 32 * (64 + 8));
  half.batch = 2;
  EXPECT_EQ(plan_memory(half).key_code_bytes, 2 * 15 * held * 3 * 32 * (64 + 8));
}

TEST(MemoryPlan, WindowedKvIsFlatPastTheWindow) {
  const MemoryPlan a = plan_memory(smol("rswa:sinks=4,window=4092", 8192));
  const MemoryPlan b = plan_memory(smol("rswa:sinks=4,window=4092", 1 << 20));
  EXPECT_EQ(a.kv_bytes, b.kv_bytes);
  // Per layer: the sinks' page, the 128 pages the window (q0 - 4092, q0) spans
  // at a page-aligned step start q0, and the chunk's 8 pages.
  EXPECT_EQ(a.kv_pages_per_seq, 30 * (1 + 128 + 8));
  const MemoryPlan w = plan_memory(smol("window:size=1024", 100));  // shorter than the window
  EXPECT_EQ(w.kv_pages_per_seq, 30 * ((100 + 256 + 31) / 32));
}

TEST(MemoryPlan, BatchScalesKvAndBudgetSearchesAreTight) {
  MemoryPlanInput in = smol("dense", 4096);
  in.batch = 3;
  const MemoryPlan m3 = plan_memory(in);
  in.batch = 1;
  EXPECT_EQ(m3.kv_bytes, 3 * plan_memory(in).kv_bytes);
  const int64_t budget = 1'000'000'000;
  const int64_t L = largest_context(in, budget, 1 << 30);
  in.context = L;
  EXPECT_LE(plan_memory(in).total_bytes, budget);
  in.context = L + 1;
  EXPECT_GT(plan_memory(in).total_bytes, budget);
  in.context = 4096;
  const int64_t B = largest_batch(in, budget);
  in.batch = B;
  EXPECT_LE(plan_memory(in).total_bytes, budget);
  in.batch = B + 1;
  EXPECT_GT(plan_memory(in).total_bytes, budget);
  EXPECT_EQ(largest_context(smol("rswa:sinks=4,window=1020", 0), budget, 1 << 30), 1 << 30);
}

}  // namespace stride
