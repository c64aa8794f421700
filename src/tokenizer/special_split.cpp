#include "tokenizer/special_split.h"

#include <algorithm>

namespace stride {

SpecialSplitter::SpecialSplitter(const Vocab& vocab) : vocab_(vocab) {
  nodes_.emplace_back();
  for (int32_t id : vocab.special_tokens) {
    const std::string& t = vocab.text[id];
    int32_t node = 0;
    for (char ch : t) {
      const uint8_t b = static_cast<uint8_t>(ch);
      int32_t c = child(node, b);
      if (c < 0) {
        c = static_cast<int32_t>(nodes_.size());
        auto& next = nodes_[node].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(b, int32_t{-1})),
                    {b, c});
        nodes_.emplace_back();
      }
      node = c;
    }
    // Two ids with the same text: llama.cpp's text lookup names the last one,
    // but partitioning tries each id; the first in priority order wins.
    if (nodes_[node].rank < 0) {
      nodes_[node].rank = static_cast<int32_t>(order_.size());
    }
    order_.push_back(id);
    control_.push_back((vocab.attr[id] & (kAttrControl | kAttrUnknown)) != 0);
  }
}

int32_t SpecialSplitter::child(int32_t node, uint8_t byte) const {
  const auto& next = nodes_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(byte, int32_t{-1}));
  return (it != next.end() && it->first == byte) ? it->second : -1;
}

std::vector<Fragment> SpecialSplitter::split(std::string_view text, bool parse_special) const {
  return split_impl(text, parse_special, {});
}

std::vector<Fragment> SpecialSplitter::split(std::string_view text, const std::vector<TextSpan>& literal) const {
  std::vector<uint32_t> before(text.size() + 1, 0);
  std::vector<uint8_t> is_literal(text.size(), 0);
  for (const TextSpan& s : literal) {
    for (size_t i = s.begin; i < s.end && i < text.size(); ++i) is_literal[i] = 1;
  }
  for (size_t i = 0; i < text.size(); ++i) before[i + 1] = before[i] + is_literal[i];
  return split_impl(text, true, before);
}

std::vector<Fragment> SpecialSplitter::split_impl(std::string_view text, bool parse_special,
                                                  const std::vector<uint32_t>& literal_before) const {
  std::vector<Fragment> out;
  if (text.empty()) return out;

  // Every place a special token occurs: (rank, position).
  std::vector<std::pair<int32_t, uint32_t>> hits;
  for (size_t pos = 0; pos < text.size(); ++pos) {
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(node, static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      const int32_t rank = nodes_[node].rank;
      if (rank < 0) continue;
      const bool in_literal = !literal_before.empty() && literal_before[i + 1] != literal_before[pos];
      if (!control_[rank] || (parse_special && !in_literal)) {
        hits.emplace_back(rank, static_cast<uint32_t>(pos));
      }
    }
  }
  if (hits.empty()) {
    out.push_back({-1, text});
    return out;
  }
  std::sort(hits.begin(), hits.end());

  // Claim in priority order; a hit counts only over wholly unclaimed bytes.
  std::vector<int32_t> claimed(text.size(), -1);  // byte -> rank that owns it
  std::vector<uint32_t> starts;
  for (const auto& [rank, pos] : hits) {
    const size_t len = vocab_.text[order_[rank]].size();
    bool free = true;
    for (size_t i = pos; i < pos + len && free; ++i) free = claimed[i] < 0;
    if (!free) continue;
    std::fill(claimed.begin() + pos, claimed.begin() + pos + len, rank);
    starts.push_back(pos);
  }
  std::sort(starts.begin(), starts.end());

  size_t cursor = 0;
  for (uint32_t pos : starts) {
    if (pos > cursor) out.push_back({-1, text.substr(cursor, pos - cursor)});
    const int32_t id = order_[claimed[pos]];
    out.push_back({id, {}});
    cursor = pos + vocab_.text[id].size();
  }
  if (cursor < text.size()) out.push_back({-1, text.substr(cursor)});
  return out;
}

}  // namespace stride
