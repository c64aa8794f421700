// Page images: saving a page and loading it into another page reproduces
// every stored byte (keys, values, int8 scales, positions), for each storage.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kv/store/kv_pool.h"

namespace stride {
namespace {

void fill_page(KvPool& pool, int32_t page, uint32_t seed) {
  const KvPoolShape& s = pool.shape();
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> k((size_t)s.page_size * s.n_kv_heads * s.head_dim_k);
  std::vector<float> v((size_t)s.page_size * s.n_kv_heads * s.head_dim_v);
  for (float& x : k) x = nd(rng);
  for (float& x : v) x = nd(rng);
  pool.store(page, 0, s.page_size, k.data(), (int64_t)s.n_kv_heads * s.head_dim_k, v.data(),
             (int64_t)s.n_kv_heads * s.head_dim_v, 1000 + seed);
}

std::vector<uint8_t> image_of(const KvPool& pool, int32_t page) {
  std::vector<uint8_t> img((size_t)pool.page_image_bytes());
  pool.save_page(page, img);
  return img;
}

class KvPageImage : public testing::TestWithParam<KvStorage> {};

TEST_P(KvPageImage, RoundTripIsBitExact) {
  const KvPoolShape shape{3, 20, 12, 8, GetParam()};
  auto pool = KvPool::create(shape, 4);
  ASSERT_TRUE(pool.ok());
  fill_page(**pool, 1, 5);
  fill_page(**pool, 2, 9);
  const std::vector<uint8_t> saved = image_of(**pool, 1);
  EXPECT_EQ((int64_t)saved.size(), shape.bytes_per_page() + shape.page_size * 4);
  EXPECT_NE(saved, image_of(**pool, 2));
  (*pool)->load_page(3, saved);
  EXPECT_EQ(image_of(**pool, 3), saved);
  // Element views agree too, not only the image.
  for (int t = 0; t < shape.page_size; ++t) EXPECT_EQ((*pool)->positions(3)[t], 1005 + t);
  if (GetParam() == KvStorage::F16)
    for (int h = 0; h < 3; ++h)
      for (int i = 0; i < shape.page_size * shape.head_dim_k; ++i) EXPECT_EQ((*pool)->k(3, h)[i], (*pool)->k(1, h)[i]);
  if (GetParam() == KvStorage::Int8)
    for (int h = 0; h < 3; ++h)
      for (int t = 0; t < shape.page_size; ++t) EXPECT_EQ((*pool)->v_scale(3, h)[t], (*pool)->v_scale(1, h)[t]);
}

INSTANTIATE_TEST_SUITE_P(Storage, KvPageImage, testing::Values(KvStorage::F16, KvStorage::F32, KvStorage::Int8));

}  // namespace
}  // namespace stride
