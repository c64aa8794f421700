#pragma once
// Test helper shared by the chat-template tests.
#include <string>

#include "serving/chat_template.h"

namespace stride::serving::testing {

// The rendered text with every client-text span cut out: what the template
// itself wrote, where no client content may appear.
inline std::string outside_literals(const RenderedChat& r) {
  std::string out;
  size_t at = 0;
  for (const TextSpan& s : r.literal) {
    out += r.text.substr(at, s.begin - at);
    at = s.end;
  }
  return out + r.text.substr(at);
}

}  // namespace stride::serving::testing
