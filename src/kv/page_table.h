#pragma once
// One layer's page table of one sequence: logical page -> pool page. Windowed
// layers release pages (entry -1) while dense ones keep theirs, so every layer
// has its own. Plain data; the KV manager (and the top-k hot set, which moves
// pages between the pool and the tier) keep `held` in step with the entries.
#include <cstdint>
#include <vector>

namespace stride {

struct PageTable {
  std::vector<int32_t> table;  // [logical pages] physical id or -1
  int64_t held = 0;            // entries != -1
  int64_t scan_from = 0;       // pages before this are settled: released or kept for good

  int64_t size() const { return (int64_t)table.size(); }
  // A new logical page at the end, backed by `page`.
  void push(int32_t page) {
    table.push_back(page);
    ++held;
  }
  // Logical page L (backed now) loses its pool page.
  void unmap(int64_t L) {
    table[(size_t)L] = -1;
    --held;
  }
  // Logical page L (not backed now) gets `page`.
  void map(int64_t L, int32_t page) {
    table[(size_t)L] = page;
    ++held;
  }
};

}  // namespace stride
