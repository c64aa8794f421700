#include "engine/stop_text.h"

#include <algorithm>

namespace stride {

size_t find_stop(const std::string& text, const std::vector<std::string>& stops, size_t from) {
  size_t best = std::string::npos;
  for (const auto& s : stops) {
    if (s.empty()) continue;
    const size_t start = from > s.size() ? from - s.size() : 0;
    const size_t at = text.find(s, start);
    if (at != std::string::npos && at < best) best = at;
  }
  return best;
}

size_t held_back(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const auto& s : stops) {
    if (s.empty()) continue;
    for (size_t len = std::min(s.size() - 1, text.size()); len > hold; --len) {
      if (text.compare(text.size() - len, len, s, 0, len) == 0) {
        hold = len;
        break;
      }
    }
  }
  return hold;
}

bool StopText::append(const std::string& piece) {
  if (stopped_) return true;
  const size_t before = text_.size();
  text_ += piece;
  const size_t at = find_stop(text_, stops_, before);
  if (at != std::string::npos) {
    text_.resize(at);
    stopped_ = true;
  }
  return stopped_;
}

std::string StopText::take_safe() {
  const size_t safe = stopped_ ? text_.size() : text_.size() - held_back(text_, stops_);
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
