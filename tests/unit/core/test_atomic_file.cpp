// Atomic file writes: the target is either the old file or the complete new
// one; the mode is exactly the caller's; a failure (EFBIG from RLIMIT_FSIZE
// standing in for a full disk, a missing directory) leaves no temporary file
// and the old contents intact; kNoReplace never overwrites.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"

namespace stride {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

mode_t mode_of(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stride-atomic-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Every entry of the directory: a leftover temporary file shows up here.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesTheContentsWithExactlyTheGivenMode) {
  const mode_t old_mask = ::umask(022);
  ASSERT_TRUE(write_file_atomic((dir_ / "a").string(), "hello\n", 0600).ok());
  ASSERT_TRUE(write_file_atomic((dir_ / "b").string(), "world\n", 0640).ok());
  ::umask(old_mask);
  EXPECT_EQ(slurp(dir_ / "a"), "hello\n");
  EXPECT_EQ(mode_of(dir_ / "a"), 0600u);
  EXPECT_EQ(mode_of(dir_ / "b"), 0640u);
  EXPECT_EQ(entries(), (std::vector<std::string>{"a", "b"}));
}

TEST_F(AtomicFileTest, ReplacesAnExistingFileAndTheOldOneStaysUntilCommit) {
  const fs::path t = dir_ / "t";
  std::ofstream(t) << "old";
  AtomicFile f;
  ASSERT_TRUE(f.open(t.string(), 0644).ok());
  ASSERT_TRUE(f.write("new contents").ok());
  EXPECT_EQ(slurp(t), "old") << "nothing visible before commit";
  EXPECT_EQ(fs::path(f.temp_path()).parent_path(), dir_) << "temporary file in the same directory";
  ASSERT_TRUE(f.commit().ok());
  EXPECT_EQ(slurp(t), "new contents");
  EXPECT_EQ(entries(), (std::vector<std::string>{"t"}));
}

TEST_F(AtomicFileTest, DroppedWithoutCommitLeavesNothing) {
  const fs::path t = dir_ / "t";
  std::ofstream(t) << "old";
  {
    AtomicFile f;
    ASSERT_TRUE(f.open(t.string(), 0644).ok());
    ASSERT_TRUE(f.write("partial").ok());
    EXPECT_TRUE(fs::exists(f.temp_path()));
  }
  EXPECT_EQ(slurp(t), "old");
  EXPECT_EQ(entries(), (std::vector<std::string>{"t"}));
}

TEST_F(AtomicFileTest, NoReplaceRefusesAnExistingTarget) {
  const fs::path t = dir_ / "key";
  ASSERT_TRUE(write_file_atomic(t.string(), "first", 0600, AtomicFile::Mode::kNoReplace).ok());
  Status st = write_file_atomic(t.string(), "second", 0600, AtomicFile::Mode::kNoReplace);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("exists already"), std::string::npos) << st.message();
  EXPECT_EQ(slurp(t), "first");
  EXPECT_EQ(entries(), (std::vector<std::string>{"key"}));
}

TEST_F(AtomicFileTest, MissingDirectoryIsACleanError) {
  Status st = write_file_atomic((dir_ / "no" / "such" / "f").string(), "x", 0644);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("No such file or directory"), std::string::npos) << st.message();
}

// A write past RLIMIT_FSIZE fails with EFBIG, as a full disk fails with
// ENOSPC: same code path. Run in a child so the limit does not leak.
TEST_F(AtomicFileTest, AFailedWriteRemovesTheTemporaryFileAndKeepsTheOldContents) {
  const fs::path t = dir_ / "model";
  std::ofstream(t) << "old model";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim{64 << 10, 64 << 10};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const std::string big(1 << 20, 'x');
    AtomicFile f;
    if (!f.open(t.string(), 0644).ok()) _exit(10);
    Status st = f.write(big);
    if (st.ok()) _exit(11);
    if (st.message().find("File too large") == std::string::npos) _exit(12);
    if (st.message().find(t.string()) == std::string::npos) _exit(13);
    if (f.commit().ok()) _exit(14);  // nothing left to commit
    _exit(0);
  }
  int wst = 0;
  ASSERT_EQ(::waitpid(pid, &wst, 0), pid);
  ASSERT_TRUE(WIFEXITED(wst));
  EXPECT_EQ(WEXITSTATUS(wst), 0);
  EXPECT_EQ(slurp(t), "old model");
  EXPECT_EQ(entries(), (std::vector<std::string>{"model"}));
}

TEST_F(AtomicFileTest, CopyStreamsAFileLargerThanOneChunk) {
  const fs::path src = dir_ / "src", dst = dir_ / "dst";
  std::string data((9u << 20) + 123, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char((i * 2654435761u) >> 13);
  std::ofstream(src, std::ios::binary) << data;
  ASSERT_TRUE(copy_file_atomic(src.string(), dst.string(), 0644).ok());
  EXPECT_EQ(slurp(dst), data);
  Status missing = copy_file_atomic((dir_ / "nope").string(), (dir_ / "x").string(), 0644);
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

}  // namespace
}  // namespace stride
