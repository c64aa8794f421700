#include "eval/ruler_score.h"

#include <algorithm>
#include <cctype>

namespace stride {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return (char)std::tolower(c); });
  return out;
}

}  // namespace

double score_answer(std::string_view output, const std::vector<std::string>& expected) {
  if (expected.empty()) return 1;
  const std::string text = lower(output);
  size_t found = 0;
  for (const std::string& e : expected) found += text.find(lower(e)) != std::string::npos;
  return (double)found / (double)expected.size();
}

}  // namespace stride
