// The keys-major score tile (attention_tiles_keys_major.h) that prefill pages
// go through: the transpose of f32 and f16 rows against a plain index loop, and the scores bit
// for bit against dot_rows on the same keys (what decode runs, so a token's
// logits do not depend on how many tokens shared its prefill call) and
// within rounding of the double reference. Key counts below, at and past the
// vector width, a partial last page, every row tile.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attention/attention_tiles.h"
#include "attention/attention_tiles_keys_major.h"
#include "attention/attention_tiles_ref.h"
#include "core/fp16.h"
#include "../kv/cache_test_util.h"

namespace stride {
namespace {

using testing_util::random_vec;

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(KeysMajorTile, TransposeKeepsEveryKeyAndZeroPadsTheRest) {
  for (int d : {8, 64, 128})
    for (int n : {1, 7, 8, 17, 32}) {
      SCOPED_TRACE("d=" + std::to_string(d) + " n=" + std::to_string(n));
      const auto k = random_vec((size_t)n * d, (uint32_t)(n * 7 + d));
      const int ld = tiles::keys_major_ld(32);
      std::vector<float> kt((size_t)d * ld, -1.f);
      tiles::transpose_keys<simd::F32Rows>(k.data(), n, d, kt.data(), ld);
      std::vector<uint16_t> k16(k.size());
      for (size_t i = 0; i < k.size(); ++i) k16[i] = fp32_to_fp16(k[i]);
      std::vector<float> kt16((size_t)d * ld, -1.f);
      tiles::transpose_keys<simd::F16Rows>(k16.data(), n, d, kt16.data(), ld);
      for (int i = 0; i < d; ++i)
        for (int t = 0; t < ld; ++t) {
          ASSERT_EQ(kt[(size_t)i * ld + t], t < n ? k[(size_t)t * d + i] : 0.f) << i << "," << t;
          ASSERT_EQ(kt16[(size_t)i * ld + t], t < n ? fp16_to_fp32(k16[(size_t)t * d + i]) : 0.f) << i << "," << t;
        }
    }
}

template <int R>
void check_rows(const std::vector<float>& q, const std::vector<float>& k, int n, int d) {
  const int ld = tiles::keys_major_ld(n);
  std::vector<float> kt((size_t)d * ld);
  tiles::transpose_keys<simd::F32Rows>(k.data(), n, d, kt.data(), ld);
  std::vector<float> got((size_t)R * n, -1.f), want((size_t)R * n), ref(n);
  const float* qr[R];
  float* sg[R];
  float* sw[R];
  for (int r = 0; r < R; ++r) {
    qr[r] = q.data() + (size_t)r * d;
    sg[r] = got.data() + (size_t)r * n;
    sw[r] = want.data() + (size_t)r * n;
  }
  tiles::dot_rows_keys_major<R>(qr, kt.data(), ld, n, d, sg);
  for (int r = 0; r < R; ++r) tiles::dot_rows<simd::F32Rows, 1>(qr + r, k.data(), nullptr, n, d, sw + r);
  for (int r = 0; r < R; ++r) {
    tiles::dot_rows_ref<simd::F32Rows>(qr[r], k.data(), nullptr, n, d, ref.data());
    for (int t = 0; t < n; ++t) {
      double mag = 0;
      for (int i = 0; i < d; ++i) mag += std::fabs((double)qr[r][i] * k[(size_t)t * d + i]);
      EXPECT_NEAR(sg[r][t], ref[t], 1e-6 * mag + 1e-7) << r << "," << t;
      EXPECT_TRUE(same_bits(sg[r][t], sw[r][t])) << "R=" << R << " row " << r << " key " << t;
    }
  }
}

TEST(KeysMajorTile, ScoresAreDotRowsBitForBit) {
  for (int d : {8, 64, 128, 256})
    for (int n : {1, 3, 7, 8, 9, 16, 17, 31, 32}) {
      SCOPED_TRACE("d=" + std::to_string(d) + " n=" + std::to_string(n));
      const auto q = random_vec((size_t)4 * d, (uint32_t)(d + 1));
      const auto k = random_vec((size_t)n * d, (uint32_t)(n * 13 + d));
      check_rows<4>(q, k, n, d);
      check_rows<2>(q, k, n, d);
      check_rows<1>(q, k, n, d);
    }
}

}  // namespace
}  // namespace stride
