#include "core/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>

namespace stride {
namespace {

constexpr uintptr_t kSmallPage = 4096;

uintptr_t round_up(uintptr_t v, uintptr_t to) { return (v + to - 1) / to * to; }

}  // namespace

void* huge_page_alloc(size_t bytes) {
  const uintptr_t len = round_up(bytes == 0 ? 1 : bytes, kSmallPage);
  // One huge page more than needed, then the parts before the first 2 MiB
  // boundary and after the buffer go back.
  void* m = mmap(nullptr, len + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t lo = (uintptr_t)m, hi = lo + len + kHugePageBytes;
  const uintptr_t begin = round_up(lo, kHugePageBytes), end = begin + len;
  if (begin > lo) munmap(m, begin - lo);
  if (hi > end) munmap((void*)end, hi - end);
  // Advice only: where THP is off the buffer keeps 4 KiB pages.
  madvise((void*)begin, len, MADV_HUGEPAGE);
  return (void*)begin;
}

void huge_page_free(void* p, size_t bytes) noexcept {
  if (p) munmap(p, round_up(bytes == 0 ? 1 : bytes, kSmallPage));
}

}  // namespace stride
