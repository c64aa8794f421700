#pragma once
// The page log-sum-exp of the second stage of estimate=rerank on the int8
// copy of a page's keys (kv/store/page_key_codes.h), with the step's queries
// quantized once (Int8Rows): integer dot products (AVX-512 VNNI, or AVX2's
// multiply-add of bytes), then one float multiply per logit by the two
// scales. A kernel variant per CPU path (isa/page_logsumexp_int8.cpp); the
// scalar form in double is the reference it is tested against.
#include <cstdint>
#include <vector>

#include "core/cpu_features.h"
#include "kv/store/page_key_codes.h"

namespace stride {

// Query rows quantized like the keys (symmetric per row, max|q| / 127),
// padded with zero rows to a multiple of kInt8RowTile.
inline constexpr int kInt8RowTile = 8;
struct Int8Rows {
  int n_rows = 0, dim = 0;
  std::vector<int8_t> codes;     // [padded rows, dim]
  std::vector<float> scales;     // [padded rows]
  std::vector<int32_t> biased;   // [padded rows, dim / 4] 4 codes a word, sign bits flipped (code + 128): VNNI's unsigned operand
  void quantize(const float* const* rows, int n, int head_dim);
};

// The log-sum-exp of each row over the integer codes of kv head `head` in
// page `page` (encoded, full), in two parts so that callers adding pages up
// take no log:
//   l_rt = scale * qs_r * ks_t * (q_r . k_t), t < page_size
//   top[r] = max_t l_rt,  sum[r] = sum_t exp(l_rt - top[r])  (in [1, page_size])
//   log-sum-exp = top[r] + log(sum[r])
//   work: [kInt8RowTile * codes.padded_page()] floats the call may overwrite
//   top, sum: [rows.n_rows]
using PageLogsumexpInt8Fn = void (*)(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows,
                                     float scale, float* work, float* top, float* sum);

PageLogsumexpInt8Fn page_logsumexp_int8_for(CpuPath p);
void page_logsumexp_int8(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows, float scale,
                         float* work, float* top, float* sum);
// Plain loops in double over the codes as defined, rounded to float at the end.
void page_logsumexp_int8_ref(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows,
                             float scale, float* work, float* top, float* sum);

namespace isa::avx2 {
void page_logsumexp_int8(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows, float scale,
                         float* work, float* top, float* sum);
}
namespace isa::avx512 {
void page_logsumexp_int8(const PageKeyCodes& codes, int32_t page, int head, const Int8Rows& rows, float scale,
                         float* work, float* top, float* sum);
}

}  // namespace stride
