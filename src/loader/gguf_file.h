#pragma once
// GGUF v2/v3 reader over a memory map. Tensor data is never copied.
// Every count, offset, size and string length is bounds-checked while parsing;
// a bad file yields a Status that names the offending field.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mapped_file.h"
#include "core/status.h"
#include "core/tensor.h"

namespace stride {

enum class GGUFType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
  BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

// One metadata value. Scalars are decoded; arrays keep their element type and
// are decoded on request (arrays of 262k strings are common).
struct GGUFValue {
  GGUFType type = GGUFType::UINT8;
  GGUFType array_type = GGUFType::UINT8;  // when type == ARRAY
  uint64_t array_count = 0;
  uint64_t u = 0;       // unsigned integers, bool
  int64_t i = 0;        // signed integers (also set for unsigned that fit)
  double f = 0;         // floats
  std::string_view s;   // STRING (points into the map)
  const uint8_t* array_data = nullptr;  // first element of an ARRAY in the map
};

class GGUFFile {
 public:
  static Expected<std::unique_ptr<GGUFFile>> open(const std::string& path);
  // Parses an already mapped file (used by tests on in-memory corpora too).
  static Expected<std::unique_ptr<GGUFFile>> parse(MappedFile file);

  uint32_t version() const { return version_; }
  const std::string& path() const { return file_.path(); }
  uint64_t file_size() const { return file_.size(); }
  const MappedFile& file() const { return file_; }

  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  const GGUFValue* find(const std::string& key) const;
  std::vector<std::string> keys() const;

  // Typed getters: NotFound when missing, InvalidArgument on a type mismatch.
  // Integer getters accept any integer type; float getters accept any number.
  Expected<int64_t> get_int(const std::string& key) const;
  Expected<double> get_float(const std::string& key) const;
  Expected<bool> get_bool(const std::string& key) const;
  Expected<std::string> get_string(const std::string& key) const;
  int64_t get_int_or(const std::string& key, int64_t fallback) const;
  double get_float_or(const std::string& key, double fallback) const;
  bool get_bool_or(const std::string& key, bool fallback) const;
  std::string get_string_or(const std::string& key, const std::string& fallback) const;

  Expected<std::vector<std::string>> get_string_array(const std::string& key) const;
  Expected<std::vector<float>> get_float_array(const std::string& key) const;
  Expected<std::vector<int64_t>> get_int_array(const std::string& key) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find_tensor(const std::string& name) const;

 private:
  GGUFFile() = default;
  MappedFile file_;
  uint32_t version_ = 0;
  std::map<std::string, GGUFValue> kv_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> tensor_index_;
  friend class GGUFParser;
};

}  // namespace stride
