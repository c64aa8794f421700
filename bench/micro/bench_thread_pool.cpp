// Threading overhead of one empty step: a pool.run / run_chunks whose body does
// nothing, i.e. the cost of handing out and collecting one op's work. Decode
// issues a few hundred such hand-offs per token.
#include <benchmark/benchmark.h>

#include "core/thread_pool.h"

namespace {

void BM_EmptyRun(benchmark::State& state) {
  stride::ThreadPool pool((int)state.range(0));
  for (auto _ : state) pool.run([](int, int) {});
}
BENCHMARK(BM_EmptyRun)->Arg(1)->Arg(2)->UseRealTime();

void BM_EmptyChunks8(benchmark::State& state) {
  stride::ThreadPool pool((int)state.range(0));
  for (auto _ : state) pool.run_chunks(8, [](int, int) {});
}
BENCHMARK(BM_EmptyChunks8)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
