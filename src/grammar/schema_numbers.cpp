#include "grammar/schema_numbers.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace stride::grammar {

namespace {

std::string digit_class(char lo, char hi) {
  if (lo == hi) return std::string("\"") + lo + "\"";
  return std::string("[") + lo + "-" + hi + "]";
}

std::string join_alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t k = 0; k < alts.size(); ++k) out += (k ? " | " : " ") + alts[k];
  return out + " )";
}

// Digit strings of one length between lo and hi (equal lengths, lo <= hi),
// any digit allowed where the bounds allow it.
std::string same_length(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return "\"\"";
  if (lo == hi) return "\"" + lo + "\"";
  const size_t rest = lo.size() - 1;
  const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
  const std::string any_rest = rest ? " [0-9]{" + std::to_string(rest) + "}" : "";
  if (lo[0] == hi[0]) return digit_class(lo[0], lo[0]) + " " + same_length(lo_rest, hi_rest);
  if (lo_rest == std::string(rest, '0') && hi_rest == std::string(rest, '9')) {
    return digit_class(lo[0], hi[0]) + any_rest;
  }
  std::vector<std::string> alts;
  alts.push_back(digit_class(lo[0], lo[0]) + " " + same_length(lo_rest, std::string(rest, '9')));
  if (lo[0] + 1 <= hi[0] - 1) alts.push_back(digit_class((char)(lo[0] + 1), (char)(hi[0] - 1)) + any_rest);
  alts.push_back(digit_class(hi[0], hi[0]) + " " + same_length(std::string(rest, '0'), hi_rest));
  return join_alternatives(alts);
}

int64_t pow10(size_t d) {
  int64_t p = 1;
  while (d--) p *= 10;
  return p;
}

// Non-negative integers in [lo, hi] without leading zeros.
std::string unsigned_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  const size_t dlo = std::to_string(lo).size(), dhi = std::to_string(hi).size();
  for (size_t d = dlo; d <= dhi; ++d) {
    const int64_t a = std::max(lo, d == 1 ? 0 : pow10(d - 1));
    const int64_t b = std::min(hi, pow10(d) - 1);
    if (a <= b) alts.push_back(same_length(std::to_string(a), std::to_string(b)));
  }
  return join_alternatives(alts);
}

int64_t clamp_int(double v) {
  return (int64_t)std::clamp(v, (double)-kMaxGeneratedInteger, (double)kMaxGeneratedInteger);
}

}  // namespace

std::string integer_range_gbnf(int64_t lo, int64_t hi) {
  lo = std::max(lo, -kMaxGeneratedInteger);
  hi = std::min(hi, kMaxGeneratedInteger);
  std::vector<std::string> alts;
  if (lo < 0) alts.push_back("\"-\" " + unsigned_range(hi < 0 ? -hi : 1, -lo));
  if (hi >= 0) alts.push_back(unsigned_range(std::max<int64_t>(lo, 0), hi));
  return join_alternatives(alts);
}

Expected<std::string> bounded_number_gbnf(const NumberBounds& b, bool integer) {
  // The integers within the bounds.
  double lo = -(double)kMaxGeneratedInteger, hi = (double)kMaxGeneratedInteger;
  if (b.minimum) lo = std::max(lo, std::ceil(*b.minimum));
  if (b.exclusive_minimum) lo = std::max(lo, std::floor(*b.exclusive_minimum) + 1);
  if (b.maximum) hi = std::min(hi, std::floor(*b.maximum));
  if (b.exclusive_maximum) hi = std::min(hi, std::ceil(*b.exclusive_maximum) - 1);
  std::vector<std::string> alts;
  if (lo <= hi) alts.push_back(integer_range_gbnf(clamp_int(lo), clamp_int(hi)));
  if (!integer) {
    // I.fff with a last digit of 1-9 lies in (I, I + 1): within the bounds
    // when I >= the lower bound (exclusive or not) and I + 1 <= the upper one.
    double flo = 0.0, fhi = (double)kMaxGeneratedInteger - 1;
    if (b.minimum) flo = std::max(flo, std::ceil(*b.minimum));
    if (b.exclusive_minimum) flo = std::max(flo, std::ceil(*b.exclusive_minimum));
    if (b.maximum) fhi = std::min(fhi, std::floor(*b.maximum) - 1);
    if (b.exclusive_maximum) fhi = std::min(fhi, std::floor(*b.exclusive_maximum) - 1);
    if (flo <= fhi) alts.push_back(integer_range_gbnf(clamp_int(flo), clamp_int(fhi)) + " \".\" [0-9]{0,5} [1-9]");
  }
  if (alts.empty()) {
    return InvalidArgument(std::string("no ") + (integer ? "integer" : "number") +
                           " that stride can write satisfies the minimum/maximum bounds");
  }
  return join_alternatives(alts);
}

}  // namespace stride::grammar
