// Top-k selection of one decode step on one layer of Qwen2.5-Coder-0.5B's
// shape (14 query heads, 2 kv heads, head_dim 64, page 32) at 8K to 32K
// tokens: Quest's bound alone, and the two-stage selector (estimate=rerank,
// shortlist 4) whose second stage scores the pool's f16 keys or their int8
// copies (rerank_keys=int8). CPU time per call; a decode step of the model
// pays it once per layer (24). Keys are random, so the shortlist is
// whatever the bound picks; the work per shortlisted page does not depend on it.
//   ./bench_rerank --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "cpu_path_env.h"
#include "attention/policy.h"
#include "kv/kv_manager.h"

namespace {

using namespace stride;

constexpr int kHeads = 14, kKvHeads = 2, kHeadDim = 64, kPage = 32;
const char* kPolicies[] = {"topk:sparsity=0.9,prefill=dense", "topk:sparsity=0.9,prefill=dense,estimate=rerank",
                            "topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8"};

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// Writes one step of n tokens (rows kv, as keys and values) and, unless
// keep_open, commits it; returns its plan.
StepPlan step(KvManager& cache, const SequenceStep& r, const std::vector<float>& kv, bool keep_open) {
  auto plan = cache.prepare(std::span<const SequenceStep>(&r, 1));
  if (!plan.ok() || !cache.write(*plan, 0, 0, kv.data(), kv.data()).ok()) std::abort();
  if (!keep_open && !cache.commit(*plan).ok()) std::abort();
  return std::move(plan).value();
}

// args: policy index, context length
void BM_DecodeSelection(benchmark::State& state) {
  const PolicySpec policy = *parse_policy(kPolicies[state.range(0)]);
  const int ctx = (int)state.range(1), chunk = 1024;
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = kKvHeads;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy};
  cfg.budget_bytes = (int64_t)(ctx + 2 * kPage) * kKvHeads * kHeadDim * 2 * 2;
  auto cache = std::move(KvManager::create(cfg)).value();
  const auto seq = *cache->add_sequence();
  for (int done = 0; done < ctx - 1; done += chunk) {
    const int n = std::min(chunk, ctx - 1 - done);
    const SequenceStep r{seq, nullptr, n};
    step(*cache, r, random_vec((size_t)n * kKvHeads * kHeadDim, 100 + done), false);
  }
  const SequenceStep next{seq, nullptr, 1};
  StepPlan open = step(*cache, next, random_vec((size_t)kKvHeads * kHeadDim, 3), true);
  const auto q = random_vec((size_t)kHeads * kHeadDim, 2);
  WorkerScratch scratch;
  for (auto _ : state) {
    open.seqs[0].layers[0].needs_selection = true;
    if (!cache->select(open, 0, 0, q.data(), kHeads, 0.f, scratch).ok()) std::abort();
    benchmark::DoNotOptimize(open.seqs[0].layers[0].pages.page_ids.data());
  }
  state.counters["pages_read"] = (double)open.seqs[0].layers[0].pages.n_entries() / kKvHeads;
  state.counters["pages_held"] = (double)cache->sequences().pages_held(seq, 0);
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(BM_DecodeSelection)
    ->ArgNames({"policy", "ctx"})
    ->ArgsProduct({{0, 1, 2}, {8192, 16384, 32768}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  if (!stride::bench::select_cpu_path_from_env()) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
