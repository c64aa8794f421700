#pragma once
// The tokenizer's vocabulary as a byte trie in depth-first order, built once
// per model: the mask walks it once per step and skips a whole subtree (every
// token sharing a rejected prefix) with one jump to `subtree_end`.
#include <cstdint>
#include <string>
#include <vector>

namespace stride::grammar {

class TokenTrie {
 public:
  struct Node {
    uint32_t subtree_end = 0;  // index just past this node's descendants
    uint32_t tokens_begin = 0, tokens_end = 0;  // tokens whose bytes end here: tokens()[begin, end)
    uint16_t depth = 0;        // bytes from the root (1 for a first byte)
    uint8_t byte = 0;
  };

  // pieces[id]: a token's bytes; "" for a token that never appears in text
  // (control tokens). end_tokens: the end-of-generation ids, allowed only
  // where the grammar is complete.
  TokenTrie(std::vector<std::string> pieces, std::vector<int32_t> end_tokens);

  int n_vocab() const { return (int)pieces_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  const std::string& piece(int32_t id) const { return pieces_[(size_t)id]; }
  bool is_end(int32_t id) const { return id >= 0 && id < n_vocab() && is_end_[(size_t)id]; }
  int max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> pieces_;
  std::vector<int32_t> end_tokens_;
  std::vector<char> is_end_;
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;
  int max_depth_ = 0;
};

}  // namespace stride::grammar
