// The decode GEMV's own ceiling, apart from the engine: one token through
// repacked weights (matmul_packed, n_tok = 1) per weight type at the
// Llama-3.2-1B shapes (and the Llama-3.1-8B Q4_0 FFN's), 1 and 2 threads. Each matrix is copied into a ring
// larger than twice the L3 cache, so every pass streams from DRAM as decode
// does. Every iteration first reads the same ring bytes with a plain summing
// loop (the read ceiling), then runs the GEMVs, so both share the machine's
// load at that moment. Counters:
//   gemv_GBs, read_GBs   weight bytes / wall time
//   share                gemv_GBs / read_GBs
//   gemv_GBs_cpu, read_GBs_cpu, share_cpu   the same over process CPU time
//     x threads: the rate while the threads run (on a loaded machine)
// The ring is on huge pages, as the engine's repacked weights are
// (core/huge_page_allocator.h); the ".../4k" runs put it on 4 KiB pages
// (MADV_NOHUGEPAGE before the copy), as it was before.
//   STRIDE_CPU=avx512 ./build/bench_decode_gemv --benchmark_filter='Q4_K'
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <sys/mman.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "benchmark_main.h"
#include "random_weights.h"
#include "core/thread_pool.h"
#include "kernels/packed_matrix.h"
#include "model/op_profile.h"

namespace {

using namespace stride;

constexpr int64_t kRingBytes = 640ll << 20;  // over twice the 300 MiB L3 of the Xeon measured

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sums bytes [0, n) of p as 64-bit words: 256-bit loads where the CPU has
// AVX2 (as many load bytes per cycle as the GEMV's), else 8 scalar chains.
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint8_t* p, int64_t n) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  int64_t i = 0;
  for (; i + 128 <= n; i += 128)
    for (int k = 0; k < 4; ++k)
      acc[k] = _mm256_add_epi64(acc[k], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32 * k)));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes),
                     _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3])));
  uint64_t s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
  for (; i < n; ++i) s += p[i];
  return s;
}

uint64_t sum_words(const uint8_t* p, int64_t n) {
  if (__builtin_cpu_supports("avx2")) return sum_words_avx2(p, n);
  uint64_t s[8] = {0};
  const int64_t words = n / 8;
  const uint64_t* w = reinterpret_cast<const uint64_t*>(p);
  int64_t i = 0;
  for (; i + 8 <= words; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += w[i + k];
  for (i *= 8; i < n; ++i) s[0] += p[i];
  return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

// Reads every byte of the ring, split across the pool as the GEMV splits rows.
uint64_t read_ring(const std::vector<PackedMatrix>& ring, ThreadPool& pool) {
  std::vector<uint64_t> sums((size_t)pool.size() * 8, 0);  // one cache line per worker
  for (const PackedMatrix& m : ring) {
    const int64_t n = (int64_t)m.data.size();
    pool.run_chunks(4 * pool.size(), [&](int c, int nc, int worker) {
      const int64_t b = n * c / nc / 64 * 64, e = c + 1 == nc ? n : n * (c + 1) / nc / 64 * 64;
      sums[(size_t)worker * 8] += sum_words(m.data.data() + b, e - b);
    });
  }
  uint64_t s = 0;
  for (uint64_t v : sums) s += v;
  return s;
}

// copies of m; small_pages: on 4 KiB pages (advised before the bytes are written).
std::vector<PackedMatrix> make_ring(const PackedMatrix& m, int copies, bool small_pages) {
  std::vector<PackedMatrix> ring((size_t)copies);
  for (PackedMatrix& r : ring) {
    r.type = m.type;
    r.n_in = m.n_in;
    r.n_out = m.n_out;
    r.n_groups = m.n_groups;
    r.group_bytes = m.group_bytes;
    r.data.resize(m.data.size());
    if (small_pages && r.data.size() >= kHugePageMinBytes) madvise(r.data.data(), r.data.size(), MADV_NOHUGEPAGE);
    std::memcpy(r.data.data(), m.data.data(), m.data.size());
  }
  return ring;
}

void decode_gemv(benchmark::State& state, DType t, bench::Shape shape, int threads, bool small_pages) {
  const auto bytes = bench::random_weight(t, shape.n_in, shape.n_out);
  auto packed = pack_matrix(bench::weight_view(t, shape, bytes));
  if (!packed.ok()) {
    state.SkipWithError(packed.status().message().c_str());
    return;
  }
  const int64_t mat_bytes = (int64_t)packed.value().data.size();
  const int copies = (int)std::max<int64_t>(2, (kRingBytes + mat_bytes - 1) / mat_bytes);
  const std::vector<PackedMatrix> ring = make_ring(packed.value(), copies, small_pages);
  std::vector<float> x((size_t)shape.n_in), y((size_t)shape.n_out);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)((int)(i * 2654435761u % 2001) - 1000) * 1e-3f;
  ThreadPool pool(threads);
  double gemv_wall = 0, gemv_cpu = 0, read_wall = 0, read_cpu = 0;
  uint64_t sink = 0;
  for (auto _ : state) {
    double w0 = wall_seconds(), c0 = process_cpu_seconds();
    sink += read_ring(ring, pool);
    double w1 = wall_seconds(), c1 = process_cpu_seconds();
    read_wall += w1 - w0;
    read_cpu += c1 - c0;
    for (const PackedMatrix& m : ring) matmul_packed(m, x.data(), y.data(), 1, pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    gemv_wall += wall_seconds() - w1;
    gemv_cpu += process_cpu_seconds() - c1;
  }
  benchmark::DoNotOptimize(sink);
  const double gb = 1e-9 * (double)mat_bytes * copies * (double)state.iterations();
  state.counters["gemv_GBs"] = gb / gemv_wall;
  state.counters["read_GBs"] = gb / read_wall;
  state.counters["share"] = read_wall / gemv_wall;
  state.counters["gemv_GBs_cpu"] = gb * threads / gemv_cpu;
  state.counters["read_GBs_cpu"] = gb * threads / read_cpu;
  state.counters["share_cpu"] = read_cpu / gemv_cpu;
}

void register_all() {
  // Llama-3.2-1B Q4_K_M: attn/ffn_gate/up Q4_K [2048 -> 8192], ffn_down Q6_K
  // on some layers [8192 -> 2048], the tied output head Q6_K [2048 -> 128256];
  // Q8_0, F16 and BF16 at the gate/up shape for the other files' types.
  const bench::Shape up{"2048x8192", 2048, 8192}, down{"8192x2048", 8192, 2048};
  const bench::Shape head{"2048x128256", 2048, 128256};
  // Llama-3.1-8B Q4_0: ffn_gate/up [4096 -> 14336], ffn_down [14336 -> 4096].
  const bench::Shape up8b{"4096x14336", 4096, 14336}, down8b{"14336x4096", 14336, 4096};
  struct Entry {
    DType t;
    bench::Shape shape;
  };
  const Entry entries[] = {{DType::Q4_K, up},   {DType::Q4_K, down}, {DType::Q6_K, down},
                           {DType::Q6_K, head}, {DType::Q8_0, up},   {DType::F16, up},
                           {DType::BF16, up},   {DType::Q4_0, up8b}, {DType::Q4_0, down8b},
                           {DType::Q4_K, up8b}};
  for (const Entry& e : entries)
    for (int threads : {1, 2})
      for (bool small_pages : {false, true}) {
        const std::string name = std::string(dtype_name(e.t)) + "/" + e.shape.name + "/t" +
                                 std::to_string(threads) + (small_pages ? "/4k" : "");
        benchmark::RegisterBenchmark(name.c_str(), decode_gemv, e.t, e.shape, threads, small_pages)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(1.0);
      }
}

}  // namespace

int main(int argc, char** argv) { return stride::bench::benchmark_main(argc, argv, register_all); }
