#pragma once
// Memory for large buffers that every decode step streams once (the repacked
// weights): anonymous memory starting at a 2 MiB boundary and advised for
// transparent huge pages (MADV_HUGEPAGE), so that it is backed by 2 MiB pages
// wherever the kernel allows THP ("always" or "madvise"). With 4 KiB pages a
// streaming read crosses a page every 64 cache lines: each crossing is a TLB
// miss (a two-level walk inside a VM) and a boundary the hardware prefetchers
// stop at. On a 2-vCPU Zen 4 guest (THP "madvise") a one-core read loop
// streams about 1.25x faster from 2 MiB pages (docs/performance.md).
//
// Elements are default-initialised, so a resized vector's pages become
// resident only as they are written (fresh anonymous memory reads as zeros).
#include <cstddef>
#include <new>
#include <utility>

namespace stride {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// Buffers of at least this many bytes get their own huge-page mapping;
// smaller ones come from operator new (a mapping of their own would waste
// the rest of its 2 MiB page).
constexpr size_t kHugePageMinBytes = kHugePageBytes;

// A mapping of `bytes` (rounded up to 4 KiB pages) starting at a 2 MiB
// boundary, advised MADV_HUGEPAGE; nullptr when the mapping fails. The last
// partial 2 MiB of the mapping stays on 4 KiB pages, so no page is resident
// beyond the buffer. Release with huge_page_free(p, bytes).
void* huge_page_alloc(size_t bytes);
void huge_page_free(void* p, size_t bytes) noexcept;

template <class T>
struct HugePageAllocator {
  using value_type = T;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageMinBytes) return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
    void* p = huge_page_alloc(bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageMinBytes) ::operator delete(p, std::align_val_t{alignof(T)});
    else huge_page_free(p, bytes);
  }

  template <class U>
  void construct(U* p) noexcept {
    ::new ((void*)p) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new ((void*)p) U(std::forward<A>(a)...);
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

}  // namespace stride
