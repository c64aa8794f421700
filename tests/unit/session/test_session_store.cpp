// The session directory: names that could leave it are refused, files are
// written whole, size limits hold, and encryption follows the model's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "session/session_store.h"

namespace stride {
namespace {

namespace fs = std::filesystem;

SessionIdentity identity() {
  SessionIdentity id;
  id.model_sha256 = std::string(64, 'c');
  id.model_version = "v1";
  id.architecture = "llama";
  id.n_vocab = 100;
  id.n_layer = 1;
  id.n_kv_heads = 1;
  id.head_dim_k = 4;
  id.head_dim_v = 4;
  id.page_size = 2;
  id.kv_storage = "f32";
  id.layer_policies = {"dense"};
  return id;
}

SessionFile session(const std::string& name, int pages) {
  SessionFile s;
  s.name = name;
  s.created = 1;
  s.identity = identity();
  s.kv.page_size = 2;
  s.kv.n_pages = pages;
  s.kv.image_bytes = 1024;
  for (int i = 0; i < 2 * pages + 1; ++i) s.kv.tokens.push_back(i % 100);
  for (int p = 0; p < pages; ++p) s.kv.pages.push_back({0, p});
  s.kv.images.resize((size_t)pages * 1024);
  std::mt19937 rng(pages);
  for (uint8_t& b : s.kv.images) b = (uint8_t)rng();
  return s;
}

class SessionStoreTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stride-sessions-" + std::to_string(::getpid()) + "-" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<SessionStore> open(int64_t max_file, int64_t max_total) {
    auto s = SessionStore::open({dir_.string(), max_file, max_total});
    EXPECT_TRUE(s.ok());
    return std::move(*s);
  }
  fs::path dir_;
};

TEST_F(SessionStoreTest, NamesNeverLeaveTheDirectory) {
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/etc/passwd", ".hidden", "-x", "a b", "a\\b", "é", "a\nb"})
    EXPECT_FALSE(SessionStore::check_name(bad).ok()) << bad;
  EXPECT_FALSE(SessionStore::check_name(std::string(65, 'a')).ok());
  for (const char* good : {"a", "doc-1", "Report_2026.v2", "0"}) EXPECT_TRUE(SessionStore::check_name(good).ok()) << good;
  EXPECT_TRUE(SessionStore::check_name(std::string(64, 'a')).ok());
}

TEST_F(SessionStoreTest, SaveLoadListRemove) {
  auto store = open(1 << 20, 1 << 22);
  auto saved = store->save(session("one", 3), nullptr);
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_EQ(saved->bytes, (int64_t)fs::file_size(dir_ / "one.stridekv"));
  EXPECT_EQ(saved->sha256.size(), 64u);
  ASSERT_TRUE(store->save(session("two", 1), nullptr).ok());
  auto listed = store->list();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, "one");
  EXPECT_EQ((*listed)[1].name, "two");
  auto back = store->load("one", identity(), nullptr);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->kv.images, session("one", 3).kv.images);
  ASSERT_TRUE(store->remove("one").ok());
  EXPECT_EQ(store->load("one", identity(), nullptr).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store->remove("one").code(), StatusCode::kNotFound);
  // Only session files are listed; no temporary file is left behind.
  std::ofstream(dir_ / "notes.txt") << "x";
  auto again = store->list();
  ASSERT_EQ(again->size(), 1u);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_TRUE(e.path().filename() == "two.stridekv" || e.path().filename() == "notes.txt") << e.path();
}

TEST_F(SessionStoreTest, SizeLimitsHold) {
  auto store = open(4000, 5000);
  auto big = store->save(session("big", 4), nullptr);  // > 4096 bytes
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(store->save(session("a", 2), nullptr).ok());
  ASSERT_TRUE(store->save(session("a", 2), nullptr).ok());  // replacing is not counted twice
  auto over = store->save(session("b", 3), nullptr);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("session_max_total_bytes"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "b.stridekv"));
  // A file grown past the limit on disk is refused before it is read.
  std::ofstream(dir_ / "huge.stridekv", std::ios::binary) << std::string(5000, 'x');
  EXPECT_EQ(store->load("huge", identity(), nullptr).status().code(), StatusCode::kResourceExhausted);
}

TEST_F(SessionStoreTest, EncryptionFollowsTheModel) {
  auto store = open(1 << 20, 1 << 22);
  ModelKey key{}, other{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = (uint8_t)i, other[i] = (uint8_t)(i + 1);
  ASSERT_TRUE(store->save(session("sealed", 2), &key).ok());
  std::ifstream in(dir_ / "sealed.stridekv", std::ios::binary);
  std::string head(10, '\0');
  in.read(head.data(), 10);
  EXPECT_EQ(head, "STRIDEENC1");
  auto back = store->load("sealed", identity(), &key);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->kv.images, session("sealed", 2).kv.images);
  EXPECT_FALSE(store->load("sealed", identity(), &other).ok());
  EXPECT_EQ(store->load("sealed", identity(), nullptr).status().code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(store->save(session("plain", 2), nullptr).ok());
  EXPECT_EQ(store->load("plain", identity(), &key).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SessionStoreTest, AFileRenamedToAnotherNameIsRefused) {
  auto store = open(1 << 20, 1 << 22);
  ASSERT_TRUE(store->save(session("first", 1), nullptr).ok());
  fs::rename(dir_ / "first.stridekv", dir_ / "second.stridekv");
  EXPECT_EQ(store->load("second", identity(), nullptr).status().code(), StatusCode::kCorrupt);
}

}  // namespace
}  // namespace stride
