// Encrypted model files: round trips, and every kind of damage (wrong key,
// flipped byte, truncation, reordered chunks) is an error that names it. One
// test decrypts a chunk by hand with the layout the header documents, so the
// format is checked independently of the decryptor.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "loader/encrypted_file.h"

namespace stride {
namespace {

constexpr size_t kHeader = 38, kTag = 16;

ModelKey key_of(uint8_t seed) {
  ModelKey k;
  for (size_t i = 0; i < k.size(); ++i) k[i] = uint8_t(seed * 31 + i);
  return k;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = uint8_t(rng());
  return v;
}

std::vector<uint8_t> encrypt(const std::vector<uint8_t>& plain, const ModelKey& key, uint32_t chunk) {
  std::vector<uint8_t> out;
  Status st = encrypt_bytes(plain.data(), plain.size(), key, chunk, [&](const uint8_t* p, size_t n) {
    out.insert(out.end(), p, p + n);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

Expected<std::vector<uint8_t>> decrypt(const std::vector<uint8_t>& enc, const ModelKey& key) {
  std::vector<uint8_t> out;
  Status st = decrypt_bytes(enc.data(), enc.size(), key, [&](const uint8_t* p, size_t n) {
    out.insert(out.end(), p, p + n);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return out;
}

TEST(EncryptedFile, RoundTripsEverySizeAroundChunkEdges) {
  const uint32_t chunk = 1000;
  for (size_t n : {0, 1, 999, 1000, 1001, 2000, 4567}) {
    const auto plain = random_bytes(n, (uint32_t)n);
    const auto enc = encrypt(plain, key_of(1), chunk);
    const size_t chunks = n == 0 ? 1 : (n + chunk - 1) / chunk;
    EXPECT_EQ(enc.size(), kHeader + kTag + n + chunks * kTag) << n;
    EXPECT_EQ(std::string(enc.begin(), enc.begin() + 10), "STRIDEENC1");
    auto dec = decrypt(enc, key_of(1));
    ASSERT_TRUE(dec.ok()) << dec.status().message();
    EXPECT_EQ(*dec, plain) << n;
  }
}

TEST(EncryptedFile, SamePlaintextEncryptsDifferentlyEachTime) {
  const auto plain = random_bytes(3000, 7);
  EXPECT_NE(encrypt(plain, key_of(1), 1000), encrypt(plain, key_of(1), 1000));  // fresh nonce
}

TEST(EncryptedFile, ChunkDecryptsByHandWithTheDocumentedLayout) {
  const auto plain = random_bytes(2500, 3);
  const ModelKey key = key_of(4);
  const auto enc = encrypt(plain, key, 1000);
  // Chunk 1: nonce = base XOR be64(1) in the last 8 bytes; AAD = header || be64(1) || 0.
  std::vector<uint8_t> nonce(enc.begin() + 26, enc.begin() + 38);
  nonce[11] ^= 1;
  std::vector<uint8_t> aad(enc.begin(), enc.begin() + kHeader);
  for (int i = 0; i < 7; ++i) aad.push_back(0);
  aad.push_back(1);
  aad.push_back(0);
  const uint8_t* c1 = enc.data() + kHeader + kTag + (1000 + kTag);
  std::vector<uint8_t> out(1000);
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  ASSERT_EQ(EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key.data(), nonce.data()), 1);
  ASSERT_EQ(EVP_DecryptUpdate(ctx, nullptr, &len, aad.data(), (int)aad.size()), 1);
  ASSERT_EQ(EVP_DecryptUpdate(ctx, out.data(), &len, c1, 1000), 1);
  ASSERT_EQ(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, const_cast<uint8_t*>(c1 + 1000)), 1);
  EXPECT_EQ(EVP_DecryptFinal_ex(ctx, out.data() + len, &len), 1);
  EVP_CIPHER_CTX_free(ctx);
  EXPECT_TRUE(std::equal(out.begin(), out.end(), plain.begin() + 1000));
}

TEST(EncryptedFile, WrongKeyIsNamed) {
  const auto enc = encrypt(random_bytes(3000, 1), key_of(1), 1000);
  auto dec = decrypt(enc, key_of(2));
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("wrong key"), std::string::npos) << dec.status().message();
}

TEST(EncryptedFile, FlippedCiphertextByteNamesTheChunk) {
  auto enc = encrypt(random_bytes(3000, 1), key_of(1), 1000);
  enc[kHeader + kTag + (1000 + kTag) + 17] ^= 0x01;  // inside chunk 1
  auto dec = decrypt(enc, key_of(1));
  ASSERT_FALSE(dec.ok());
  EXPECT_EQ(dec.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(dec.status().message().find("chunk 1 of 3 failed authentication"), std::string::npos)
      << dec.status().message();
}

TEST(EncryptedFile, FlippedTagAndHeaderBytesFail) {
  const auto good = encrypt(random_bytes(3000, 1), key_of(1), 1000);
  auto tag = good;
  tag.back() ^= 0x80;  // tag of the last chunk
  EXPECT_FALSE(decrypt(tag, key_of(1)).ok());
  auto nonce = good;
  nonce[30] ^= 0x01;  // base nonce is authenticated as part of the header
  EXPECT_FALSE(decrypt(nonce, key_of(1)).ok());
  auto magic = good;
  magic[0] = 'X';
  auto dec = decrypt(magic, key_of(1));
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("not a stride encrypted model"), std::string::npos);
}

TEST(EncryptedFile, TruncationAndExtensionAreDetected) {
  const auto good = encrypt(random_bytes(3000, 1), key_of(1), 1000);
  for (size_t cut : {size_t(1), kTag, 1000 + kTag, good.size() - kHeader}) {
    std::vector<uint8_t> t(good.begin(), good.end() - cut);
    auto dec = decrypt(t, key_of(1));
    ASSERT_FALSE(dec.ok()) << cut;
    EXPECT_NE(dec.status().message().find("truncated"), std::string::npos) << dec.status().message();
  }
  auto longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decrypt(longer, key_of(1)).ok());
  EXPECT_FALSE(decrypt(std::vector<uint8_t>(good.begin(), good.begin() + 20), key_of(1)).ok());
}

TEST(EncryptedFile, ReorderedChunksFail) {
  auto enc = encrypt(random_bytes(3000, 1), key_of(1), 1000);
  const size_t c0 = kHeader + kTag, c1 = c0 + 1000 + kTag;
  std::swap_ranges(enc.begin() + c0, enc.begin() + c1, enc.begin() + c1);
  auto dec = decrypt(enc, key_of(1));
  ASSERT_FALSE(dec.ok());
  EXPECT_NE(dec.status().message().find("chunk 0 of 3 failed authentication"), std::string::npos);
}

TEST(EncryptedFile, KeyParsing) {
  EXPECT_TRUE(parse_model_key_hex(std::string(64, 'a')).ok());
  EXPECT_TRUE(parse_model_key_hex(" " + std::string(64, 'F') + "\n").ok());
  EXPECT_FALSE(parse_model_key_hex(std::string(63, 'a')).ok());
  EXPECT_FALSE(parse_model_key_hex(std::string(62, 'a') + "zz").ok());
  auto k = parse_model_key_hex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  ASSERT_TRUE(k.ok());
  for (int i = 0; i < 32; ++i) EXPECT_EQ((*k)[i], i);
  auto g = generate_model_key_hex();
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(parse_model_key_hex(*g).ok());
}

class EncryptedFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("stride-enc-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  static void write(const std::string& p, const std::vector<uint8_t>& b) {
    std::ofstream(p, std::ios::binary).write((const char*)b.data(), (std::streamsize)b.size());
  }
  static std::vector<uint8_t> read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  std::filesystem::path dir_;
};

TEST_F(EncryptedFiles, FileRoundTripMemoryLoadAndKeyRotation) {
  const auto plain = random_bytes(10000, 9);
  write(path("plain"), plain);
  ASSERT_TRUE(encrypt_file(path("plain"), path("enc"), key_of(1), 4096).ok());
  EXPECT_TRUE(is_encrypted_model(path("enc")));
  EXPECT_FALSE(is_encrypted_model(path("plain")));
  EXPECT_FALSE(encrypt_file(path("enc"), path("enc2"), key_of(1)).ok());  // already encrypted

  auto mem = decrypt_to_memory(path("enc"), key_of(1));
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  ASSERT_EQ(mem->size(), plain.size());
  EXPECT_TRUE(std::equal(plain.begin(), plain.end(), mem->data()));

  ASSERT_TRUE(rotate_model_key(path("enc"), key_of(1), key_of(2)).ok());
  EXPECT_FALSE(decrypt_to_memory(path("enc"), key_of(1)).ok());
  ASSERT_TRUE(decrypt_file(path("enc"), path("back"), key_of(2)).ok());
  EXPECT_EQ(read(path("back")), plain);

  // A failed rotation (wrong old key) leaves the file untouched and no temporary behind.
  const auto before = read(path("enc"));
  Status st = rotate_model_key(path("enc"), key_of(3), key_of(4));
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("wrong key"), std::string::npos);
  EXPECT_EQ(read(path("enc")), before);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 3);  // plain, enc, back
}

TEST_F(EncryptedFiles, KeyFileFormats) {
  std::ofstream(path("hex")) << std::string(64, 'b') << "\n";
  auto k = read_model_key_file(path("hex"));
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)[0], 0xbb);
  write(path("raw"), std::vector<uint8_t>(32, 7));
  auto r = read_model_key_file(path("raw"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[31], 7);
  std::ofstream(path("bad")) << "short";
  EXPECT_FALSE(read_model_key_file(path("bad")).ok());
  EXPECT_FALSE(read_model_key_file(path("missing")).ok());
}

}  // namespace
}  // namespace stride
