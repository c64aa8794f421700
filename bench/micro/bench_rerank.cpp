// Top-k selection of one decode step on one layer of Qwen2.5-Coder-0.5B's
// shape (14 query heads, 2 kv heads, head_dim 64, page 32) at 8K to 32K
// tokens: Quest's bound alone, and the two-stage selector (estimate=rerank,
// shortlist 4) whose second stage scores the pool's f16 keys or their int8
// copies (rerank_keys=int8). CPU time per call; a decode step of the model
// pays it once per layer (24). Keys are random, so the shortlist is
// whatever the bound picks; the work per shortlisted page does not depend on it.
// BM_Int8PageMass times the int8 second stage's kernel alone on each CPU path:
// one kv head's 7 query rows against the 196 pages of a 16K shortlist.
//   ./bench_rerank --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "benchmark_main.h"
#include "attention/page_logsumexp_int8.h"
#include "attention/policy.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kv/kv_manager.h"

namespace {

using namespace stride;

constexpr int kHeads = 14, kKvHeads = 2, kHeadDim = 64, kPage = 32;
const char* kPolicies[] = {"topk:sparsity=0.9,prefill=dense", "topk:sparsity=0.9,prefill=dense,estimate=rerank",
                            "topk:sparsity=0.9,prefill=dense,estimate=rerank,rerank_keys=int8"};

// n values, uniform in [-2, 2): keys, values and queries alike.
std::vector<float> uniform_rows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> v(n);
  std::generate(v.begin(), v.end(), [&] { return u(rng); });
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

// One layer of the model's shape under `policy`, room for ctx tokens (f16 K and V).
KvManagerConfig qwen_layer(const PolicySpec& policy, int ctx) {
  KvManagerConfig c;
  c.layer_policies = {policy};
  c.n_layer = 1;
  c.page_size = kPage;
  c.n_kv_heads = kKvHeads;
  c.head_dim_k = c.head_dim_v = kHeadDim;
  c.budget_bytes = (int64_t)(ctx + 2 * kPage) * kKvHeads * kHeadDim * 4;
  return c;
}

// args: policy index, context length
void BM_DecodeSelection(benchmark::State& state) {
  const int ctx = (int)state.range(1), chunk = 1024;
  auto cache = std::move(KvManager::create(qwen_layer(*parse_policy(kPolicies[state.range(0)]), ctx))).value();
  const auto seq = *cache->add_sequence();
  for (int done = 0; done < ctx - 1; done += chunk) {
    const int n = std::min(chunk, ctx - 1 - done);
    const SequenceStep r{seq, nullptr, n};
    step(*cache, r, uniform_rows((size_t)n * kKvHeads * kHeadDim, 100 + done), false);
  }
  const SequenceStep next{seq, nullptr, 1};
  StepPlan open = step(*cache, next, uniform_rows((size_t)kKvHeads * kHeadDim, 3), true);
  const auto q = uniform_rows((size_t)kHeads * kHeadDim, 2);
  ThreadPool one_thread(1);  // the selection alone, on the calling thread
  for (auto _ : state) {
    open.seqs[0].layers[0].needs_selection = true;
    if (!cache->select(open, 0, 0, q.data(), kHeads, 0.f, one_thread).ok()) std::abort();
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

// A decode step's selections over all 24 layers of the model at ctx tokens,
// after a sweep of memory larger than the last-level cache (as the step's
// weights sweep it): the shortlisted pages' codes come from DRAM, as they do
// in a real decode step, instead of the cache the one-layer bench above
// leaves them in. CPU time of the 24 calls.
// args: policy index, context length
void BM_DecodeStepSelectionCold(benchmark::State& state) {
  constexpr int kLayers = 24;
  const int ctx = (int)state.range(1), chunk = 1024;
  KvManagerConfig cfg = qwen_layer(*parse_policy(kPolicies[state.range(0)]), ctx);
  cfg.n_layer = kLayers;
  cfg.layer_policies.assign(kLayers, cfg.layer_policies[0]);
  cfg.budget_bytes *= kLayers;
  auto cache = std::move(KvManager::create(cfg)).value();
  const auto seq = *cache->add_sequence();
  auto write_all = [&](const SequenceStep& r, const std::vector<float>& kv, bool keep_open) {
    auto plan = cache->prepare(std::span<const SequenceStep>(&r, 1));
    if (!plan.ok()) std::abort();
    for (int l = 0; l < kLayers; ++l)
      if (!cache->write(*plan, 0, l, kv.data(), kv.data()).ok()) std::abort();
    if (!keep_open && !cache->commit(*plan).ok()) std::abort();
    return std::move(plan).value();
  };
  for (int done = 0; done < ctx - 1; done += chunk) {
    const int n = std::min(chunk, ctx - 1 - done);
    write_all(SequenceStep{seq, nullptr, n}, uniform_rows((size_t)n * kKvHeads * kHeadDim, 100 + done), false);
  }
  const SequenceStep next{seq, nullptr, 1};
  StepPlan open = write_all(next, uniform_rows((size_t)kKvHeads * kHeadDim, 3), true);
  const auto q = uniform_rows((size_t)kHeads * kHeadDim, 2);
  std::vector<uint8_t> sweep((size_t)256 << 20, 1);  // [256 MiB], past any last-level cache
  ThreadPool one_thread(1);
  uint64_t sink = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (size_t i = 0; i < sweep.size(); i += 64) sink += sweep[i]++;
    state.ResumeTiming();
    for (int l = 0; l < kLayers; ++l) {
      open.seqs[0].layers[(size_t)l].needs_selection = true;
      if (!cache->select(open, 0, l, q.data(), kHeads, 0.f, one_thread).ok()) std::abort();
    }
    benchmark::DoNotOptimize(open.seqs[0].layers[0].pages.page_ids.data());
  }
  benchmark::DoNotOptimize(sink);
  state.counters["pages_read"] = (double)open.seqs[0].layers[0].pages.n_entries() / kKvHeads;
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(BM_DecodeStepSelectionCold)
    ->ArgNames({"policy", "ctx"})
    ->ArgsProduct({{0, 2}, {8192, 16384}})
    ->Unit(benchmark::kMicrosecond);

// args: CPU path (0: AVX2, 1: AVX-512), keys per page
void BM_Int8PageMass(benchmark::State& state) {
  const CpuPath path = state.range(0) == 0 ? CpuPath::Avx2 : CpuPath::Avx512;
  const std::vector<CpuPath> paths = supported_cpu_paths();
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) {
    state.SkipWithError("this CPU does not run the path");
    return;
  }
  const int page = (int)state.range(1), n_pages = 196, group = kHeads / kKvHeads;
  KvPoolShape shape{kKvHeads, kHeadDim, kHeadDim, page};
  auto pool = std::move(KvPool::create(shape, n_pages)).value();
  PageKeyCodes codes(n_pages, kKvHeads, kHeadDim, page);
  const auto kv = uniform_rows((size_t)page * kKvHeads * kHeadDim, 5);
  for (int p = 0; p < n_pages; ++p) {
    pool->store(p, 0, page, kv.data(), (int64_t)kKvHeads * kHeadDim, kv.data(), (int64_t)kKvHeads * kHeadDim, 0);
    codes.encode(*pool, p);
  }
  const auto q = uniform_rows((size_t)group * kHeadDim, 6);
  std::vector<const float*> rows;
  for (int r = 0; r < group; ++r) rows.push_back(q.data() + (size_t)r * kHeadDim);
  Int8Rows quantized;
  quantized.quantize(rows.data(), group, kHeadDim);
  std::vector<float> work((size_t)kInt8RowTile * codes.padded_page()), top(group), sum(group);
  const PageLogsumexpInt8Fn fn = page_logsumexp_int8_for(path);
  for (auto _ : state) {
    for (int p = 0; p < n_pages; ++p) fn(codes, p, 0, quantized, 0.125f, work.data(), top.data(), sum.data());
    benchmark::DoNotOptimize(sum.data());
  }
  state.counters["pages"] = n_pages;
  state.SetLabel(cpu_path_name(path));
}

BENCHMARK(BM_Int8PageMass)->ArgNames({"path", "page"})->ArgsProduct({{0, 1}, {16, 32}})->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) { return stride::bench::benchmark_main(argc, argv, nullptr); }
