#pragma once
// Template values. Python's semantics where chat templates depend on them
// (truthiness, equality, str(), repr()) are in value_ops.h. Lists and dicts are immutable once
// built (the sandbox forbids mutating them), so copies share them; only
// namespace() objects are mutable, and every copy must see the same one.
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "jinja/str.h"

namespace stride::jinja {

class Value;

struct ListData {
  std::vector<Value> items;
  bool tuple = false;      // printed as (a, b)
  bool generator = false;  // map()/select() results: Python generators, which tojson refuses
  std::string python_repr;  // set for range(): printed as "range(0, 4)", refused by tojson
};

struct DictData {
  std::vector<std::pair<std::string, Value>> items;  // insertion order, as Python dicts
  std::unordered_map<std::string, size_t> index;
  bool literal_keys = false;  // keys came from the client

  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
  // The argument at `pos` or named `name`, or nullptr.
  const Value* get(size_t pos, const char* name) const;
};

struct Function {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

struct NamespaceData {
  DictData attrs;
};

// The kinds of Value, in the order of its variant's alternatives.
enum class ValueKind { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Namespace };

// The value itself: its representation and the accessors of each kind. What
// Python does with values (truthiness, str(), ==, <, len(), iteration) is in
// value_ops.h.
class Value {
 public:
  using Kind = ValueKind;
  struct Undef {
    std::string name;  // what was looked up, for error messages
  };

  Value() : v_(Undef{}) {}
  Value(bool b) : v_(b) {}
  // Every integer type is Python's int (bool has its own constructor above).
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  Value(I i) : v_(static_cast<int64_t>(i)) {}
  Value(double d) : v_(d) {}
  Value(Str s) : v_(std::move(s)) {}
  Value(std::string s) : v_(Str(std::move(s))) {}
  Value(const char* s) : v_(Str(std::string(s))) {}
  static Value undefined(std::string name = {}) { return Value(Repr(Undef{std::move(name)})); }
  static Value none() { return Value(Repr(nullptr)); }
  // python_repr: set for range(), printed as "range(0, 4)" and refused by tojson.
  static Value list(std::vector<Value> items, bool tuple = false, bool generator = false,
                    std::string python_repr = {});
  static Value dict(DictData d);
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);
  // A namespace() object: mutable, shared by every copy.
  static Value namespace_object(DictData attrs);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is(Kind k) const { return kind() == k; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const Str& as_str() const { return std::get<Str>(v_); }
  const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(v_); }
  const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(v_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(v_); }
  NamespaceData& as_namespace() const { return *std::get<std::shared_ptr<NamespaceData>>(v_); }
  const std::string& undefined_name() const { return std::get<Undef>(v_).name; }

 private:
  using Repr = std::variant<Undef, std::nullptr_t, bool, int64_t, double, Str, std::shared_ptr<const ListData>,
                            std::shared_ptr<const DictData>, std::shared_ptr<const Function>,
                            std::shared_ptr<NamespaceData>>;
  explicit Value(Repr v) : v_(std::move(v)) {}
  Repr v_;
};

}  // namespace stride::jinja
