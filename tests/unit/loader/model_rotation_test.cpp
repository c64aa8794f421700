// Key rotation of a published encrypted version: the version's SHA256 record
// follows the re-encrypted file (checked with OpenSSL's SHA-256 of the bytes
// on disk, not stride's), the plaintext is unchanged, the old key no longer
// opens it, the file keeps its mode, and a failed rotation changes neither
// the file nor the record.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "loader/encrypted_file.h"
#include "loader/model_versions.h"

namespace stride {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string openssl_sha256_hex(const std::string& p) {
  const auto bytes = read_all(p);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr), 1);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

ModelKey key_of(uint8_t b) {
  ModelKey k;
  k.fill(b);
  return k;
}

class VersionRotation : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("stride-rotation-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    plain_.resize(50000);
    for (size_t i = 0; i < plain_.size(); ++i) plain_[i] = uint8_t((i * 131) ^ (i >> 7));
    std::ofstream((root_ / "m.gguf").string(), std::ios::binary)
        .write((const char*)plain_.data(), (std::streamsize)plain_.size());
    ASSERT_TRUE(encrypt_file((root_ / "m.gguf").string(), (root_ / "m.enc.gguf").string(), key_of(1), 8192).ok());
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir() const { return (root_ / "models").string(); }
  fs::path root_;
  std::vector<uint8_t> plain_;
};

TEST_F(VersionRotation, RotatedVersionStillVerifiesAndDecryptsUnderTheNewKey) {
  auto v = publish_model_version(dir(), "v1", (root_ / "m.enc.gguf").string());
  ASSERT_TRUE(v.ok()) << v.status().message();
  const std::string before = openssl_sha256_hex(v->path);
  ASSERT_EQ(v->sha256, before);

  ASSERT_TRUE(rotate_model_key(v->path, key_of(1), key_of(2)).ok());

  auto after = find_model_version(dir(), "v1");
  ASSERT_TRUE(after.ok()) << after.status().message();
  const std::string actual = openssl_sha256_hex(after->path);
  EXPECT_NE(actual, before) << "fresh nonce: new ciphertext";
  EXPECT_EQ(after->sha256, actual) << "the record follows the re-encrypted file";
  std::ifstream rec(fs::path(dir()) / "v1" / "SHA256");
  std::string line;
  std::getline(rec, line);
  EXPECT_EQ(line, actual + "  m.enc.gguf") << "sha256sum format kept";

  auto mem = decrypt_to_memory(after->path, key_of(2));
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  ASSERT_EQ(mem->size(), plain_.size());
  EXPECT_TRUE(std::equal(plain_.begin(), plain_.end(), mem->data()));
  EXPECT_FALSE(decrypt_to_memory(after->path, key_of(1)).ok());

  struct stat st;
  ASSERT_EQ(::stat(after->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  // Nothing but the model and its record in the version folder.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir()) / "v1")) entries += e.is_regular_file() ? 1 : 100;
  EXPECT_EQ(entries, 2);
}

TEST_F(VersionRotation, FailedRotationLeavesFileAndRecord) {
  auto v = publish_model_version(dir(), "v1", (root_ / "m.enc.gguf").string());
  ASSERT_TRUE(v.ok()) << v.status().message();
  const auto file_before = read_all(v->path);
  const auto record_before = read_all((fs::path(dir()) / "v1" / "SHA256").string());
  Status st = rotate_model_key(v->path, key_of(7), key_of(2));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("wrong key"), std::string::npos) << st.message();
  EXPECT_EQ(read_all(v->path), file_before);
  EXPECT_EQ(read_all((fs::path(dir()) / "v1" / "SHA256").string()), record_before);
  int entries = 0;
  for (const auto& e : fs::directory_iterator(fs::path(dir()) / "v1")) entries += e.is_regular_file() ? 1 : 100;
  EXPECT_EQ(entries, 2);
}

TEST_F(VersionRotation, AFileOutsideAnyVersionHasNoRecordToUpdate) {
  const std::string p = (root_ / "m.enc.gguf").string();
  ASSERT_TRUE(rotate_model_key(p, key_of(1), key_of(2)).ok());
  EXPECT_FALSE(fs::exists(root_ / "SHA256"));
  auto mem = decrypt_to_memory(p, key_of(2));
  ASSERT_TRUE(mem.ok());
  EXPECT_TRUE(std::equal(plain_.begin(), plain_.end(), mem->data()));
}

}  // namespace
}  // namespace stride
