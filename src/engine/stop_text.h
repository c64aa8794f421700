#pragma once
// Text release under stop strings: text that might be the start of a stop
// string is held back until it is known not to be.
#include <cstddef>
#include <string>
#include <vector>

namespace stride {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Appends decoded text. Returns true when a stop string completed (the text
  // is cut before it and nothing more should be generated).
  bool append(const std::string& piece);
  // Text now safe to send, not sent before.
  std::string take_safe();
  // Everything not yet sent (at the end of the stream).
  std::string take_all();
  const std::string& text() const { return text_; }

 private:
  std::vector<std::string> stops_;
  std::string text_;
  size_t emitted_ = 0;
  bool stopped_ = false;
};

// Position of the earliest stop string in `text` that ends at or after `from`, or npos.
size_t find_stop(const std::string& text, const std::vector<std::string>& stops, size_t from);
// Length of the longest suffix of `text` that is a proper prefix of a stop string.
size_t held_back(const std::string& text, const std::vector<std::string>& stops);

}  // namespace stride
