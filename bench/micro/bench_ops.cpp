// Element-wise ops and activation quantization, one thread, at SmolLM2 /
// Gemma-3 sizes for decode (1 token) and prefill (512 tokens). The kernels
// run on the path STRIDE_CPU picks (avx2 | avx512; bench/kernel_paths.py
// runs it once per path).
//   STRIDE_CPU=avx2 ./build/bench_ops --benchmark_filter=rmsnorm
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "benchmark_main.h"
#include "kernels/ops.h"
#include "kernels/quant_act.h"

namespace {

using namespace stride;

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Elements processed per iteration, as a rate.
void count(benchmark::State& state, double elems) {
  state.counters["Gelem/s"] = benchmark::Counter(elems * 1e-9 * (double)state.iterations(),
                                                 benchmark::Counter::kIsRate);
}

void bm_rmsnorm(benchmark::State& state, int64_t rows, int64_t n) {
  auto x = random_vec((size_t)(rows * n), 1);
  const auto w = random_vec((size_t)n, 2);
  for (auto _ : state) {
    rmsnorm(x.data(), w.data(), x.data(), rows, n, 1e-6f);
    benchmark::ClobberMemory();
  }
  count(state, (double)(rows * n));
}

void bm_gated(benchmark::State& state, int64_t n, bool gelu) {
  const auto g = random_vec((size_t)n, 3), u = random_vec((size_t)n, 4);
  std::vector<float> out((size_t)n);
  for (auto _ : state) {
    if (gelu) gelu_tanh_mul(g.data(), u.data(), out.data(), n);
    else silu_mul(g.data(), u.data(), out.data(), n);
    benchmark::ClobberMemory();
  }
  count(state, (double)n);
}

void bm_softmax(benchmark::State& state, int64_t n) {
  const auto x0 = random_vec((size_t)n, 5);
  std::vector<float> x = x0;
  for (auto _ : state) {
    x = x0;  // the copy is part of the time, alike on every path
    softmax(x.data(), n);
    benchmark::ClobberMemory();
  }
  count(state, (double)n);
}

void bm_add_softcap(benchmark::State& state, int64_t n, bool cap) {
  auto y = random_vec((size_t)n, 6);
  const auto x = random_vec((size_t)n, 7);
  for (auto _ : state) {
    if (cap) softcap(y.data(), n, 30.0f);
    else add_inplace(y.data(), x.data(), n);
    benchmark::ClobberMemory();
  }
  count(state, (double)n);
}

void bm_rope(benchmark::State& state, int64_t n_tok, int n_heads, int head_dim, bool neox) {
  auto x = random_vec((size_t)(n_tok * n_heads * head_dim), 8);
  std::vector<int32_t> pos((size_t)n_tok);
  for (int64_t t = 0; t < n_tok; ++t) pos[(size_t)t] = (int32_t)(1000 + t);
  const RopeTable table = RopeTable::plain(10000.0, head_dim, 1.0, neox);
  for (auto _ : state) {
    rope(x.data(), pos.data(), n_tok, n_heads, head_dim, table);
    benchmark::ClobberMemory();
  }
  count(state, (double)(n_tok * n_heads * head_dim));
}

void bm_quantize(benchmark::State& state, int64_t n_tok, int64_t n_in) {
  const auto x = random_vec((size_t)(n_tok * n_in), 9);
  QuantizedActs acts;
  for (auto _ : state) {
    quantize_acts(x.data(), n_tok, n_in, acts);
    benchmark::DoNotOptimize(acts.q.data());
  }
  count(state, (double)(n_tok * n_in));
}

template <typename Fn, typename... Args>
void add(const std::string& name, Fn fn, Args... args) {
  benchmark::RegisterBenchmark(name.c_str(), fn, args...)->Unit(benchmark::kMicrosecond)->UseRealTime();
}

void register_all() {
  for (int64_t n_tok : {1, 512}) {
    const std::string tok = "/tok" + std::to_string(n_tok);
    // SmolLM2-135M: n_embd 576, n_ff 1536, 9 heads (3 KV) of 64, adjacent pairs.
    // Gemma-3-270m: n_embd 640, n_ff 2048, 4 heads (1 KV) of 256, NeoX pairs.
    add("rmsnorm/576" + tok, bm_rmsnorm, n_tok, int64_t{576});
    add("rmsnorm/640" + tok, bm_rmsnorm, n_tok, int64_t{640});
    add("silu_mul/1536" + tok, bm_gated, n_tok * 1536, false);
    add("gelu_tanh_mul/2048" + tok, bm_gated, n_tok * 2048, true);
    add("add/576" + tok, bm_add_softcap, n_tok * 576, false);
    add("rope_adjacent/12x64" + tok, bm_rope, n_tok, 12, 64, false);
    add("rope_neox/5x256" + tok, bm_rope, n_tok, 5, 256, true);
    add("quantize_acts/576" + tok, bm_quantize, n_tok, int64_t{576});
    add("quantize_acts/2048" + tok, bm_quantize, n_tok, int64_t{2048});
  }
  // Sampling over the vocabulary; Gemma's final logit soft-cap.
  add("softmax/49152", bm_softmax, int64_t{49152});
  add("softcap/262144", bm_add_softcap, int64_t{262144}, true);
}

}  // namespace

int main(int argc, char** argv) { return stride::bench::benchmark_main(argc, argv, register_all); }
