// Typed access to GGUF metadata values (scalars decoded at parse time, arrays
// decoded here on request from the bounds-checked bytes in the map).
#include <cstring>
#include <limits>

#include "loader/gguf_file.h"

namespace stride {

namespace {

bool is_int_type(GGUFType t) {
  switch (t) {
    case GGUFType::UINT8: case GGUFType::INT8: case GGUFType::UINT16: case GGUFType::INT16:
    case GGUFType::UINT32: case GGUFType::INT32: case GGUFType::UINT64: case GGUFType::INT64:
      return true;
    default:
      return false;
  }
}

bool is_number_type(GGUFType t) {
  return is_int_type(t) || t == GGUFType::FLOAT32 || t == GGUFType::FLOAT64;
}

const char* type_name(GGUFType t) {
  switch (t) {
    case GGUFType::UINT8: return "uint8";
    case GGUFType::INT8: return "int8";
    case GGUFType::UINT16: return "uint16";
    case GGUFType::INT16: return "int16";
    case GGUFType::UINT32: return "uint32";
    case GGUFType::INT32: return "int32";
    case GGUFType::FLOAT32: return "float32";
    case GGUFType::BOOL: return "bool";
    case GGUFType::STRING: return "string";
    case GGUFType::ARRAY: return "array";
    case GGUFType::UINT64: return "uint64";
    case GGUFType::INT64: return "int64";
    case GGUFType::FLOAT64: return "float64";
  }
  return "?";
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

size_t elem_size(GGUFType t) {
  switch (t) {
    case GGUFType::UINT8: case GGUFType::INT8: case GGUFType::BOOL: return 1;
    case GGUFType::UINT16: case GGUFType::INT16: return 2;
    case GGUFType::UINT32: case GGUFType::INT32: case GGUFType::FLOAT32: return 4;
    default: return 8;
  }
}

// Element i of a numeric array as double (ok for floats and all integers).
double number_at(GGUFType t, const uint8_t* base, uint64_t i) {
  const uint8_t* p = base + i * elem_size(t);
  switch (t) {
    case GGUFType::UINT8: return load<uint8_t>(p);
    case GGUFType::INT8: return load<int8_t>(p);
    case GGUFType::UINT16: return load<uint16_t>(p);
    case GGUFType::INT16: return load<int16_t>(p);
    case GGUFType::UINT32: return load<uint32_t>(p);
    case GGUFType::INT32: return load<int32_t>(p);
    case GGUFType::UINT64: return (double)load<uint64_t>(p);
    case GGUFType::INT64: return (double)load<int64_t>(p);
    case GGUFType::FLOAT32: return load<float>(p);
    case GGUFType::FLOAT64: return load<double>(p);
    case GGUFType::BOOL: return load<uint8_t>(p) != 0;
    default: return 0;
  }
}

Status mismatch(const std::string& key, const char* want, const GGUFValue& v) {
  std::string got = type_name(v.type);
  if (v.type == GGUFType::ARRAY) got += std::string(" of ") + type_name(v.array_type);
  return InvalidArgument("GGUF metadata '" + key + "': expected " + want + ", found " + got);
}

}  // namespace

const GGUFValue* GGUFFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

std::vector<std::string> GGUFFile::keys() const {
  std::vector<std::string> out;
  out.reserve(kv_.size());
  for (const auto& [k, v] : kv_) out.push_back(k);
  return out;
}

const TensorView* GGUFFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Expected<int64_t> GGUFFile::get_int(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  if (!is_int_type(v->type)) return mismatch(key, "an integer", *v);
  if (v->type == GGUFType::UINT64 && v->u > (uint64_t)std::numeric_limits<int64_t>::max()) {
    return InvalidArgument("GGUF metadata '" + key + "': value " + std::to_string(v->u) +
                           " does not fit in int64");
  }
  return v->i;
}

Expected<double> GGUFFile::get_float(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  if (!is_number_type(v->type)) return mismatch(key, "a number", *v);
  return v->f;
}

Expected<bool> GGUFFile::get_bool(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  if (v->type != GGUFType::BOOL) return mismatch(key, "a bool", *v);
  return v->u != 0;
}

Expected<std::string> GGUFFile::get_string(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  if (v->type != GGUFType::STRING) return mismatch(key, "a string", *v);
  return std::string(v->s);
}

int64_t GGUFFile::get_int_or(const std::string& key, int64_t fallback) const {
  auto r = get_int(key);
  return r.ok() ? *r : fallback;
}
double GGUFFile::get_float_or(const std::string& key, double fallback) const {
  auto r = get_float(key);
  return r.ok() ? *r : fallback;
}
bool GGUFFile::get_bool_or(const std::string& key, bool fallback) const {
  auto r = get_bool(key);
  return r.ok() ? *r : fallback;
}
std::string GGUFFile::get_string_or(const std::string& key, const std::string& fallback) const {
  auto r = get_string(key);
  return r.ok() ? *r : fallback;
}

Expected<std::vector<std::string>> GGUFFile::get_string_array(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  if (v->type != GGUFType::ARRAY || v->array_type != GGUFType::STRING) {
    return mismatch(key, "an array of string", *v);
  }
  // The parser walked every element, so lengths are known to be in bounds.
  std::vector<std::string> out;
  out.reserve(v->array_count);
  const uint8_t* p = v->array_data;
  for (uint64_t i = 0; i < v->array_count; ++i) {
    const uint64_t len = load<uint64_t>(p);
    out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
    p += 8 + len;
  }
  return out;
}

Expected<std::vector<float>> GGUFFile::get_float_array(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  if (v->type != GGUFType::ARRAY || !is_number_type(v->array_type)) {
    return mismatch(key, "an array of numbers", *v);
  }
  std::vector<float> out(v->array_count);
  for (uint64_t i = 0; i < v->array_count; ++i) {
    out[i] = (float)number_at(v->array_type, v->array_data, i);
  }
  return out;
}

Expected<std::vector<int64_t>> GGUFFile::get_int_array(const std::string& key) const {
  const GGUFValue* v = find(key);
  if (!v) return NotFound("GGUF metadata '" + key + "' not found");
  // Bool arrays are accepted too: per-layer flags are often stored that way.
  if (v->type != GGUFType::ARRAY ||
      !(is_int_type(v->array_type) || v->array_type == GGUFType::BOOL)) {
    return mismatch(key, "an array of integers", *v);
  }
  std::vector<int64_t> out(v->array_count);
  for (uint64_t i = 0; i < v->array_count; ++i) {
    const uint8_t* p = v->array_data + i * elem_size(v->array_type);
    switch (v->array_type) {
      case GGUFType::UINT64: {
        const uint64_t u = load<uint64_t>(p);
        if (u > (uint64_t)std::numeric_limits<int64_t>::max()) {
          return InvalidArgument("GGUF metadata '" + key + "': element " + std::to_string(i) +
                                 " does not fit in int64");
        }
        out[i] = (int64_t)u;
        break;
      }
      case GGUFType::INT64: out[i] = load<int64_t>(p); break;
      default: out[i] = (int64_t)number_at(v->array_type, v->array_data, i); break;
    }
  }
  return out;
}

}  // namespace stride
