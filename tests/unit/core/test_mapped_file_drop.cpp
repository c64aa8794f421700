// MappedFile::drop_resident: the pages of a range leave the process's
// resident set (RssFile falls by about the range) and read back the same
// bytes from the file; a range outside the map is refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "core/mapped_file.h"
#include "core/process_memory.h"

namespace stride {
namespace {

TEST(MappedFile, DropResidentKeepsTheBytesAndFreesThePages) {
  constexpr size_t kBytes = 16 << 20;
  std::vector<char> bytes(kBytes);
  std::mt19937 rng(5);
  for (char& c : bytes) c = (char)(rng() & 0xff);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("stride-drop-" + std::to_string(getpid()))).string();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), (std::streamsize)bytes.size());
  }
  auto f = MappedFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  uint64_t sum = 0;
  for (size_t i = 0; i < kBytes; i += 64) sum += f->data()[i];  // fault every page in
  const int64_t before = process_status_bytes("RssFile");
  EXPECT_TRUE(f->drop_resident(f->data(), kBytes));
  const int64_t after = process_status_bytes("RssFile");
  EXPECT_GT(before - after, (int64_t)(kBytes * 3 / 4)) << "before " << before << " after " << after;
  EXPECT_EQ(std::memcmp(f->data(), bytes.data(), kBytes), 0) << "the bytes come back from the file";
  uint64_t again = 0;
  for (size_t i = 0; i < kBytes; i += 64) again += f->data()[i];
  EXPECT_EQ(sum, again);
  EXPECT_FALSE(f->drop_resident(f->data() + 1, kBytes)) << "past the end of the map";
  EXPECT_FALSE(f->drop_resident(bytes.data(), 16)) << "not in the map";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stride
