// Decode attention per policy (dense, window, rswa, top-k at sparsity 0.9) on one layer of SmolLM2 shape (9 query heads,
// 3 kv heads, head_dim 64, page 32) at 4K/16K/64K context, 1 and 2 threads.
//   ./bench_attention --benchmark_filter=rswa
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include <span>

#include "cpu_path_env.h"
#include "attention/attention_kernel.h"
#include "kv/kv_manager.h"
#include "attention/policy.h"
#include "core/thread_pool.h"

namespace {

using namespace stride;

constexpr int kHeads = 9, kKvHeads = 3, kHeadDim = 64, kPage = 32;
const RopeTable kRope = RopeTable::plain(10000.0, kHeadDim, 1.0, false);  // R-SWA re-rotation
const char* kPolicies[] = {"dense", "window:size=4096", "rswa:sinks=4,window=2044",
                            "topk:sparsity=0.9,block=32", "topk:mass=0.95,max=4096"};

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// Writes n tokens of keys/values (the same rows each time) and commits them.
void fill(KvManager& cache, KvManager::SeqId seq, const std::vector<float>& kv, int n, benchmark::State& state) {
  const SequenceStep r{seq, nullptr, n};
  auto plan = cache.prepare(std::span<const SequenceStep>(&r, 1));
  if (!plan.ok() || !cache.write(*plan, 0, 0, kv.data(), kv.data()).ok() || !cache.commit(*plan).ok())
    state.SkipWithError("prepare, write or commit failed");
}

// The plan of one more step, written but not committed; it refers to
// `step`, which the caller keeps alive.
StepPlan open_step(KvManager& cache, const SequenceStep& step, const std::vector<float>& kv, benchmark::State& state) {
  auto plan = cache.prepare(std::span<const SequenceStep>(&step, 1));
  if (!plan.ok() || !cache.write(*plan, 0, 0, kv.data(), kv.data()).ok()) {
    state.SkipWithError("prepare or write failed");
    return StepPlan{};
  }
  return std::move(plan).value();
}

// Top-k selection (if any) and the kernel: what one layer's attention costs per step.
void attend(KvManager& cache, StepPlan& plan, const float* q, const AttentionParams& p, float* out, ThreadPool& threads) {
  if (plan.seqs.empty()) return;
  plan.seqs[0].layers[0].needs_selection = cache.config().layer_policies[0].kind == PolicyKind::TopK;
  (void)cache.select(plan, 0, 0, q, p.n_head, 0.f, threads);
  if (!attention_paged(cache.pool(), plan.seqs[0].layers[0].pages, cache.config().layer_policies[0], p, q, out, threads).ok())
    std::abort();  // the plan came from prepare(): a failure here is a bug
}

// A one-layer cache of SmolLM2's shape under `policy` holding ctx - 1
// tokens (written in chunks, not attended), and the open step of the next.
struct DecodeSetup {
  std::unique_ptr<KvManager> cache;
  std::unique_ptr<SequenceStep> request;  // what `step` refers to; a stable address
  StepPlan step;
};
DecodeSetup decode_setup(const PolicySpec& policy, int ctx, int chunk, benchmark::State& state) {
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = kKvHeads;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy};
  cfg.budget_bytes = (int64_t)(ctx + 2 * kPage) * kKvHeads * kHeadDim * 2 * 2;
  DecodeSetup d{std::move(KvManager::create(cfg)).value(), nullptr, {}};
  const auto seq = *d.cache->add_sequence();
  const auto kv = random_vec((size_t)chunk * kKvHeads * kHeadDim, 1);
  for (int done = 0; done < ctx - 1;) {
    const int n = std::min(chunk, ctx - 1 - done);
    fill(*d.cache, seq, kv, n, state);
    done += n;
  }
  d.request = std::make_unique<SequenceStep>(SequenceStep{seq, nullptr, 1});
  d.step = open_step(*d.cache, *d.request, kv, state);
  return d;
}

// args: policy index, context length, threads
void BM_DecodeAttention(benchmark::State& state) {
  const PolicySpec policy = *parse_policy(kPolicies[state.range(0)]);
  const int ctx = (int)state.range(1);
  ThreadPool threads((int)state.range(2));
  DecodeSetup d = decode_setup(policy, ctx, 1024, state);
  KvManager* cache = d.cache.get();
  StepPlan& step = d.step;
  const KvManager::SeqId seq = d.request->seq;
  const auto q = random_vec((size_t)kHeads * kHeadDim, 2);
  std::vector<float> out((size_t)kHeads * kHeadDim);
  AttentionParams p;
  p.n_head = kHeads;
  p.scale = 1.f / std::sqrt((float)kHeadDim);
  p.rope = &kRope;

  for (auto _ : state) {
    attend(*cache, step, q.data(), p, out.data(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  const double calls = (double)state.iterations();
  const AttentionPlan& pages_plan = step.seqs.empty() ? AttentionPlan{} : step.seqs[0].layers[0].pages;
  const double pages = (double)pages_plan.n_entries() / (pages_plan.per_head() ? kKvHeads : 1);
  state.counters["pages_read"] = pages;
  state.counters["pages_held"] = (double)cache->sequences().pages_held(seq, 0);
  // Bytes of K and V streamed per call.
  state.SetBytesProcessed((int64_t)(pages * kPage * kKvHeads * kHeadDim * 2 * 2 * calls));
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(BM_DecodeAttention)
    ->ArgNames({"policy", "ctx", "threads"})
    ->ArgsProduct({{0, 1, 2, 3, 4}, {4096, 16384, 65536}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Top-k selection alone (page scores, ranking, the mass cut) for one decode
// query at 32K to 1M tokens (1K to 32K pages per kv head): what choosing
// pages costs before any page is read. args: policy index (3 or 4), context.
void BM_TopkSelection(benchmark::State& state) {
  const PolicySpec policy = *parse_policy(kPolicies[state.range(0)]);
  DecodeSetup d = decode_setup(policy, (int)state.range(1), 4096, state);
  KvManager* cache = d.cache.get();
  StepPlan& step = d.step;
  const KvManager::SeqId seq = d.request->seq;
  const auto q = random_vec((size_t)kHeads * kHeadDim, 2);
  ThreadPool one_thread(1);  // the selection alone, on the calling thread
  for (auto _ : state) {
    step.seqs[0].layers[0].needs_selection = true;
    if (!cache->select(step, 0, 0, q.data(), kHeads, 0.f, one_thread).ok()) std::abort();
    benchmark::DoNotOptimize(step.seqs[0].layers[0].pages.page_ids.data());
  }
  const AttentionPlan& plan = step.seqs[0].layers[0].pages;
  state.counters["pages_read"] = (double)plan.n_entries() / kKvHeads;
  state.counters["pages_held"] = (double)cache->sequences().pages_held(seq, 0);
  state.SetLabel(kPolicies[state.range(0)]);
}

BENCHMARK(BM_TopkSelection)
    ->ArgNames({"policy", "ctx"})
    ->ArgsProduct({{3, 4}, {32768, 131072, 1048576}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One 512-token prefill chunk attending a 4K context that ends with it
// (args: policy index, threads): the block-sparse path with edge masks.
void BM_PrefillChunkAttention(benchmark::State& state) {
  const PolicySpec policy = *parse_policy(kPolicies[state.range(0)]);
  ThreadPool threads((int)state.range(1));
  const int ctx = 4096, chunk = 512;
  KvManagerConfig cfg;
  cfg.n_layer = 1;
  cfg.n_kv_heads = kKvHeads;
  cfg.head_dim_k = cfg.head_dim_v = kHeadDim;
  cfg.page_size = kPage;
  cfg.layer_policies = {policy};
  cfg.budget_bytes = (int64_t)(ctx + 2 * kPage) * kKvHeads * kHeadDim * 2 * 2;
  auto cache = std::move(KvManager::create(cfg)).value();
  const auto seq = *cache->add_sequence();
  const auto kv = random_vec((size_t)chunk * kKvHeads * kHeadDim, 1);
  for (int done = 0; done < ctx - chunk; done += chunk) {
    fill(*cache, seq, kv, chunk, state);
  }
  const SequenceStep request{seq, nullptr, chunk};
  StepPlan step = open_step(*cache, request, kv, state);
  const auto q = random_vec((size_t)chunk * kHeads * kHeadDim, 2);
  std::vector<float> out((size_t)chunk * kHeads * kHeadDim);
  AttentionParams p;
  p.n_head = kHeads;
  p.rope = &kRope;
  for (auto _ : state) {
    attend(*cache, step, q.data(), p, out.data(), threads);
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

int main(int argc, char** argv) {
  if (!stride::bench::select_cpu_path_from_env()) return 1;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
