// The int8 copy of a page's keys (kv/store/page_key_codes.h) against its
// definition: symmetric per token and kv head, scale = max|k| / 127, codes
// round(k / scale), laid out [head_dim / 4, padded page, 4] with zero
// padding keys and each key's code sum; stale after any later write.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/fp16.h"
#include "cache_test_util.h"
#include "kv/store/kv_pool.h"
#include "kv/store/page_key_codes.h"

namespace stride {

namespace {

constexpr int kHeads = 2, kDim = 12, kPage = 24;

// [n, kHeads, kDim]
std::vector<float> random_keys(int n, uint32_t seed) {
  std::vector<float> k = testing_util::random_vec((size_t)n * kHeads * kDim, seed);
  for (float& x : k) x *= 3.f;
  return k;
}

std::unique_ptr<KvPool> make_pool(KvStorage storage) {
  KvPoolShape shape{kHeads, kDim, 4, kPage};
  shape.storage = storage;
  auto pool = KvPool::create(shape, 3);
  EXPECT_TRUE(pool.ok());
  return std::move(pool).value();
}

void fill(KvPool& pool, int32_t page, const std::vector<float>& k) {
  const std::vector<float> v((size_t)kPage * kHeads * 4, 1.f);
  pool.store(page, 0, kPage, k.data(), kHeads * kDim, v.data(), kHeads * 4, 0);
}

}  // namespace

TEST(PageKeyCodes, CodesAreTheDefinitionInTheDotProductLayout) {
  for (const KvStorage storage : {KvStorage::F32, KvStorage::F16, KvStorage::Int8}) {
    SCOPED_TRACE((int)storage);
    auto pool = make_pool(storage);
    const std::vector<float> k = random_keys(kPage, 3);
    fill(*pool, 1, k);
    PageKeyCodes codes(3, kHeads, kDim, kPage);
    EXPECT_EQ(codes.padded_page(), 32);
    codes.encode(*pool, 1);
    for (int h = 0; h < kHeads; ++h)
      for (int t = 0; t < codes.padded_page(); ++t) {
        // The key as the pool holds it, widened; the padding keys are zero.
        std::vector<double> key((size_t)kDim, 0.0);
        for (int c = 0; c < kDim && t < kPage; ++c) {
          const double x = k[((size_t)t * kHeads + h) * kDim + c];
          key[(size_t)c] = storage == KvStorage::F16 ? fp16_to_fp32(fp32_to_fp16((float)x)) : x;
        }
        double amax = 0;
        for (const double x : key) amax = std::max(amax, std::fabs(x));
        const float scale = codes.scales(1, h)[t];
        EXPECT_NEAR(scale, amax / 127.0, 1e-6 * amax) << "h=" << h << " t=" << t;
        int32_t sum = 0;
        for (int c = 0; c < kDim; ++c) {
          const int code = codes.codes(1, h)[((c / 4) * codes.padded_page() + t) * 4 + c % 4];
          sum += code;
          // Within half a step of the key (a step and a half for an int8
          // pool: its own rounding, then the widening).
          EXPECT_LE(std::fabs(code * (double)scale - key[(size_t)c]),
                    (storage == KvStorage::Int8 ? 1.5 : 0.5) * amax / 127.0 + 1e-6)
              << "h=" << h << " t=" << t << " c=" << c;
          if (storage == KvStorage::Int8 && t < kPage) {
            EXPECT_EQ(code, pool->k8(1, h)[t * kDim + c]);
          }
        }
        EXPECT_EQ(codes.sums(1, h)[t], sum);
      }
  }
}

TEST(PageKeyCodes, StaleAfterAnyLaterWriteToThePage) {
  auto pool = make_pool(KvStorage::F16);
  const std::vector<float> k = random_keys(kPage, 5);
  PageKeyCodes codes(3, kHeads, kDim, kPage);
  EXPECT_FALSE(codes.current(*pool, 0)) << "never encoded";
  fill(*pool, 0, k);
  fill(*pool, 2, k);
  EXPECT_FALSE(codes.current(*pool, 0));
  codes.encode(*pool, 0);
  codes.encode(*pool, 2);
  EXPECT_TRUE(codes.current(*pool, 0));
  EXPECT_TRUE(codes.current(*pool, 2));
  // The page restarted for another sequence: one store at slot 0.
  const std::vector<float> v((size_t)kHeads * 4, 0.f);
  pool->store(0, 0, 1, k.data(), kHeads * kDim, v.data(), kHeads * 4, 100);
  EXPECT_FALSE(codes.current(*pool, 0));
  EXPECT_TRUE(codes.current(*pool, 2)) << "another page's write leaves it";
  // A page brought back from a tier image.
  std::vector<uint8_t> image((size_t)pool->page_image_bytes());
  pool->save_page(2, image);
  EXPECT_TRUE(codes.current(*pool, 2)) << "reading a page changes nothing";
  pool->load_page(2, image);
  EXPECT_FALSE(codes.current(*pool, 2));
  codes.encode(*pool, 2);
  EXPECT_TRUE(codes.current(*pool, 2));
}

// Every (page, kv head) has a record of its own: pages encoded in any order
// each decode to their own keys, and re-encoding one leaves the others.
TEST(PageKeyCodes, EveryPageAndHeadKeepsItsOwnRecord) {
  auto pool = make_pool(KvStorage::F32);
  std::vector<std::vector<float>> keys;
  for (int p = 0; p < 3; ++p) keys.push_back(random_keys(kPage, 20 + (uint32_t)p));
  PageKeyCodes codes(3, kHeads, kDim, kPage);
  for (const int p : {2, 0, 1}) {
    fill(*pool, p, keys[(size_t)p]);
    codes.encode(*pool, p);
  }
  fill(*pool, 2, keys[2]);
  codes.encode(*pool, 2);
  for (int p = 0; p < 3; ++p)
    for (int h = 0; h < kHeads; ++h)
      for (int t = 0; t < kPage; ++t) {
        const float scale = codes.scales(p, h)[t];
        int32_t sum = 0;
        for (int c = 0; c < kDim; ++c) {
          const int code = codes.codes(p, h)[((c / 4) * codes.padded_page() + t) * 4 + c % 4];
          sum += code;
          EXPECT_LE(std::fabs(code * (double)scale - keys[(size_t)p][((size_t)t * kHeads + h) * kDim + c]),
                    0.5 * scale + 1e-6)
              << "p=" << p << " h=" << h << " t=" << t << " c=" << c;
        }
        EXPECT_EQ(codes.sums(p, h)[t], sum) << "p=" << p << " h=" << h << " t=" << t;
      }
}

}  // namespace stride
