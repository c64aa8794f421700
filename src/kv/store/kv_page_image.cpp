// Page images: one page's bytes laid end to end, for the offload tier.
#include <cassert>
#include <cstring>

#include "kv/store/kv_pool.h"

namespace stride {

namespace {
constexpr int kParts = 5;  // K, V, K scales, V scales, positions
}  // namespace

std::span<uint8_t> KvPool::page_parts(int32_t page, int part) const {
  const int64_t heads_tokens = (int64_t)shape_.n_kv_heads * shape_.page_size;
  const int64_t nk = heads_tokens * shape_.head_dim_k, nv = heads_tokens * shape_.head_dim_v;
  auto bytes = [](const auto* base, int64_t offset, int64_t n) {
    if (!base) return std::span<uint8_t>();
    return std::span<uint8_t>((uint8_t*)(base + offset), (size_t)n * sizeof(*base));
  };
  switch (part) {
    case 0:
      return shape_.storage == KvStorage::F32 ? bytes(k32_.get(), k_offset(page, 0), nk)
             : shape_.storage == KvStorage::F16 ? bytes(k_.get(), k_offset(page, 0), nk)
                                                : bytes(k8_.get(), k_offset(page, 0), nk);
    case 1:
      return shape_.storage == KvStorage::F32 ? bytes(v32_.get(), v_offset(page, 0), nv)
             : shape_.storage == KvStorage::F16 ? bytes(v_.get(), v_offset(page, 0), nv)
                                                : bytes(v8_.get(), v_offset(page, 0), nv);
    case 2: return shape_.storage == KvStorage::Int8 ? bytes(k_scale_.get(), scale_offset(page, 0), heads_tokens) : std::span<uint8_t>();
    case 3: return shape_.storage == KvStorage::Int8 ? bytes(v_scale_.get(), scale_offset(page, 0), heads_tokens) : std::span<uint8_t>();
    default: return bytes(pos_.get(), (int64_t)page * shape_.page_size, shape_.page_size);
  }
}

void KvPool::save_page(int32_t page, std::span<uint8_t> image) const {
  assert((int64_t)image.size() == page_image_bytes());
  size_t at = 0;
  for (int part = 0; part < kParts; ++part) {
    const std::span<uint8_t> src = page_parts(page, part);
    if (src.empty()) continue;  // a part this storage does not keep (null base)
    std::memcpy(image.data() + at, src.data(), src.size());
    at += src.size();
  }
  assert(at == image.size());
}

void KvPool::load_page(int32_t page, std::span<const uint8_t> image) {
  assert((int64_t)image.size() == page_image_bytes());
  size_t at = 0;
  for (int part = 0; part < kParts; ++part) {
    const std::span<uint8_t> dst = page_parts(page, part);
    if (dst.empty()) continue;
    std::memcpy(dst.data(), image.data() + at, dst.size());
    at += dst.size();
  }
  assert(at == image.size());
  ++version_[page];
}

}  // namespace stride
