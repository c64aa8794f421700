// Audit log: created 0600 whatever the umask, a symlink at the path is
// refused, request and event lines are each one valid JSON object (parsed by
// nlohmann::json here), event fields cannot overwrite the fixed members,
// reopen() after a logrotate-style rename writes to a new 0600 file, and
// concurrent writers never interleave lines.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "http/audit_log.h"

namespace stride::server {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> read_lines(const fs::path& p) {
  std::ifstream f(p);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(j.is_object()) << "not a JSON object: " << line;
    out.push_back(std::move(j));
  }
  return out;
}

mode_t mode_of(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stride-audit-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AuditLogTest, CreatedOwnerOnlyWhateverTheUmask) {
  const mode_t old_mask = ::umask(0);
  auto log = AuditLog::open((dir_ / "audit.jsonl").string());
  ::umask(old_mask);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(mode_of(dir_ / "audit.jsonl"), 0600u);
}

TEST_F(AuditLogTest, ASymlinkAtThePathIsRefused) {
  std::ofstream(dir_ / "elsewhere") << "";
  fs::create_symlink(dir_ / "elsewhere", dir_ / "audit.jsonl");
  auto log = AuditLog::open((dir_ / "audit.jsonl").string());
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("symbolic link"), std::string::npos) << log.status().message();
  EXPECT_EQ(fs::file_size(dir_ / "elsewhere"), 0u);
}

TEST_F(AuditLogTest, RequestAndEventLinesAreJson) {
  const fs::path p = dir_ / "audit.jsonl";
  {
    auto log = AuditLog::open(p.string());
    ASSERT_TRUE(log.ok());
    AuditRecord r;
    r.request_id = "req-1";
    r.client_ip = "10.0.0.7";
    r.key_id = "key#0";
    r.endpoint = "/v1/completions";
    r.status = 200;
    r.prompt = "a \"quoted\"\nprompt \xff";  // invalid UTF-8 is replaced, not thrown on
    (*log)->write(r);
    AuditEvent e;
    e.kind = "auth_failed";
    e.client_ip = "10.0.0.8";
    e.detail = "bad bearer token";
    e.fields = {{"endpoint", "/admin/model"}, {"kind", "forged"}, {"time", "0"}};
    ASSERT_TRUE((*log)->write_event(e).ok());
    AuditEvent admin;
    admin.kind = "admin_model_switch";
    admin.key_id = "admin#1";
    admin.detail = "v2 -> v1";
    ASSERT_TRUE((*log)->write_event(admin).ok());
    EXPECT_EQ((*log)->failed_writes(), 0);
  }
  const auto lines = read_lines(p);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["request_id"], "req-1");
  EXPECT_EQ(lines[0]["status"], 200);
  EXPECT_TRUE(lines[0]["time"].is_number());
  EXPECT_EQ(lines[1]["kind"], "auth_failed");
  EXPECT_EQ(lines[1]["client_ip"], "10.0.0.8");
  EXPECT_EQ(lines[1]["key_id"], "-");
  EXPECT_EQ(lines[1]["detail"], "bad bearer token");
  EXPECT_EQ(lines[1]["endpoint"], "/admin/model");
  EXPECT_TRUE(lines[1]["time"].is_number()) << "a field cannot replace the time";
  EXPECT_EQ(lines[2]["kind"], "admin_model_switch");
  EXPECT_EQ(lines[2]["client_ip"], "-");
  EXPECT_EQ(lines[2]["key_id"], "admin#1");
}

TEST_F(AuditLogTest, ReopenAfterRenameWritesToANewFile) {
  const fs::path p = dir_ / "audit.jsonl", rotated = dir_ / "audit.jsonl.1";
  auto log = AuditLog::open(p.string());
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->write_event({"first", "-", "-", "before rotation", {}}).ok());
  fs::rename(p, rotated);  // what logrotate does before sending SIGHUP
  ASSERT_TRUE((*log)->write_event({"second", "-", "-", "still the old file", {}}).ok());
  ASSERT_TRUE((*log)->reopen().ok());
  ASSERT_TRUE((*log)->write_event({"third", "-", "-", "after reopen", {}}).ok());

  const auto old_lines = read_lines(rotated);
  ASSERT_EQ(old_lines.size(), 2u);
  EXPECT_EQ(old_lines[0]["kind"], "first");
  EXPECT_EQ(old_lines[1]["kind"], "second");
  const auto new_lines = read_lines(p);
  ASSERT_EQ(new_lines.size(), 1u);
  EXPECT_EQ(new_lines[0]["kind"], "third");
  EXPECT_EQ(mode_of(p), 0600u);
}

TEST_F(AuditLogTest, AFailedReopenKeepsTheOldFile) {
  const fs::path sub = dir_ / "sub";
  fs::create_directories(sub);
  auto log = AuditLog::open((sub / "audit.jsonl").string());
  ASSERT_TRUE(log.ok());
  fs::rename(sub, dir_ / "moved");  // the path's directory is gone
  Status st = (*log)->reopen();
  EXPECT_FALSE(st.ok());
  ASSERT_TRUE((*log)->write_event({"kept", "-", "-", "", {}}).ok());
  const auto lines = read_lines(dir_ / "moved" / "audit.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["kind"], "kept");
}

TEST_F(AuditLogTest, ConcurrentWritersNeverInterleaveLines) {
  const fs::path p = dir_ / "audit.jsonl";
  auto log = AuditLog::open(p.string());
  ASSERT_TRUE(log.ok());
  constexpr int kThreads = 4, kEach = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        AuditRecord r;
        r.request_id = "t" + std::to_string(t) + "-" + std::to_string(i);
        r.prompt = std::string(500 + i, 'a' + t);
        (*log)->write(r);
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto lines = read_lines(p);
  ASSERT_EQ(lines.size(), (size_t)kThreads * kEach);
  for (const auto& j : lines) {
    const std::string id = j["request_id"];
    const int t = id[1] - '0';
    EXPECT_EQ(j["prompt"].get<std::string>(), std::string(500 + std::stoi(id.substr(3)), 'a' + t));
  }
}

}  // namespace
}  // namespace stride::server
