// Decode attention per policy (dense, window, rswa, top-k at sparsity 0.9) on one layer of SmolLM2 shape (9 query heads,
// 3 kv heads, head_dim 64, page 32) at 4K/16K/64K context, 1 and 2 threads.
//   ./bench_attention --benchmark_filter=rswa
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "attention/kv_cache.h"
#include "attention/policy.h"
#include "core/thread_pool.h"

namespace {

using namespace stride;

constexpr int kHeads = 9, kKvHeads = 3, kHeadDim = 64, kPage = 32;
const char* kPolicies[] = {"dense", "window:size=4096", "rswa:sinks=4,window=2044",
                            "topk:sparsity=0.9,block=32"};

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// args: policy index, context length, threads
void BM_DecodeAttention(benchmark::State& state) {
  const PolicySpec policy = *parse_policy(kPolicies[state.range(0)]);
  const int ctx = (int)state.range(1);
  ThreadPool threads((int)state.range(2));
  KVCacheConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = kKvHeads;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy};
  cfg.budget_bytes = (int64_t)(ctx + 2 * kPage) * kKvHeads * kHeadDim * 2 * 2;
  auto cache = std::move(KVCache::create(cfg)).value();
  const auto seq = *cache->add_sequence();

  // Fill the context in chunks (written, not attended), leaving one decode slot.
  const int chunk = 1024;
  const auto kv = random_vec((size_t)chunk * kKvHeads * kHeadDim, 1);
  for (int done = 0; done < ctx - 1;) {
    const int n = std::min(chunk, ctx - 1 - done);
    if (!cache->reserve(seq, n).ok()) state.SkipWithError("reserve failed");
    cache->write(0, seq, kv.data(), kv.data(), n);
    cache->commit(seq, n);
    done += n;
  }
  if (!cache->reserve(seq, 1).ok()) state.SkipWithError("reserve failed");
  cache->write(0, seq, kv.data(), kv.data(), 1);
  const auto q = random_vec((size_t)kHeads * kHeadDim, 2);
  std::vector<float> out((size_t)kHeads * kHeadDim);
  AttentionParams p;
  p.n_head = kHeads;
  p.scale = 1.f / std::sqrt((float)kHeadDim);
  p.rope_dim = kHeadDim;

  const KVCacheStats before = cache->stats();
  for (auto _ : state) {
    cache->attend(0, seq, q.data(), 1, p, out.data(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  const KVCacheStats after = cache->stats();
  const double calls = (double)state.iterations();
  const double pages = (double)(after.pages_read - before.pages_read) / calls;
  state.counters["pages_read"] = pages;
  state.counters["pages_held"] = (double)cache->pages_held(seq, 0);
  // Bytes of K and V streamed per call.
  state.SetBytesProcessed((int64_t)(pages * kPage * kKvHeads * kHeadDim * 2 * 2 * calls));
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"policy", "ctx", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {4096, 16384, 65536}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One 512-token prefill chunk attending a 4K context that ends with it
// (args: policy index, threads): the block-sparse path with edge masks.
void BM_PrefillChunkAttention(benchmark::State& state) {
  const PolicySpec policy = *parse_policy(kPolicies[state.range(0)]);
  ThreadPool threads((int)state.range(1));
  const int ctx = 4096, chunk = 512;
  KVCacheConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = kKvHeads;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy};
  cfg.budget_bytes = (int64_t)(ctx + 2 * kPage) * kKvHeads * kHeadDim * 2 * 2;
  auto cache = std::move(KVCache::create(cfg)).value();
  const auto seq = *cache->add_sequence();
  const auto kv = random_vec((size_t)chunk * kKvHeads * kHeadDim, 1);
  for (int done = 0; done < ctx - chunk; done += chunk) {
    if (!cache->reserve(seq, chunk).ok()) state.SkipWithError("reserve failed");
    cache->write(0, seq, kv.data(), kv.data(), chunk);
    cache->commit(seq, chunk);
  }
  if (!cache->reserve(seq, chunk).ok()) state.SkipWithError("reserve failed");
  cache->write(0, seq, kv.data(), kv.data(), chunk);
  const auto q = random_vec((size_t)chunk * kHeads * kHeadDim, 2);
  std::vector<float> out((size_t)chunk * kHeads * kHeadDim);
  AttentionParams p;
  p.n_head = kHeads;
  p.rope_dim = kHeadDim;
  for (auto _ : state) {
    cache->attend(0, seq, q.data(), chunk, p, out.data(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * chunk);
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(BM_PrefillChunkAttention)
    ->ArgNames({"policy", "threads"})
    ->ArgsProduct({{0, 1, 2, 3}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
