#pragma once
// The log-sum-exp of a page's attention logits for several query rows,
// reading the keys in the pool's storage (f16, f32, int8 times its scale):
// the exact score of one page that the second stage of estimate=rerank
// (attention/topk_rerank.h) ranks shortlisted pages by. The fast form is a
// kernel variant per CPU path (isa/page_logsumexp.cpp, on the attention
// kernel's dot tiles), registered like attention_kernel_paths.h; the scalar
// form is the reference it is tested against.
#include <cstdint>

#include "core/cpu_features.h"
#include "kv/store/kv_pool.h"

namespace stride {

// out[r] = log sum_{t < n} exp(scale * rows[r] . k_t) over the first n keys
// (1 <= n <= page_size) of kv head `head` in pool page `page`.
//   rows: n_rows pointers to [head_dim_k] queries (RoPE applied)
//   work: [4 * page_size] floats the call may overwrite
//   out:  [n_rows]
using PageLogsumexpFn = void (*)(const KvPool& pool, int32_t page, int head, int n, const float* const* rows,
                                 int n_rows, float scale, float* work, float* out);

// The variant of path p (which the CPU must run).
PageLogsumexpFn page_logsumexp_for(CpuPath p);
// The active path's variant.
void page_logsumexp(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                    float scale, float* work, float* out);
// Plain loops in double, rounded to float at the end (work unused).
void page_logsumexp_ref(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                        float scale, float* work, float* out);

namespace isa::avx2 {
void page_logsumexp(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                    float scale, float* work, float* out);
}
namespace isa::avx512 {
void page_logsumexp(const KvPool& pool, int32_t page, int head, int n, const float* const* rows, int n_rows,
                    float scale, float* work, float* out);
}

}  // namespace stride
