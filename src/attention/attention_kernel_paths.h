#pragma once
// attention_paged as compiled for each CPU target (isa/attention_kernel.cpp,
// a kernel variant in namespace stride::isa::<target>), registered by path
// like the kernels' table (kernels/kernel_paths.h), which cannot hold it:
// this kernel reads KV pages, a layer above kernels/.
#include "attention/attention_kernel.h"
#include "core/cpu_features.h"

namespace stride {
using AttentionPagedFn = Status (*)(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                                    const AttentionParams& p, const float* q, float* out,
                                    const AttentionPartialOut* partial, ThreadPool& threads);
// The variant of path p (which the CPU must run); AMX adds nothing to attention.
// It writes normalised rows to out, or with partial the unnormalised states.
AttentionPagedFn attention_paged_for(CpuPath p);

namespace isa::avx2 {
Status attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                       const AttentionParams& p, const float* q, float* out,
                       const AttentionPartialOut* partial, ThreadPool& threads);
}
namespace isa::avx512 {
Status attention_paged(const KvPool& pool, const AttentionPlan& plan, const PolicySpec& policy,
                       const AttentionParams& p, const float* q, float* out,
                       const AttentionPartialOut* partial, ThreadPool& threads);
}

}  // namespace stride
