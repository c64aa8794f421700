// The fused paged attention kernel's table of variants: the CPU path in use
// (core/cpu_features.h) runs isa/attention_kernel.cpp as compiled for it.
#include "attention/attention_kernel.h"

#include <algorithm>
#include <cmath>

#include "attention/attention_kernel_paths.h"
#include "core/cpu_features.h"

namespace stride {

void softmax_merge(SoftmaxPartial& a, float* o, const SoftmaxPartial& b, const float* o2, int n) {
  if (b.m == -INFINITY) return;
  if (a.m == -INFINITY) {
    a = b;
    std::copy(o2, o2 + n, o);
    return;
  }
  const float m = std::max(a.m, b.m);
  const float ca = std::exp(a.m - m), cb = std::exp(b.m - m);
  for (int t = 0; t < n; ++t) o[t] = o[t] * ca + o2[t] * cb;
  a.d = a.d * ca + b.d * cb;
  a.m = m;
}

AttentionPagedFn attention_paged_for(CpuPath p) {
  switch (p) {
    case CpuPath::Amx:
    case CpuPath::Avx512: return &isa::avx512::attention_paged;
    case CpuPath::Avx2: break;
  }
  return &isa::avx2::attention_paged;
}

Status attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                       const AttentionParams& p, const float* q, float* out, ThreadPool& threads) {
  return attention_paged_for(active_cpu_path())(pool, plan, policy, p, q, out, nullptr, threads);
}

Status attention_paged_partial(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                               const AttentionParams& p, const float* q, const AttentionPartialOut& out,
                               ThreadPool& threads) {
  return attention_paged_for(active_cpu_path())(pool, plan, policy, p, q, nullptr, &out, threads);
}

}  // namespace stride
