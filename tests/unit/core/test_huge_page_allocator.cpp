// HugePageAllocator against what Linux reports for the process
// (/proc/self/smaps, /proc/self/status): large buffers start on a 2 MiB
// boundary in a mapping advised for huge pages ("hg" in VmFlags), become
// resident only as they are written, and are unmapped when freed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/huge_page_allocator.h"
#include "core/process_memory.h"

namespace stride {
namespace {

using HugeBytes = std::vector<uint8_t, HugePageAllocator<uint8_t>>;

// The smaps entry of the mapping holding address a: {start, end, VmFlags};
// start == end == 0 when no mapping holds it.
struct Mapping {
  uintptr_t start = 0, end = 0;
  std::string flags;
};

Mapping mapping_of(const void* a) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  Mapping found, cur;
  if (!f) return found;
  char line[512];
  bool inside = false;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && std::strchr(line, '-') < std::strchr(line, ' ')) {
      cur = Mapping{lo, hi, ""};
      inside = (uintptr_t)a >= lo && (uintptr_t)a < hi;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      cur.flags = line + 8;
      found = cur;
      break;
    }
  }
  std::fclose(f);
  return found;
}

bool has_flag(const std::string& flags, const std::string& flag) {
  std::istringstream words(flags);
  for (std::string w; words >> w;)
    if (w == flag) return true;
  return false;
}

TEST(HugePageAllocator, LargeBuffersStartOnAHugePageAndAreAdvised) {
  const size_t n = 5 * kHugePageBytes + 12345;
  HugeBytes v(n);
  ASSERT_EQ((uintptr_t)v.data() % kHugePageBytes, 0u);
  const Mapping m = mapping_of(v.data());
  ASSERT_NE(m.end, 0u) << "no mapping holds the buffer";
  EXPECT_TRUE(has_flag(m.flags, "hg")) << "VmFlags:" << m.flags;
  EXPECT_GE(m.end, (uintptr_t)v.data() + n);
  // Writable to the last byte; a copy is a buffer of its own with the same bytes.
  for (size_t i = 0; i < n; i += 4093) v[i] = (uint8_t)(i * 7);
  v[n - 1] = 0x5a;
  const HugeBytes copy = v;
  EXPECT_NE(copy.data(), v.data());
  EXPECT_EQ((uintptr_t)copy.data() % kHugePageBytes, 0u);
  EXPECT_EQ(std::memcmp(copy.data(), v.data(), n), 0);
}

TEST(HugePageAllocator, PagesBecomeResidentOnlyAsTheyAreWritten) {
  const size_t n = 64 << 20;
  const int64_t before = process_status_bytes("VmRSS");
  HugeBytes v;
  v.resize(n);
  const int64_t resized = process_status_bytes("VmRSS");
  EXPECT_LT(resized - before, (int64_t)(8 << 20)) << "resize must not write the elements";
  std::memset(v.data(), 1, n);
  const int64_t written = process_status_bytes("VmRSS");
  EXPECT_GT(written - before, (int64_t)(n * 9 / 10));
}

TEST(HugePageAllocator, FreedBuffersLeaveTheAddressSpace) {
  const void* p = nullptr;
  {
    HugeBytes v(3 * kHugePageBytes);
    p = v.data();
    ASSERT_NE(mapping_of(p).end, 0u);
  }
  EXPECT_EQ(mapping_of(p).end, 0u) << "the mapping outlived the buffer";
}

TEST(HugePageAllocator, SmallBuffersComeFromTheHeap) {
  HugeBytes v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (uint8_t)i;
  const Mapping m = mapping_of(v.data());
  ASSERT_NE(m.end, 0u);
  EXPECT_FALSE(has_flag(m.flags, "hg")) << "a 1000-byte buffer got a huge-page mapping: VmFlags:" << m.flags;
  EXPECT_EQ(v[999], (uint8_t)(999 & 0xff));
}

}  // namespace
}  // namespace stride
