#pragma once
// What Python does with template values, where chat templates depend on it:
// truthiness, type names, numbers, str() and repr(), ==, <, len(), iteration
// and dict keys.
#include <cstdint>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace stride::jinja {

// bool(value), as Python decides it; an undefined value is false.
bool truthy(const Value& v);
// Python's type name, for error messages.
const char* type_name(const Value& v);
// int, float or bool (Python's bool is an int).
bool is_number(const Value& v);
// An int, float or bool as a double; fails for other kinds.
double as_number(const Value& v);

// Dict keys are strings; the other keys Python allows (int, float, bool,
// None) are kept in the same map under an encoding no string can have.
std::string dict_key(const Value& key);
Value key_value(const std::string& key, bool client);

// str(value): strings keep their provenance; containers are printed as Python repr.
Str to_str(const Value& v);
// repr(value), as Python prints it.
std::string repr(const Value& v);
// Python's float repr (shortest round trip: 1.0, 0.1, 1e+16, 1e-05).
std::string float_repr(double d);
bool values_equal(const Value& a, const Value& b);
// a < b: -1, 0, 1; fails for types Python cannot order.
int compare_values(const Value& a, const Value& b);
// The items a for loop walks: list items, dict keys, string characters.
std::vector<Value> iterate(const Value& v);
// len(): code points, items or keys.
int64_t length_of(const Value& v);

}  // namespace stride::jinja
