// Token embedding lookup: dequantize selected rows of the embedding table.
#include <algorithm>
#include <cstring>

#include "core/fp16.h"
#include "kernels/dequantize.h"
#include "kernels/ops.h"
#include "kernels/ops_vec.h"

namespace stride {

namespace {

// True when every id names a row that lies wholly inside the table's bytes.
bool ids_in_range(const TensorView& table, const int32_t* ids, int64_t n) {
  if (!table.valid() || table.cols() <= 0) return false;
  const DTypeInfo* info = dtype_info(table.type);
  if (info == nullptr || !info->supported) return false;
  const int64_t row_bytes = table.row_bytes();
  if (row_bytes <= 0) return false;
  int64_t rows = table.rows();
  if (table.nbytes > 0) rows = std::min(rows, table.nbytes / row_bytes);
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= rows) return false;
  }
  return true;
}

void scale_row(float* y, int64_t n, float scale) {
  if (scale == 1.0f) return;
  int64_t i = 0;
#ifdef STRIDE_OPS_AVX2
  const __m256 vs = _mm256_set1_ps(scale);
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vs));
#endif
  for (; i < n; ++i) y[i] *= scale;
}

void f16_row_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(STRIDE_OPS_AVX2) && defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}

}  // namespace

bool embed_rows(const TensorView& table, const int32_t* ids, int64_t n, float scale, float* out) {
  if (!ids_in_range(table, ids, n)) return false;
  const int64_t cols = table.cols();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = table.row(ids[i]);
    float* dst = out + i * cols;  // [cols]
    switch (table.type) {
      case DType::F32:
        std::memcpy(dst, src, (size_t)cols * sizeof(float));
        break;
      case DType::F16:  // GGUF tensor data is 32-byte aligned, rows are whole halves
        f16_row_to_f32(reinterpret_cast<const uint16_t*>(src), dst, cols);
        break;
      default:
        dequantize_row(table.type, src, dst, cols);
        break;
    }
    scale_row(dst, cols, scale);
  }
  return true;
}

bool embed_rows_ref(const TensorView& table, const int32_t* ids, int64_t n, float scale,
                    float* out) {
  if (!ids_in_range(table, ids, n)) return false;
  const int64_t cols = table.cols();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = table.row(ids[i]);
    float* dst = out + i * cols;  // [cols]
    if (table.type == DType::F32 || table.type == DType::F16) {
      // Decoded here, independently of dequantize_row, so the fast path has a twin.
      for (int64_t c = 0; c < cols; ++c) {
        if (table.type == DType::F32) {
          std::memcpy(&dst[c], src + 4 * c, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, src + 2 * c, 2);
          dst[c] = fp16_to_fp32(h);
        }
      }
    } else {
      dequantize_row(table.type, src, dst, cols);
    }
    for (int64_t c = 0; c < cols; ++c) dst[c] *= scale;
  }
  return true;
}

}  // namespace stride
