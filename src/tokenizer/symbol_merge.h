#pragma once
// The merge loop that SentencePiece-style and BPE tokenization share: split
// the text into UTF-8 characters, then repeatedly merge the adjacent pair with
// the highest priority (leftmost on ties) until no pair qualifies.
#include <cstddef>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/utf8.h"

namespace stride {

struct MergeSymbol {
  int prev, next;    // neighbours in the live chain, -1 at the ends
  size_t offset, n;  // bytes of the text; n == 0 once merged away
};

// One symbol per UTF-8 character (by lead byte only, never validated).
inline std::vector<MergeSymbol> split_into_symbols(std::string_view text) {
  std::vector<MergeSymbol> syms;
  for (size_t off = 0; off < text.size();) {
    const size_t n = std::min(utf8::seq_len(static_cast<uint8_t>(text[off])), text.size() - off);
    const int idx = static_cast<int>(syms.size());
    syms.push_back({idx - 1, off + n == text.size() ? -1 : idx + 1, off, n});
    off += n;
  }
  return syms;
}

// priority(left, right) -> std::optional<double>: the pair's priority (higher
// merges first), or nullopt when the pair may not merge.
template <typename Priority>
void merge_symbols(std::string_view text, std::vector<MergeSymbol>& syms, Priority priority) {
  struct Bigram {
    int left, right;
    double priority;
    size_t size;
  };
  const auto later = [](const Bigram& a, const Bigram& b) {
    return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(later)> queue(later);
  const auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::string_view l(text.data() + syms[left].offset, syms[left].n);
    const std::string_view r(text.data() + syms[right].offset, syms[right].n);
    const std::optional<double> p = priority(l, r);
    if (p) queue.push({left, right, *p, l.size() + r.size()});
  };
  for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bg = queue.top();
    queue.pop();
    MergeSymbol& l = syms[bg.left];
    MergeSymbol& r = syms[bg.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != bg.size) continue;  // stale
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) syms[r.next].prev = bg.left;
    try_add(l.prev, bg.left);
    try_add(bg.left, l.next);
  }
}

}  // namespace stride
