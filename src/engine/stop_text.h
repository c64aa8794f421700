#pragma once
// Text release under stop strings: text that might be the start of a stop
// string is held back until it is known not to be. Matching is an
// Aho-Corasick automaton over the stop strings, so each appended byte costs
// amortised O(1) whatever their number and length (a 20,000-byte stop string
// does not make generation quadratic).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace stride {

// The automaton: which stop strings end at the current byte, and how long a
// suffix of the text so far could still grow into one.
class StopMatcher {
 public:
  explicit StopMatcher(const std::vector<std::string>& stops);
  // The state after `byte` (state 0: nothing matched).
  int32_t step(int32_t state, uint8_t byte) const;
  // Length of the longest stop string ending in this state (0: none).
  int32_t match_length(int32_t state) const { return nodes_[state].match_len; }
  // Length of the longest suffix of the text that is a prefix of a stop string.
  int32_t depth(int32_t state) const { return nodes_[state].depth; }
  // Transitions taken so far (trie edges and failure links): at most twice the bytes stepped.
  uint64_t transitions() const { return transitions_; }
  bool empty() const { return nodes_.size() == 1; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> next;  // sorted by byte
    int32_t fail = 0;
    int32_t depth = 0;
    int32_t match_len = 0;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;
  mutable uint64_t transitions_ = 0;
};

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops) : matcher_(stops) {}

  // Appends decoded text. Returns true when a stop string completed (the text
  // is cut before it and nothing more should be generated).
  bool append(const std::string& piece);
  // Text now safe to send, not sent before.
  std::string take_safe();
  // Everything not yet sent (at the end of the stream).
  std::string take_all();
  const std::string& text() const { return text_; }
  const StopMatcher& matcher() const { return matcher_; }

 private:
  StopMatcher matcher_;
  int32_t state_ = 0;
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

}  // namespace stride
