// Today's machine limits for the roofline shares of bench/compare.py:
// peak f32 FMA FLOP/s (register-only FMA chains) and STREAM-triad bandwidth
// (a[i] = b[i] + s * c[i] over arrays far larger than the caches).
// The triad runs twice: over ordinary memory (4 KiB pages unless THP is
// "always": the figure the shares use) and over memory advised for huge
// pages, as the repacked weights are (core/huge_page_allocator.h).
// Usage: machine_peak [threads]   -> one JSON line.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/huge_page_allocator.h"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// 10 independent FMA chains per thread hide the 4-cycle FMA latency on 2 ports.
double fma_flops_one(int64_t iters) {
  __m256 a[10];
  for (int i = 0; i < 10; ++i) a[i] = _mm256_set1_ps(1.0f + 1e-7f * (float)i);
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  for (int64_t k = 0; k < iters; ++k)
    for (int i = 0; i < 10; ++i) a[i] = _mm256_fmadd_ps(a[i], m, c);
  float sink = 0;
  for (int i = 0; i < 10; ++i) sink += _mm256_cvtss_f32(a[i]);
  if (sink == 12345.f) std::printf(" ");  // keep the chains alive
  return (double)iters * 10 * 8 * 2;
}

double peak_fma(int threads) {
  const int64_t iters = 20'000'000;
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<std::thread> ts;
    const double t0 = now();
    for (int t = 0; t < threads; ++t) ts.emplace_back([&] { fma_flops_one(iters); });
    for (auto& t : ts) t.join();
    const double dt = now() - t0;
    best = std::max(best, threads * (double)iters * 160 / dt);
  }
  return best;
}

template <class Alloc = std::allocator<float>>
double triad(int threads) {
  const size_t n = 32u << 20;  // 3 arrays x 128 MiB
  std::vector<float, Alloc> a(n, 0.f), b(n, 1.f), c(n, 2.f);
  double best = 0;
  for (int rep = 0; rep < 6; ++rep) {
    std::vector<std::thread> ts;
    const double t0 = now();
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        const size_t lo = n * t / threads, hi = n * (t + 1) / threads;
        const __m256 s = _mm256_set1_ps(3.f);
        for (size_t i = lo; i < hi; i += 8)
          _mm256_storeu_ps(&a[i], _mm256_fmadd_ps(s, _mm256_loadu_ps(&c[i]), _mm256_loadu_ps(&b[i])));
      });
    for (auto& t : ts) t.join();
    const double dt = now() - t0;
    if (rep > 0) best = std::max(best, 3.0 * sizeof(float) * n / dt);  // rep 0 faults pages in
  }
  if (a[n / 2] != 7.f) std::fprintf(stderr, "triad check failed\n");
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  long threads = (long)std::thread::hardware_concurrency();
  char* end = nullptr;
  if (argc == 2) threads = std::strtol(argv[1], &end, 10);
  if (argc > 2 || (argc == 2 && (end == argv[1] || *end != '\0' || threads < 1 || threads > 1024))) {
    std::fprintf(stderr, "usage: machine_peak [threads]  (threads: 1-1024)\n");
    return 2;
  }
  const double f1 = peak_fma(1), fn = peak_fma((int)threads);
  const double b1 = triad(1), bn = triad((int)threads);
  using Huge = stride::HugePageAllocator<float>;
  const double h1 = triad<Huge>(1), hn = triad<Huge>((int)threads);
  std::printf("{\"threads\": %d, \"fma_gflops_1t\": %.1f, \"fma_gflops\": %.1f, "
              "\"triad_gbs_1t\": %.2f, \"triad_gbs\": %.2f, \"triad_huge_gbs_1t\": %.2f, \"triad_huge_gbs\": %.2f}\n",
              (int)threads, f1 / 1e9, fn / 1e9, b1 / 1e9, bn / 1e9, h1 / 1e9, hn / 1e9);
  return 0;
}
