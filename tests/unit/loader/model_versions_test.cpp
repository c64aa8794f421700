// Model versions: publish copies a file in and records its sha256 (checked
// against the FIPS 180-2 digest of "abc"), versions are immutable, names are
// checked, and lookups of unknown versions list the published ones. ACTIVE
// records the first version published, then whatever is activated; "active"
// resolves through it and is not a publishable name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "loader/model_versions.h"

namespace stride {
namespace {

namespace fs = std::filesystem;
constexpr const char* kAbcSha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

class ModelVersions : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("stride-versions-" + std::to_string(::getpid()));
    fs::create_directories(root_);
    std::ofstream(root_ / "m.gguf") << "abc";
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir() const { return (root_ / "models").string(); }
  std::string file() const { return (root_ / "m.gguf").string(); }
  fs::path root_;
};

TEST_F(ModelVersions, PublishRecordsTheSha256AndFindsIt) {
  auto v = publish_model_version(dir(), "v1", file());
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->sha256, kAbcSha);
  EXPECT_EQ(v->bytes, 3u);
  EXPECT_EQ(v->path, (fs::path(dir()) / "v1" / "m.gguf").string());
  std::ifstream rec(fs::path(dir()) / "v1" / "SHA256");
  std::string line;
  std::getline(rec, line);
  EXPECT_EQ(line, std::string(kAbcSha) + "  m.gguf");

  auto found = find_model_version(dir(), "v1");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(found->sha256, kAbcSha);
}

TEST_F(ModelVersions, VersionsAreImmutableAndListedInOrder) {
  ASSERT_TRUE(publish_model_version(dir(), "v2", file()).ok());
  ASSERT_TRUE(publish_model_version(dir(), "v1", file()).ok());
  auto again = publish_model_version(dir(), "v1", file());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("already exists"), std::string::npos);
  fs::create_directories(fs::path(dir()) / "junk");  // no SHA256: not a version
  auto all = list_model_versions(dir());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].version, "v1");
  EXPECT_EQ((*all)[1].version, "v2");
}

TEST_F(ModelVersions, BadNamesAndMissingThingsAreClearErrors) {
  for (const char* bad : {"", ".", "..", "../x", "a/b", ".hidden", "sp ace"}) {
    EXPECT_FALSE(check_version_name(bad).ok()) << bad;
    EXPECT_FALSE(publish_model_version(dir(), bad, file()).ok()) << bad;
  }
  EXPECT_TRUE(check_version_name("v1.2_rc-3").ok());
  EXPECT_FALSE(publish_model_version(dir(), "v1", (root_ / "none.gguf").string()).ok());
  ASSERT_TRUE(publish_model_version(dir(), "v1", file()).ok());
  auto missing = find_model_version(dir(), "v9");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("published: v1"), std::string::npos) << missing.status().message();
  EXPECT_FALSE(find_model_version((root_ / "nodir").string(), "v1").ok());
  // A damaged record is named.
  std::ofstream(fs::path(dir()) / "v1" / "SHA256") << "not-a-digest  m.gguf\n";
  auto corrupt = find_model_version(dir(), "v1");
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kCorrupt);
  // A version whose file disappeared.
  ASSERT_TRUE(publish_model_version(dir(), "v2", file()).ok());
  fs::remove(fs::path(dir()) / "v2" / "m.gguf");
  EXPECT_FALSE(find_model_version(dir(), "v2").ok());
}

TEST_F(ModelVersions, ActiveStartsAtTheFirstPublishAndMovesOnlyToPublishedVersions) {
  EXPECT_FALSE(read_active_model_version(dir()).ok());
  ASSERT_TRUE(publish_model_version(dir(), "v1", file()).ok());
  ASSERT_TRUE(publish_model_version(dir(), "v2", file()).ok());
  auto active = read_active_model_version(dir());
  ASSERT_TRUE(active.ok()) << active.status().message();
  EXPECT_EQ(*active, "v1");
  for (const char* name : {"", "active"}) {
    auto v = resolve_model_version(dir(), name);
    ASSERT_TRUE(v.ok()) << v.status().message();
    EXPECT_EQ(v->version, "v1");
  }
  ASSERT_TRUE(set_active_model_version(dir(), "v2").ok());
  EXPECT_EQ(resolve_model_version(dir(), "active")->version, "v2");
  EXPECT_EQ(resolve_model_version(dir(), "v1")->version, "v1");  // a named version ignores ACTIVE

  EXPECT_FALSE(set_active_model_version(dir(), "v9").ok());
  EXPECT_FALSE(set_active_model_version(dir(), "../v1").ok());
  EXPECT_EQ(*read_active_model_version(dir()), "v2");
  EXPECT_FALSE(publish_model_version(dir(), "active", file()).ok());

  std::ofstream(fs::path(dir()) / "ACTIVE") << "../etc\n";  // a hand-edited record is checked, not followed
  EXPECT_FALSE(read_active_model_version(dir()).ok());
  EXPECT_FALSE(resolve_model_version(dir(), "").ok());
}

}  // namespace
}  // namespace stride
