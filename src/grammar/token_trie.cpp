#include "grammar/token_trie.h"

#include <algorithm>

namespace stride::grammar {

TokenTrie::TokenTrie(std::vector<std::string> pieces, std::vector<int32_t> end_tokens)
    : pieces_(std::move(pieces)), end_tokens_(std::move(end_tokens)), is_end_(pieces_.size(), 0) {
  for (int32_t id : end_tokens_)
    if (id >= 0 && (size_t)id < pieces_.size()) is_end_[(size_t)id] = 1;
  constexpr size_t kMaxPiece = 65535;  // depth is 16 bits
  std::vector<int32_t> order;
  for (int32_t id = 0; id < (int32_t)pieces_.size(); ++id) {
    const std::string& p = pieces_[(size_t)id];
    if (!p.empty() && p.size() <= kMaxPiece && !is_end_[(size_t)id]) order.push_back(id);
  }
  // Lexicographic byte order: a token's trie path is contiguous and every
  // node is created before its children (pre-order).
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const std::string& x = pieces_[(size_t)a];
    const std::string& y = pieces_[(size_t)b];
    return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end(), [](char c, char d) {
      return (unsigned char)c < (unsigned char)d;
    });
  });
  std::vector<uint32_t> path;  // node index per depth - 1
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& p = pieces_[(size_t)id];
    size_t common = 0;
    if (prev) {
      while (common < prev->size() && common < p.size() && (*prev)[common] == p[common]) ++common;
    }
    while (path.size() > common) {  // close the nodes this token leaves
      nodes_[path.back()].subtree_end = (uint32_t)nodes_.size();
      path.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      Node n;
      n.byte = (uint8_t)p[d];
      n.depth = (uint16_t)(d + 1);
      n.tokens_begin = n.tokens_end = (uint32_t)tokens_.size();
      path.push_back((uint32_t)nodes_.size());
      nodes_.push_back(n);
    }
    Node& last = nodes_[path.back()];
    if (last.tokens_end != tokens_.size()) last.tokens_begin = (uint32_t)tokens_.size();  // first token here
    tokens_.push_back(id);
    last.tokens_end = (uint32_t)tokens_.size();
    max_depth_ = std::max(max_depth_, (int)p.size());
    prev = &p;
  }
  while (!path.empty()) {
    nodes_[path.back()].subtree_end = (uint32_t)nodes_.size();
    path.pop_back();
  }
}

}  // namespace stride::grammar
