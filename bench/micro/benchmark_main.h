#pragma once
// The main of the Google Benchmark micro-benchmarks that take STRIDE_CPU:
// picks the kernel path, registers the run-time benchmarks, runs them.
#include <benchmark/benchmark.h>

#include "cpu_path_env.h"

namespace stride::bench {

// register_all (null: none) adds the benchmarks named at run time.
inline int benchmark_main(int argc, char** argv, void (*register_all)()) {
  if (!select_cpu_path_from_env()) return 1;
  if (register_all) register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace stride::bench
