#include "jinja/value.h"

namespace stride::jinja {

const Value* DictData::find(const std::string& key) const {
  auto it = index.find(key);
  return it == index.end() ? nullptr : &items[it->second].second;
}

void DictData::set(const std::string& key, Value value) {
  auto it = index.find(key);
  if (it != index.end()) {
    items[it->second].second = std::move(value);
    return;
  }
  index.emplace(key, items.size());
  items.emplace_back(key, std::move(value));
}

const Value* CallArgs::get(size_t pos, const char* name) const {
  if (pos < positional.size()) return &positional[pos];
  for (const auto& [n, v] : named) {
    if (n == name) return &v;
  }
  return nullptr;
}

Value Value::list(std::vector<Value> items, bool tuple, bool generator, std::string python_repr) {
  auto l = std::make_shared<ListData>();
  l->items = std::move(items);
  l->tuple = tuple;
  l->generator = generator;
  l->python_repr = std::move(python_repr);
  return Value(Repr(std::shared_ptr<const ListData>(std::move(l))));
}

Value Value::dict(DictData d) { return Value(Repr(std::shared_ptr<const DictData>(std::make_shared<DictData>(std::move(d))))); }

Value Value::function(std::string name, std::function<Value(CallArgs&)> fn) {
  return Value(Repr(std::shared_ptr<const Function>(std::make_shared<Function>(Function{std::move(name), std::move(fn)}))));
}

Value Value::namespace_object(DictData attrs) {
  auto ns = std::make_shared<NamespaceData>();
  ns->attrs = std::move(attrs);
  return Value(Repr(std::move(ns)));
}

}  // namespace stride::jinja
