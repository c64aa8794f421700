// GFLOP/s of matmul per weight type at SmolLM2 / Gemma-3 layer shapes:
// GEMV (decode, n_tok = 1), batched decode (n_tok = 16) and GEMM (prefill,
// n_tok = 512), 1 and 2 threads. Quantized types run twice: on the GGUF
// layout (matmul) and repacked at load (".../packed": matmul_packed).
// "BF16/.../vdpbf16ps": the optional AVX512-BF16 tiles (kernel_paths.h).
// Float weights run the active path's tiles: on the amx path the AMX-BF16
// tiles, so STRIDE_CPU=amx against STRIDE_CPU=avx512 compares them with FMA.
// "Pack/...": pack_matrix itself (load time), source GB/s.
//   ./build/bench_matmul --benchmark_filter='Q4_1'
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark_main.h"
#include "random_weights.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "kernels/kernel_paths.h"
#include "kernels/matmul.h"
#include "kernels/packed_matrix.h"

namespace {

using namespace stride;
using bench::Shape;
using bench::random_weight;
using bench::weight_view;

// dot: the AVX-512 vdpbf16ps tiles for bf16 weights (kernel_paths.h), where the CPU has them.
void bench(benchmark::State& state, DType t, Shape shape, int64_t n_tok, int threads, bool packed,
           bool dot) {
  const kernels::KernelTable* dot_table = dot ? kernels::avx512_bf16_dot_table() : nullptr;
  if (dot && !dot_table) {
    state.SkipWithError("no AVX512-BF16 on this CPU");
    return;
  }
  const auto bytes = random_weight(t, shape.n_in, shape.n_out);
  const TensorView w = weight_view(t, shape, bytes);
  std::vector<float> x((size_t)(shape.n_in * n_tok)), y((size_t)(shape.n_out * n_tok));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (auto& v : x) v = nd(rng);
  ThreadPool pool(threads);
  PackedMatrix pm;
  if (packed) {
    auto p = pack_matrix(w);
    if (!p.ok()) {
      state.SkipWithError(p.status().message().c_str());
      return;
    }
    pm = std::move(p.value());
  }
  for (auto _ : state) {
    if (packed) {
      matmul_packed(pm, x.data(), y.data(), n_tok, pool);
    } else if (dot_table) {
      detail::matmul_float_on(*dot_table, w, x.data(), y.data(), n_tok, pool);
    } else {
      matmul(w, x.data(), y.data(), n_tok, pool);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * (double)shape.n_in * (double)shape.n_out * (double)n_tok;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9 * (double)state.iterations(),
                                                 benchmark::Counter::kIsRate);
  state.counters["GB/s_w"] = benchmark::Counter((double)bytes.size() * 1e-9 * (double)state.iterations(),
                                                benchmark::Counter::kIsRate);
}

// Load-time repacking of one matrix (pack_matrix): source GB/s, including the
// page faults of the new buffer, as at load.
void bench_pack(benchmark::State& state, DType t, Shape shape) {
  const auto bytes = random_weight(t, shape.n_in, shape.n_out);
  const TensorView w = weight_view(t, shape, bytes);
  for (auto _ : state) {
    auto p = pack_matrix(w);
    if (!p.ok()) {
      state.SkipWithError(p.status().message().c_str());
      return;
    }
    benchmark::DoNotOptimize(p.value().data.data());
  }
  state.counters["GB/s_src"] = benchmark::Counter((double)bytes.size() * 1e-9 * (double)state.iterations(),
                                                  benchmark::Counter::kIsRate);
}

void register_all() {
  // SmolLM2-135M: ffn_gate/up [576 -> 1536], ffn_down [1536 -> 576].
  // Gemma-3-270m: ffn_gate/up [640 -> 2048] (Q5_0), ffn_down [2048 -> 640] (Q4_K/Q6_K).
  const Shape smol_up{"576x1536", 576, 1536}, smol_down{"1536x576", 1536, 576};
  const Shape gemma_up{"640x2048", 640, 2048}, gemma_down{"2048x640", 2048, 640};
  // Llama-3.2-1B: ffn_gate/up [2048 -> 8192] (Q4_K), ffn_down [8192 -> 2048]
  // (Q6_K on some layers); Llama-3.1-8B Q4_0: ffn_gate/up [4096 -> 14336].
  const Shape l1b_up{"2048x8192", 2048, 8192}, l1b_down{"8192x2048", 8192, 2048};
  const Shape l8b_up{"4096x14336", 4096, 14336};
  // Beyond the L3 cache: the Llama-3 output head (Q6_K) and a long Q4_K matrix.
  const Shape l1b_head{"2048x128256", 2048, 128256}, long_q4k{"2048x65536", 2048, 65536};
  struct Entry { DType t; std::vector<Shape> shapes; };
  const std::vector<Entry> entries = {
      {DType::Q4_1, {smol_up, smol_down}}, {DType::Q8_0, {smol_up, smol_down, gemma_up}},
      {DType::Q5_0, {gemma_up, smol_up}},  {DType::Q4_0, {smol_up}},
      {DType::Q5_1, {smol_up}},            {DType::Q4_K, {gemma_down, smol_down}},
      {DType::Q6_K, {gemma_down, l1b_down}}, {DType::Q5_K, {gemma_down}},
      {DType::Q4_K, {l1b_up}},             {DType::Q4_0, {l8b_up}},
      {DType::Q8_0, {l1b_up}},             {DType::Q6_K, {l1b_head}},
      {DType::Q4_K, {long_q4k, l1b_down}},
      {DType::F32, {smol_up}},             {DType::F16, {smol_up, l1b_up}},
      {DType::BF16, {smol_up, l1b_up, l1b_head}},
      // The low-bit types (docs/weight-types.md).
      {DType::Q2_K, {gemma_down, l1b_up}}, {DType::Q3_K, {gemma_down, l1b_up}},
      {DType::IQ4_NL, {smol_up, l1b_up}},  {DType::IQ4_XS, {gemma_down, l1b_up}},
      {DType::MXFP4, {smol_up, l1b_up}},
  };
  for (const Entry& e : entries)
    for (const Shape& s : e.shapes)
      for (int64_t n_tok : {1, 16, 512})
        for (int threads : {1, 2})
          for (bool packed : {false, true}) {
            if (packed && !packable(e.t)) continue;
            const std::string name = std::string(dtype_name(e.t)) + "/" + s.name + "/tok" +
                                     std::to_string(n_tok) + "/t" + std::to_string(threads) +
                                     (packed ? "/packed" : "");
            benchmark::RegisterBenchmark(name.c_str(), bench, e.t, s, n_tok, threads, packed, false)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
          }
  for (const Entry& e : std::vector<Entry>{{DType::Q4_K, {l1b_up}}, {DType::Q6_K, {l1b_down}},
                                           {DType::Q4_0, {l1b_up}}, {DType::Q8_0, {l1b_up}},
                                           {DType::Q5_K, {l1b_up}}, {DType::BF16, {l1b_up}}})
    for (const Shape& s : e.shapes)
      benchmark::RegisterBenchmark(("Pack/" + std::string(dtype_name(e.t)) + "/" + s.name).c_str(), bench_pack, e.t, s)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  for (int64_t n_tok : {1, 16, 512}) {
    const std::string name = "BF16/" + std::string(smol_up.name) + "/tok" + std::to_string(n_tok) + "/t1/vdpbf16ps";
    benchmark::RegisterBenchmark(name.c_str(), bench, DType::BF16, smol_up, n_tok, 1, false, true)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}

}  // namespace

int main(int argc, char** argv) { return stride::bench::benchmark_main(argc, argv, register_all); }
