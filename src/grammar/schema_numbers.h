#pragma once
// Numbers with bounds as GBNF, for the JSON-schema converter. Integers in a
// range are exact (a digit-by-digit construction over each digit count);
// stride writes at most 15 digits, so an open end stops at ±(10^15 - 1).
// Bounded `number`s are a documented subset: plain integers in range, and
// non-negative integer parts I within the lower bound with I + 1 within the
// upper one, followed by a fraction ("." and 1-6 digits, the last non-zero).
#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace stride::grammar {

constexpr int64_t kMaxGeneratedInteger = 999999999999999;  // 15 digits

// Decimal integers in [lo, hi] (no leading zeros, no "-0"); lo <= hi.
std::string integer_range_gbnf(int64_t lo, int64_t hi);

struct NumberBounds {
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  bool any() const { return minimum || maximum || exclusive_minimum || exclusive_maximum; }
};

// GBNF for a `number` (integer = false) or `integer` within the bounds;
// InvalidArgument when nothing stride writes lies within them.
Expected<std::string> bounded_number_gbnf(const NumberBounds& b, bool integer);

}  // namespace stride::grammar
