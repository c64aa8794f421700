// Values of the shared KV tier: a round trip gives the payload back byte for
// byte, and every kind of damage (truncation, a flipped bit, another key,
// model or prompt) is refused. Keys: keyed by the secret, deterministic
// across processes, and chained like the prefix cache.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kv/shared/shared_page_codec.h"

namespace stride {
namespace {

SharedPageLayout layout() {
  SharedPageLayout l;
  l.identity = shared_kv_identity("model-a|page=4|f16");
  l.n_layer = 3;
  l.page_size = 4;
  l.layer_bytes = 40;
  return l;
}

std::vector<uint8_t> payload(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = (uint8_t)rng();
  return v;
}

const std::vector<int32_t> kTokens = {11, 22, 33, 44};

TEST(SharedPageCodec, RoundTripIsByteExact) {
  const SharedPageLayout l = layout();
  const SharedPageKeys keys("a-cluster-secret-123", l.identity, "p:");
  const PageDigest key = keys.next(SharedPageKeys::root(), kTokens);
  const std::vector<uint8_t> p = payload(l.payload_bytes(), 1);
  const std::string value = encode_shared_page(l, key, kTokens, p);
  EXPECT_EQ(value.size(), l.value_bytes());
  auto got = decode_shared_page(l, key, kTokens, value);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(std::vector<uint8_t>(got->begin(), got->end()), p);
}

TEST(SharedPageCodec, TruncatedOrExtendedValuesAreRefused) {
  const SharedPageLayout l = layout();
  const PageDigest key{};
  const std::string value = encode_shared_page(l, key, kTokens, payload(l.payload_bytes(), 2));
  for (size_t n : {size_t(0), size_t(3), size_t(87), value.size() / 2, value.size() - 1}) {
    auto got = decode_shared_page(l, key, kTokens, std::string_view(value).substr(0, n));
    EXPECT_FALSE(got.ok()) << n;
    EXPECT_EQ(got.status().code(), StatusCode::kCorrupt);
  }
  EXPECT_FALSE(decode_shared_page(l, key, kTokens, value + "x").ok());
  EXPECT_FALSE(decode_shared_page(l, key, kTokens, "garbage").ok());
}

TEST(SharedPageCodec, EveryFlippedByteIsDetected) {
  const SharedPageLayout l = layout();
  const PageDigest key{};
  const std::string value = encode_shared_page(l, key, kTokens, payload(l.payload_bytes(), 3));
  for (size_t i = 0; i < value.size(); ++i) {
    std::string bad = value;
    bad[i] = (char)(bad[i] ^ 0x10);
    EXPECT_FALSE(decode_shared_page(l, key, kTokens, bad).ok()) << "byte " << i;
  }
}

TEST(SharedPageCodec, AnotherKeyModelGeometryOrPromptIsRefused) {
  const SharedPageLayout l = layout();
  const SharedPageKeys keys("a-cluster-secret-123", l.identity, "p:");
  const PageDigest key = keys.next(SharedPageKeys::root(), kTokens);
  const std::string value = encode_shared_page(l, key, kTokens, payload(l.payload_bytes(), 4));
  PageDigest other_key = key;
  other_key[0] ^= 1;
  EXPECT_FALSE(decode_shared_page(l, other_key, kTokens, value).ok());
  SharedPageLayout other_model = l;
  other_model.identity = shared_kv_identity("model-b|page=4|f16");
  EXPECT_FALSE(decode_shared_page(other_model, key, kTokens, value).ok());
  const std::vector<int32_t> other_tokens = {11, 22, 33, 45};
  EXPECT_FALSE(decode_shared_page(l, key, other_tokens, value).ok());
  SharedPageLayout other_geometry = l;  // same size, other split
  other_geometry.n_layer = 4;
  other_geometry.layer_bytes = 30;
  ASSERT_EQ(other_geometry.value_bytes(), l.value_bytes());
  EXPECT_FALSE(decode_shared_page(other_geometry, key, kTokens, value).ok());
}

TEST(SharedPageKeys, ChainDependsOnSecretIdentityParentAndTokens) {
  const PageDigest id = shared_kv_identity("m");
  const SharedPageKeys a("secret-one-0123456", id, "p:");
  const SharedPageKeys b("secret-two-0123456", id, "p:");
  const SharedPageKeys c("secret-one-0123456", shared_kv_identity("n"), "p:");
  const PageDigest k1 = a.next(SharedPageKeys::root(), kTokens);
  EXPECT_EQ(k1, a.next(SharedPageKeys::root(), kTokens));  // deterministic across instances
  EXPECT_EQ(k1, SharedPageKeys("secret-one-0123456", id, "q:").next(SharedPageKeys::root(), kTokens));
  EXPECT_NE(k1, b.next(SharedPageKeys::root(), kTokens));
  EXPECT_NE(k1, c.next(SharedPageKeys::root(), kTokens));
  EXPECT_NE(k1, a.next(SharedPageKeys::root(), std::vector<int32_t>{11, 22, 33, 0}));
  const PageDigest k2 = a.next(k1, kTokens);
  EXPECT_NE(k2, k1);
  EXPECT_NE(k2, a.next(b.next(SharedPageKeys::root(), kTokens), kTokens));
  const std::string name = a.name(k1);
  EXPECT_EQ(name.substr(0, 2), "p:");
  EXPECT_EQ(name.size(), 2u + 64u);
  EXPECT_EQ(name.find_first_not_of("0123456789abcdef", 2), std::string::npos);
}

// The identity is plain SHA-256 (FIPS 180-2's "abc" vector).
TEST(SharedPageKeys, IdentityIsSha256) {
  const PageDigest d = shared_kv_identity("abc");
  const uint8_t want[4] = {0xba, 0x78, 0x16, 0xbf};
  EXPECT_EQ(d[0], want[0]);
  EXPECT_EQ(d[1], want[1]);
  EXPECT_EQ(d[2], want[2]);
  EXPECT_EQ(d[3], want[3]);
  EXPECT_EQ(d[31], 0xad);
}

}  // namespace
}  // namespace stride
