#include "engine/stop_text.h"

#include <algorithm>
#include <deque>

namespace stride {

StopMatcher::StopMatcher(const std::vector<std::string>& stops) {
  nodes_.emplace_back();
  for (const auto& s : stops) {
    if (s.empty()) continue;
    int32_t node = 0;
    for (const char ch : s) {
      const uint8_t b = static_cast<uint8_t>(ch);
      int32_t c = child(node, b);
      if (c < 0) {
        c = static_cast<int32_t>(nodes_.size());
        auto& next = nodes_[node].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t{-1})), {b, c});
        Node n;
        n.depth = nodes_[node].depth + 1;
        nodes_.push_back(std::move(n));
      }
      node = c;
    }
    nodes_[node].match_len = nodes_[node].depth;
  }
  // Failure links, breadth first: a node's link is the longest proper suffix
  // of its string that is also in the trie.
  std::deque<int32_t> queue;
  for (const auto& [b, c] : nodes_[0].next) queue.push_back(c);
  while (!queue.empty()) {
    const int32_t u = queue.front();
    queue.pop_front();
    for (const auto& [b, v] : nodes_[u].next) {
      int32_t f = nodes_[u].fail;
      while (f != 0 && child(f, b) < 0) f = nodes_[f].fail;
      const int32_t target = child(f, b);
      nodes_[v].fail = target >= 0 ? target : 0;
      // Terminal nodes keep their own (longest) length; others inherit.
      if (nodes_[v].match_len == 0) nodes_[v].match_len = nodes_[nodes_[v].fail].match_len;
      queue.push_back(v);
    }
  }
  transitions_ = 0;
}

int32_t StopMatcher::child(int32_t node, uint8_t byte) const {
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(byte, int32_t{-1}));
  return (it != next.end() && it->first == byte) ? it->second : -1;
}

int32_t StopMatcher::step(int32_t state, uint8_t byte) const {
  for (;;) {
    ++transitions_;
    const int32_t c = child(state, byte);
    if (c >= 0) return c;
    if (state == 0) return 0;
    state = nodes_[state].fail;
  }
}

bool StopText::append(const std::string& piece) {
  if (stopped_) return true;
  if (matcher_.empty()) {
    text_ += piece;
    return false;
  }
  for (const char ch : piece) {
    text_.push_back(ch);
    state_ = matcher_.step(state_, static_cast<uint8_t>(ch));
    if (const int32_t len = matcher_.match_length(state_); len > 0) {
      text_.resize(text_.size() - len);
      stopped_ = true;
      return true;
    }
  }
  return false;
}

std::string StopText::take_safe() {
  const size_t hold = stopped_ ? 0 : (size_t)matcher_.depth(state_);
  const size_t safe = text_.size() - std::min(hold, text_.size());
  if (safe <= emitted_) return {};
  std::string out = text_.substr(emitted_, safe - emitted_);
  emitted_ = safe;
  return out;
}

std::string StopText::take_all() {
  if (text_.size() <= emitted_) return {};
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace stride
