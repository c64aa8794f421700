#include "kv/store/kv_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
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

float quantize_row_int8(const float* x, int n, int8_t* q) {
  float amax = 0.f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float scale = amax / 127.f;
  if (scale == 0.f) {
    std::memset(q, 0, (size_t)n);
    return 0.f;
  }
  // Division rather than a reciprocal: round(x / scale) exactly as defined.
  for (int i = 0; i < n; ++i)
    q[i] = (int8_t)std::clamp(std::nearbyint(x[i] / scale), -127.f, 127.f);
  return scale;
}

Expected<std::unique_ptr<KvPool>> KvPool::create(const KvPoolShape& shape, int32_t n_pages) {
  if (shape.n_kv_heads <= 0 || shape.head_dim_k <= 0 || shape.head_dim_v <= 0 ||
      shape.page_size <= 0 || n_pages <= 0)
    return InvalidArgument("KvPool: heads, head dims, page size and page count must be positive");
  auto pool = std::make_unique<KvPool>(Private{}, shape, n_pages);
  const int64_t per_head_tokens = (int64_t)n_pages * shape.n_kv_heads * shape.page_size;
  const int64_t nk = per_head_tokens * shape.head_dim_k, nv = per_head_tokens * shape.head_dim_v;
  try {
    switch (shape.storage) {
      case KvStorage::F32:
        pool->k32_ = std::make_unique_for_overwrite<float[]>(nk);
        pool->v32_ = std::make_unique_for_overwrite<float[]>(nv);
        break;
      case KvStorage::F16:
        pool->k_ = std::make_unique_for_overwrite<uint16_t[]>(nk);
        pool->v_ = std::make_unique_for_overwrite<uint16_t[]>(nv);
        break;
      case KvStorage::Int8:
        pool->k8_ = std::make_unique_for_overwrite<int8_t[]>(nk);
        pool->v8_ = std::make_unique_for_overwrite<int8_t[]>(nv);
        pool->k_scale_ = std::make_unique_for_overwrite<float[]>(per_head_tokens);
        pool->v_scale_ = std::make_unique_for_overwrite<float[]>(per_head_tokens);
        break;
    }
    pool->pos_ = std::make_unique_for_overwrite<int32_t[]>((int64_t)n_pages * shape.page_size);
    pool->version_ = std::make_unique<uint32_t[]>((size_t)n_pages);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("KvPool: cannot allocate " + std::to_string(n_pages) + " pages of " +
                             std::to_string(shape.bytes_per_page()) + " bytes");
  }
  return pool;
}

void KvPool::store(int32_t page, int slot, int n, const float* k, int64_t k_row, const float* v,
                   int64_t v_row, int64_t first_pos) {
  const int dk = shape_.head_dim_k, dv = shape_.head_dim_v;
  for (int h = 0; h < shape_.n_kv_heads; ++h) {
    const int64_t kd = k_offset(page, h) + (int64_t)slot * dk;
    const int64_t vd = v_offset(page, h) + (int64_t)slot * dv;
    const int64_t sd = scale_offset(page, h) + slot;
    for (int t = 0; t < n; ++t) {
      const float* ks = k + t * k_row + (int64_t)h * dk;
      const float* vs = v + t * v_row + (int64_t)h * dv;
      const int64_t ko = kd + (int64_t)t * dk, vo = vd + (int64_t)t * dv;
      switch (shape_.storage) {
        case KvStorage::F32:
          std::memcpy(k32_.get() + ko, ks, sizeof(float) * dk);
          std::memcpy(v32_.get() + vo, vs, sizeof(float) * dv);
          break;
        case KvStorage::F16:
          to_f16(ks, k_.get() + ko, dk);
          to_f16(vs, v_.get() + vo, dv);
          break;
        case KvStorage::Int8:
          k_scale_[sd + t] = quantize_row_int8(ks, dk, k8_.get() + ko);
          v_scale_[sd + t] = quantize_row_int8(vs, dv, v8_.get() + vo);
          break;
      }
    }
  }
  int32_t* pos = positions(page) + slot;
  for (int t = 0; t < n; ++t) pos[t] = (int32_t)(first_pos + t);
  ++version_[page];
}

}  // namespace stride
