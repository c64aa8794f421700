#include "kv/kv_pool.h"

#include <immintrin.h>

#include <cstring>
#include <new>
#include <string>

#include "core/fp16.h"

namespace stride {

namespace {

// f32 -> f16 (round to nearest even), F16C for whole vectors.
void to_f16(const float* src, uint16_t* dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128((__m128i*)(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = fp32_to_fp16(src[i]);
}

}  // namespace

Expected<std::unique_ptr<KvPool>> KvPool::create(const KvPoolShape& shape, int32_t n_pages) {
  if (shape.n_kv_heads <= 0 || shape.head_dim_k <= 0 || shape.head_dim_v <= 0 ||
      shape.page_size <= 0 || n_pages <= 0)
    return InvalidArgument("KvPool: heads, head dims, page size and page count must be positive");
  auto pool = std::make_unique<KvPool>(Private{}, shape, n_pages);
  const int64_t per_head_tokens = (int64_t)n_pages * shape.n_kv_heads * shape.page_size;
  try {
    if (shape.f32) {
      pool->k32_ = std::make_unique_for_overwrite<float[]>(per_head_tokens * shape.head_dim_k);
      pool->v32_ = std::make_unique_for_overwrite<float[]>(per_head_tokens * shape.head_dim_v);
    } else {
      pool->k_ = std::make_unique_for_overwrite<uint16_t[]>(per_head_tokens * shape.head_dim_k);
      pool->v_ = std::make_unique_for_overwrite<uint16_t[]>(per_head_tokens * shape.head_dim_v);
    }
    pool->pos_ = std::make_unique_for_overwrite<int32_t[]>((int64_t)n_pages * shape.page_size);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("KvPool: cannot allocate " + std::to_string(n_pages) + " pages of " +
                             std::to_string(shape.bytes_per_page()) + " bytes");
  }
  return pool;
}

void KvPool::store(int32_t page, int slot, int n, const float* k, int64_t k_row, const float* v,
                   int64_t v_row, int64_t first_pos) {
  const int dk = shape_.head_dim_k, dv = shape_.head_dim_v;
  for (int h = 0; h < shape_.n_kv_heads && shape_.f32; ++h) {
    float* kd = k32_.get() + k_offset(page, h) + (int64_t)slot * dk;
    float* vd = v32_.get() + v_offset(page, h) + (int64_t)slot * dv;
    for (int t = 0; t < n; ++t) {
      std::memcpy(kd + (int64_t)t * dk, k + t * k_row + (int64_t)h * dk, sizeof(float) * dk);
      std::memcpy(vd + (int64_t)t * dv, v + t * v_row + (int64_t)h * dv, sizeof(float) * dv);
    }
  }
  for (int h = 0; h < shape_.n_kv_heads && !shape_.f32; ++h) {
    uint16_t* kd = this->k(page, h) + (int64_t)slot * dk;
    uint16_t* vd = this->v(page, h) + (int64_t)slot * dv;
    for (int t = 0; t < n; ++t) {
      to_f16(k + t * k_row + (int64_t)h * dk, kd + (int64_t)t * dk, dk);
      to_f16(v + t * v_row + (int64_t)h * dv, vd + (int64_t)t * dv, dv);
    }
  }
  int32_t* pos = positions(page) + slot;
  for (int t = 0; t < n; ++t) pos[t] = (int32_t)(first_pos + t);
}

}  // namespace stride
