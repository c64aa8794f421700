#include "kv/store/kv_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/fp16.h"

namespace stride {

TEST(KvPool, StoresHeadMajorF16AndPositions) {
  const KvPoolShape shape{2, 12, 16, 4};  // 2 kv heads, dk 12 (vector + tail), dv 16, 4 tokens per page
  EXPECT_EQ(shape.bytes_per_page(), 4 * 2 * (12 + 16) * 2);
  auto pool = KvPool::create(shape, 3);
  ASSERT_TRUE(pool.ok());
  // k: [3 tokens, 2 heads, 12], v: [3 tokens, 2 heads, 16]
  std::vector<float> k(3 * 2 * 12), v(3 * 2 * 16);
  for (size_t i = 0; i < k.size(); ++i) k[i] = 0.1f * (float)i - 1.f;
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.01f * (float)i;
  (*pool)->store(1, 1, 3, k.data(), 24, v.data(), 32, 101);
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ((*pool)->positions(1)[1 + t], 101 + t);
    for (int h = 0; h < 2; ++h) {
      for (int d = 0; d < 12; ++d)
        EXPECT_EQ((*pool)->k(1, h)[(1 + t) * 12 + d], fp32_to_fp16(k[(t * 2 + h) * 12 + d]));
      for (int d = 0; d < 16; ++d)
        EXPECT_EQ((*pool)->v(1, h)[(1 + t) * 16 + d], fp32_to_fp16(v[(t * 2 + h) * 16 + d]));
    }
  }
}

TEST(KvPool, RejectsBadShapes) {
  EXPECT_FALSE(KvPool::create(KvPoolShape{0, 8, 8, 4}, 1).ok());
  EXPECT_FALSE(KvPool::create(KvPoolShape{1, 8, 8, 4}, 0).ok());
}

}  // namespace stride
