// The session file format: a round trip keeps every byte, and anything
// damaged, truncated, oversized or from another model is refused with a
// clear error (never a crash or a wrong restore).
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/sha256.h"
#include "session/session_file.h"

namespace stride {
namespace {

SessionIdentity identity() {
  SessionIdentity id;
  id.model_sha256 = std::string(64, 'a');
  id.model_version = "aaaaaaaaaaaa";
  id.architecture = "llama";
  id.n_vocab = 1000;
  id.n_layer = 3;
  id.n_kv_heads = 2;
  id.head_dim_k = 8;
  id.head_dim_v = 8;
  id.page_size = 4;
  id.kv_storage = "f16";
  id.layer_policies = {"dense", "window:8", "dense"};
  return id;
}

SessionFile sample(uint32_t seed = 1) {
  SessionFile s;
  s.name = "doc-1";
  s.created = 1764720000;
  s.identity = identity();
  std::mt19937 rng(seed);
  s.kv.page_size = 4;
  for (int i = 0; i < 10; ++i) s.kv.tokens.push_back((int32_t)(rng() % 1000));
  s.kv.n_pages = 2;
  s.kv.image_bytes = 40;
  s.kv.pages = {{0, 0}, {0, 1}, {1, 1}, {2, 0}, {2, 1}};
  s.kv.images.resize(s.kv.pages.size() * 40);
  for (uint8_t& b : s.kv.images) b = (uint8_t)rng();
  return s;
}

TEST(SessionFile, Sha256MatchesTheStandardVector) {
  // FIPS 180-2 example "abc".
  EXPECT_EQ(sha256_hex(sha256_bytes("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(SessionFile, RoundTripKeepsEveryField) {
  const SessionFile s = sample();
  const std::string bytes = encode_session(s);
  EXPECT_EQ((int64_t)bytes.size(), encoded_session_bytes(s));
  EXPECT_EQ(bytes.substr(0, 8), "STRIDEKV");
  // The trailer is the SHA-256 of everything before it.
  const auto digest = sha256_bytes(bytes.data(), bytes.size() - 32);
  EXPECT_EQ(bytes.substr(bytes.size() - 32), std::string((const char*)digest.data(), 32));
  auto back = decode_session(bytes, identity());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->name, s.name);
  EXPECT_EQ(back->created, s.created);
  EXPECT_EQ(back->identity, s.identity);
  EXPECT_EQ(back->kv.tokens, s.kv.tokens);
  EXPECT_EQ(back->kv.page_size, 4);
  EXPECT_EQ(back->kv.n_pages, 2);
  EXPECT_EQ(back->kv.image_bytes, 40);
  EXPECT_EQ(back->kv.pages, s.kv.pages);
  EXPECT_EQ(back->kv.images, s.kv.images);
}

TEST(SessionFile, EveryFlippedByteIsRefused) {
  const std::string bytes = encode_session(sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = (char)(bad[i] ^ 0x5a);
    auto r = decode_session(bad, identity());
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << "byte " << i << ": " << r.status().message();
  }
}

TEST(SessionFile, EveryTruncationIsRefused) {
  const std::string bytes = encode_session(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode_session(std::string_view(bytes).substr(0, n), identity());
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().code(), StatusCode::kCorrupt) << n;
  }
  auto longer = decode_session(bytes + "x", identity());
  EXPECT_EQ(longer.status().code(), StatusCode::kCorrupt);
}

TEST(SessionFile, AnotherModelOrLayoutIsRefusedByName) {
  const std::string bytes = encode_session(sample());
  struct Case {
    void (*change)(SessionIdentity&);
    const char* says;
  } cases[] = {
      {[](SessionIdentity& i) { i.model_sha256 = std::string(64, 'b'); }, "another model"},
      {[](SessionIdentity& i) { i.architecture = "gemma3"; }, "architecture"},
      {[](SessionIdentity& i) { i.n_kv_heads = 4; }, "dimensions"},
      {[](SessionIdentity& i) { i.page_size = 16; }, "page size"},
      {[](SessionIdentity& i) { i.kv_storage = "int8"; }, "KV type"},
      {[](SessionIdentity& i) { i.layer_policies[1] = "window:16"; }, "policy on layer 1"},
      {[](SessionIdentity& i) { i.model_version = "v2"; }, "model version"},
  };
  for (const Case& c : cases) {
    SessionIdentity want = identity();
    c.change(want);
    auto r = decode_session(bytes, want);
    ASSERT_FALSE(r.ok()) << c.says;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
  }
}

TEST(SessionFile, InconsistentPageListsAreRefused) {
  // Checksums are recomputed, so only the structural checks can catch these.
  auto refused = [](SessionFile s) {
    auto r = decode_session(encode_session(s), identity());
    return !r.ok() && r.status().code() == StatusCode::kCorrupt;
  };
  SessionFile dup = sample();
  dup.kv.pages[1] = dup.kv.pages[0];
  EXPECT_TRUE(refused(dup));
  SessionFile past = sample();
  past.kv.pages.back().page = 2;  // n_pages is 2
  EXPECT_TRUE(refused(past));
  SessionFile layer = sample();
  layer.kv.pages.back().layer = 3;
  EXPECT_TRUE(refused(layer));
  SessionFile pages = sample();
  pages.kv.n_pages = 3;  // 12 tokens, only 10 saved
  EXPECT_TRUE(refused(pages));
  SessionFile token = sample();
  token.kv.tokens[3] = 1000;  // n_vocab
  EXPECT_TRUE(refused(token));
  SessionFile images = sample();
  images.kv.images.pop_back();
  EXPECT_TRUE(refused(images));
}

TEST(SessionFile, HostileHeadersAreRefused) {
  const std::string good = encode_session(sample());
  // A header length far past the end.
  std::string big = good;
  big[12] = big[13] = big[14] = big[15] = (char)0xff;
  EXPECT_EQ(decode_session(big, identity()).status().code(), StatusCode::kCorrupt);
  // A wrong format version.
  std::string ver = good;
  ver[8] = 2;
  EXPECT_EQ(decode_session(ver, identity()).status().code(), StatusCode::kCorrupt);
  // Garbage of every small size.
  for (size_t n = 0; n < 64; ++n)
    EXPECT_FALSE(decode_session(std::string(n, 'S'), identity()).ok());
}

}  // namespace
}  // namespace stride
