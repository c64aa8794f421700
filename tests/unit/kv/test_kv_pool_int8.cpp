// int8 KV pages: the byte count, and the store -> load round trip against the
// definition (symmetric per token and head, scale = max|x| / 127, round to
// nearest), whose error is at most max|x| / 254 per element.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kv/store/kv_pool.h"
#include "kv/store/kv_storage.h"

namespace stride {

TEST(KvPoolInt8, BytesPerPageCountScales) {
  KvPoolShape shape{2, 12, 16, 4};
  shape.storage = KvStorage::Int8;
  // 4 tokens x 2 heads x (12 + 16) int8, plus a K and a V f32 scale per token and head.
  EXPECT_EQ(shape.bytes_per_page(), 4 * 2 * (12 + 16) * 1 + 4 * 2 * 2 * 4);
  shape.storage = KvStorage::F32;
  EXPECT_EQ(shape.bytes_per_page(), 4 * 2 * (12 + 16) * 4);
  shape.storage = KvStorage::F16;
  EXPECT_EQ(shape.bytes_per_page(), 4 * 2 * (12 + 16) * 2);
}

TEST(KvPoolInt8, StoreLoadRoundTripWithinHalfAStep) {
  constexpr int kHeads = 3, kDk = 20, kDv = 64, kPage = 8, kTokens = 7;
  KvPoolShape shape{kHeads, kDk, kDv, kPage};
  shape.storage = KvStorage::Int8;
  auto pool = KvPool::create(shape, 4);
  ASSERT_TRUE(pool.ok()) << pool.status().to_string();
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> k((size_t)kTokens * kHeads * kDk), v((size_t)kTokens * kHeads * kDv);
  for (size_t i = 0; i < k.size(); ++i) k[i] = nd(rng) * (1 + (float)(i / kDk % 5) * 10);
  for (float& x : v) x = nd(rng) * 0.01f;
  // Token 2, head 1 all zero; token 4, head 0 one outlier.
  for (int d = 0; d < kDk; ++d) k[(2 * kHeads + 1) * kDk + d] = 0.f;
  for (int d = 0; d < kDv; ++d) v[(2 * kHeads + 1) * kDv + d] = 0.f;
  k[(4 * kHeads + 0) * kDk + 3] = 900.f;
  (*pool)->store(2, 1, kTokens, k.data(), kHeads * kDk, v.data(), kHeads * kDv, 500);

  auto check = [&](const std::vector<float>& x, int dim, int t, int h, const int8_t* q,
                   float scale) {
    const float* row = x.data() + ((size_t)t * kHeads + h) * dim;
    float amax = 0.f;
    for (int d = 0; d < dim; ++d) amax = std::max(amax, std::fabs(row[d]));
    EXPECT_EQ(scale, amax / 127.f);
    for (int d = 0; d < dim; ++d) {
      const float want_q = amax > 0 ? std::nearbyint(row[d] / (amax / 127.f)) : 0.f;
      EXPECT_EQ((float)q[d], want_q) << "t " << t << " h " << h << " d " << d;
      EXPECT_LE(std::fabs(row[d] - q[d] * scale), amax / 254.f * (1 + 1e-6f));
    }
  };
  for (int t = 0; t < kTokens; ++t) {
    EXPECT_EQ((*pool)->positions(2)[1 + t], 500 + t);
    for (int h = 0; h < kHeads; ++h) {
      check(k, kDk, t, h, (*pool)->k8(2, h) + (1 + t) * kDk, (*pool)->k_scale(2, h)[1 + t]);
      check(v, kDv, t, h, (*pool)->v8(2, h) + (1 + t) * kDv, (*pool)->v_scale(2, h)[1 + t]);
    }
  }
  EXPECT_EQ((*pool)->k_scale(2, 1)[1 + 2], 0.f);  // the zero row
}

TEST(KvPoolInt8, QuantizeRowSaturatesAtTheMaximumAndRoundsToNearest) {
  const float x[6] = {-127.f, 127.f, 63.5f, 0.f, 62.5f, -3.4f};  // scale exactly 1
  int8_t q[6];
  EXPECT_EQ(quantize_row_int8(x, 6, q), 1.f);
  const int want[6] = {-127, 127, 64, 0, 62, -3};  // ties go to the even neighbour
  for (int i = 0; i < 6; ++i) EXPECT_EQ(q[i], want[i]) << i;
  const float zeros[3] = {0.f, -0.f, 0.f};
  EXPECT_EQ(quantize_row_int8(zeros, 3, q), 0.f);
  EXPECT_EQ(q[0] | q[1] | q[2], 0);
}

TEST(KvStorage, ParsesNamesAndRejectsOthers) {
  for (KvStorage s : {KvStorage::F16, KvStorage::F32, KvStorage::Int8}) {
    auto p = parse_kv_storage(kv_storage_name(s));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(*p, s);
  }
  for (const char* bad : {"", "int4", "F16", "q8_0"}) {
    auto p = parse_kv_storage(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("f16, f32 or int8"), std::string::npos);
  }
}

}  // namespace stride
