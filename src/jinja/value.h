#pragma once
// Template values, with Python's semantics where chat templates depend on them
// (truthiness, equality, str(), repr()). Lists and dicts are immutable once
// built (the sandbox forbids mutating them), so copies share them; only
// namespace() objects are mutable, and every copy must see the same one.
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

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Namespace };
  struct Undef {
    std::string name;  // what was looked up, for error messages
  };

  Value() : v_(Undef{}) {}
  static Value undefined(std::string name = {}) { return Value(Undef{std::move(name)}); }
  static Value none() { return Value(nullptr); }
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(double d) : v_(d) {}
  Value(Str s) : v_(std::move(s)) {}
  Value(std::string s) : v_(Str(std::move(s))) {}
  Value(const char* s) : v_(Str(std::string(s))) {}
  Value(std::shared_ptr<const ListData> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<const DictData> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<const Function> f) : v_(std::move(f)) {}
  Value(std::shared_ptr<NamespaceData> n) : v_(std::move(n)) {}
  static Value list(std::vector<Value> items, bool tuple = false, bool generator = false);
  static Value dict(DictData d);
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_function() const { return kind() == Kind::Function; }
  bool is_namespace() const { return kind() == Kind::Namespace; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  double as_number() const;  // int, float or bool as a double
  const Str& as_str() const { return std::get<Str>(v_); }
  const std::string& text() const { return std::get<Str>(v_).text; }
  const ListData& as_list() const { return *std::get<std::shared_ptr<const ListData>>(v_); }
  const DictData& as_dict() const { return *std::get<std::shared_ptr<const DictData>>(v_); }
  const Function& as_function() const { return *std::get<std::shared_ptr<const Function>>(v_); }
  NamespaceData& as_namespace() const { return *std::get<std::shared_ptr<NamespaceData>>(v_); }
  const std::string& undefined_name() const { return std::get<Undef>(v_).name; }

  bool truthy() const;
  const char* type_name() const;  // Python's type name, for error messages

 private:
  explicit Value(Undef u) : v_(std::move(u)) {}
  explicit Value(std::nullptr_t) : v_(nullptr) {}
  std::variant<Undef, std::nullptr_t, bool, int64_t, double, Str, std::shared_ptr<const ListData>,
               std::shared_ptr<const DictData>, std::shared_ptr<const Function>, std::shared_ptr<NamespaceData>>
      v_;
};

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
