#pragma once
// The micro-benchmarks' edge: STRIDE_CPU=avx2|avx512|amx picks the kernel
// path as it does for `stride` (cli/main.cpp), read once before any kernel.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/cpu_features.h"

namespace stride::bench {

// False (after saying why) when STRIDE_CPU names a path this CPU cannot run.
inline bool select_cpu_path_from_env() {
  const char* env = std::getenv("STRIDE_CPU");
  auto path = resolve_cpu_path(env ? std::string(env) : std::string());
  if (!path.ok()) std::fprintf(stderr, "%s\n", path.status().message().c_str());
  return path.ok();
}

}  // namespace stride::bench
