#pragma once
// The names templates call: filters (filters.cpp), tests (predicates.cpp),
// attribute access and methods of str/dict/list (methods.cpp), and the
// globals range, dict, namespace, raise_exception, strftime_now (globals.cpp).
#include <string>

#include "jinja/value.h"

namespace stride::jinja {

class Renderer;

Value apply_filter(Renderer& r, const std::string& name, const Value& input, CallArgs& args);
bool apply_test(Renderer& r, const std::string& name, const Value& input, CallArgs& args);
// obj.name (Jinja's getattr: the attribute, else the item, else undefined).
Value get_attribute(Renderer& r, const Value& obj, const std::string& name);
// obj[key] (Jinja's getitem: the item, else the attribute, else undefined).
Value get_item(Renderer& r, const Value& obj, const Value& key);
// obj[start:stop:step], Python semantics; strings keep their client ranges.
Value slice_value(Renderer& r, const Value& obj, const Value& start, const Value& stop, const Value& step);
// A global function (range, dict, namespace, raise_exception, strftime_now), or undefined.
Value global_value(Renderer& r, const std::string& name);
// A bound method of a str (strip, split, format, ...), or undefined.
Value string_method(Renderer& r, const Value& self, const std::string& name);
// Python's str.strip family on a Str; chars null: whitespace.
Str strip_str(const Str& s, const Value* chars, bool left, bool right);

}  // namespace stride::jinja
