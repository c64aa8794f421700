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

// Rows read back with pread after a drop stay out of RSS; the same rows read
// through the map come back into it (what the embedding lookup used to do).
TEST(MappedFile, ReadAtCopiesDroppedRowsWithoutMappingThem) {
  constexpr size_t kBytes = 16 << 20, kRow = 1680, kRows = 1000;
  std::vector<char> bytes(kBytes);
  std::mt19937 rng(9);
  for (char& c : bytes) c = (char)(rng() & 0xff);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("stride-readat-" + std::to_string(getpid()))).string();
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), (std::streamsize)bytes.size());
  }
  auto opened = MappedFile::open(path);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  MappedFile f = std::move(opened.value());  // the descriptor moves with the map
  ASSERT_TRUE(f.drop_resident(f.data(), kBytes));
  std::vector<size_t> offsets(kRows);
  for (size_t& o : offsets) o = (size_t)(rng() % (kBytes / kRow)) * kRow;
  std::vector<char> row(kRow);
  const int64_t before = process_status_bytes("RssFile");
  for (size_t o : offsets) {
    ASSERT_TRUE(f.read_at(f.data() + o, kRow, row.data()));
    ASSERT_EQ(std::memcmp(row.data(), bytes.data() + o, kRow), 0) << "offset " << o;
  }
  const int64_t after_read = process_status_bytes("RssFile");
  uint64_t sum = 0;
  for (size_t o : offsets) sum += (uint8_t)f.data()[o];
  const int64_t after_map = process_status_bytes("RssFile");
  EXPECT_LT(after_read - before, (int64_t)(1 << 20)) << "pread must not map the rows";
  EXPECT_GT(after_map - after_read, (int64_t)(2 << 20)) << "the map brings them back (sum " << sum << ")";
  EXPECT_FALSE(f.read_at(f.data() + kBytes - 10, 20, row.data())) << "past the end of the map";
  EXPECT_FALSE(f.read_at(bytes.data(), 16, row.data())) << "not in the map";
  std::remove(path.c_str());
}

}  // namespace
}  // namespace stride
