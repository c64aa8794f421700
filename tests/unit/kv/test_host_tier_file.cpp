// The file-backed offload tier: an existing file or a symlink at the path is
// refused and left untouched; the file is unlinked as soon as it is created,
// so a second tier (the next model version during a switch) can use the same
// path while the first still lives, each with its own bytes; and a file that
// cannot be reserved (RLIMIT_FSIZE's EFBIG standing in for ENOSPC) is a
// clean ResourceExhausted naming the size and the path, with nothing left
// behind, never a SIGBUS later.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kv/store/host_tier.h"

namespace stride {
namespace {

namespace fs = std::filesystem;

HostTierOptions file_opts(const std::string& file, int64_t slots, int64_t slot_bytes) {
  HostTierOptions o;
  o.capacity_bytes = slots * slot_bytes;
  o.slot_bytes = slot_bytes;
  o.file = file;
  return o;
}

class HostTierFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stride-tier-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(HostTierFile, AnExistingFileIsRefusedAndKept) {
  std::ofstream(path("tier")) << "precious";
  auto t = HostTier::create(file_opts(path("tier"), 4, 4096));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("exists already"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find(path("tier")), std::string::npos);
  std::ifstream f(path("tier"));
  std::string s;
  f >> s;
  EXPECT_EQ(s, "precious");
}

TEST_F(HostTierFile, ASymlinkIsRefusedAndItsTargetUntouched) {
  std::ofstream(path("target")) << "x";
  fs::create_symlink(path("target"), path("tier"));
  auto t = HostTier::create(file_opts(path("tier"), 4, 4096));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("symbolic link"), std::string::npos) << t.status().message();
  EXPECT_EQ(fs::file_size(path("target")), 1u);
  EXPECT_TRUE(fs::is_symlink(path("tier")));
}

TEST_F(HostTierFile, TwoTiersCanShareAPathAndKeepTheirOwnBytes) {
  auto a = HostTier::create(file_opts(path("tier"), 2, 4096));
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_FALSE(fs::exists(path("tier"))) << "unlinked at once: nothing to leave behind after a crash";
  auto b = HostTier::create(file_opts(path("tier"), 2, 4096));
  ASSERT_TRUE(b.ok()) << b.status().message();
  const std::vector<uint8_t> pa(4096, 0xa5), pb(4096, 0x3c);
  ASSERT_TRUE((*a)->put(7, pa).ok());
  ASSERT_TRUE((*b)->put(7, pb).ok());
  auto ra = (*a)->pin(7);
  auto rb = (*b)->pin(7);
  ASSERT_TRUE(ra && rb);
  EXPECT_TRUE(std::equal(pa.begin(), pa.end(), ra->bytes().begin()));
  EXPECT_TRUE(std::equal(pb.begin(), pb.end(), rb->bytes().begin()));
}

TEST_F(HostTierFile, ASpaceShortageIsACleanErrorAtCreation) {
  const std::string p = path("tier");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim{64 << 10, 64 << 10};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    auto t = HostTier::create(file_opts(p, 256, 4096));  // 1 MiB
    if (t.ok()) _exit(10);
    if (t.status().code() != StatusCode::kResourceExhausted) _exit(11);
    const std::string want = "cannot reserve 1048576 bytes for the KV offload file " + p + ": File too large";
    if (t.status().message() != want) _exit(12);
    _exit(0);
  }
  int wst = 0;
  ASSERT_EQ(::waitpid(pid, &wst, 0), pid);
  ASSERT_TRUE(WIFEXITED(wst)) << "the child died of a signal: " << WTERMSIG(wst);
  EXPECT_EQ(WEXITSTATUS(wst), 0);
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
}  // namespace stride
