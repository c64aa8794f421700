#include "loader/safetensors.h"

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace stride {

namespace {

using nlohmann::json;

Status parse_entry(const std::string& name, const json& e, const uint8_t* data,
                   uint64_t data_size, TensorView& view) {
  const std::string what = "safetensors: tensor '" + name + "'";
  if (!e.is_object()) return Corrupt(what + " entry is not an object");
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) return Corrupt(what + " has no string 'dtype'");
  const std::string dtype = dt->get<std::string>();
  int64_t elem = 0;
  if (dtype == "F32") { view.type = DType::F32; elem = 4; }
  else if (dtype == "F16") { view.type = DType::F16; elem = 2; }
  else if (dtype == "BF16") { view.type = DType::BF16; elem = 2; }
  else return Unsupported(what + " has dtype " + dtype + " (supported: F32, F16, BF16)");

  auto sh = e.find("shape");
  if (sh == e.end() || !sh->is_array()) return Corrupt(what + " has no 'shape' array");
  if (sh->size() > 4) {
    return Unsupported(what + " shape has " + std::to_string(sh->size()) + " dims (max 4)");
  }
  view.n_dims = sh->empty() ? 1 : (int)sh->size();
  view.ne = {1, 1, 1, 1};
  int64_t n_elements = 1;
  for (size_t d = 0; d < sh->size(); ++d) {
    const json& v = (*sh)[d];
    if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 ||
        v.get<uint64_t>() > (uint64_t)std::numeric_limits<int64_t>::max()) {
      return Corrupt(what + " shape[" + std::to_string(d) + "] must be a positive integer");
    }
    const int64_t n = (int64_t)v.get<uint64_t>();
    view.ne[sh->size() - 1 - d] = n;  // row-major HF -> ggml order
    if (__builtin_mul_overflow(n_elements, n, &n_elements)) {
      return Corrupt(what + " shape element count overflows");
    }
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(n_elements, elem, &nbytes)) {
    return Corrupt(what + " byte size overflows");
  }

  auto off = e.find("data_offsets");
  if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    return Corrupt(what + " data_offsets must be [begin, end] non-negative integers");
  }
  const uint64_t begin = (*off)[0].get<uint64_t>(), end = (*off)[1].get<uint64_t>();
  if (begin > end) {
    return Corrupt(what + " data_offsets begin " + std::to_string(begin) + " > end " +
                   std::to_string(end));
  }
  if (end > data_size) {
    return Corrupt(what + " data_offsets [" + std::to_string(begin) + ", " +
                   std::to_string(end) + "] extend past end of data (size " +
                   std::to_string(data_size) + ")");
  }
  if (end - begin != (uint64_t)nbytes) {
    return Corrupt(what + " data_offsets span " + std::to_string(end - begin) +
                   " bytes but shape and dtype need " + std::to_string(nbytes));
  }
  view.name = name;
  view.data = data + begin;
  view.nbytes = nbytes;
  return Status::Ok();
}

bool is_integer_buffer(const json& e) {
  if (!e.is_object()) return false;
  auto dt = e.find("dtype");
  if (dt == e.end() || !dt->is_string()) return false;
  const std::string d = dt->get<std::string>();
  return d == "I64" || d == "I32" || d == "I16" || d == "I8" || d == "U8" || d == "BOOL";
}

Expected<std::vector<TensorView>> parse_impl(const MappedFile& file, bool skip_integer_buffers) {
  const uint64_t size = file.size();
  if (size < 8) {
    return Corrupt("safetensors: file too small for the header length (size " +
                   std::to_string(size) + ")");
  }
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);
  if (header_len > kMaxSafetensorsHeader) {
    return Corrupt("safetensors: header length " + std::to_string(header_len) +
                   " exceeds the limit of " + std::to_string(kMaxSafetensorsHeader));
  }
  if (header_len > size - 8) {
    return Corrupt("safetensors: header length " + std::to_string(header_len) +
                   " extends past end of file (size " + std::to_string(size) + ")");
  }
  const char* hbegin = reinterpret_cast<const char*>(file.data() + 8);
  json header = json::parse(hbegin, hbegin + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return Corrupt("safetensors: header is not valid JSON");
  if (!header.is_object()) return Corrupt("safetensors: header is not a JSON object");
  const uint8_t* data = file.data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<TensorView> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__" || (skip_integer_buffers && is_integer_buffer(it.value()))) continue;
    TensorView view;
    STRIDE_RETURN_IF_ERROR(parse_entry(it.key(), it.value(), data, data_size, view));
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace

Expected<std::vector<TensorView>> parse_safetensors(const MappedFile& file, bool skip_integer_buffers) {
  Expected<std::vector<TensorView>> r = Internal("unset");
  try {
    r = parse_impl(file, skip_integer_buffers);
  } catch (const std::exception& e) {  // json type errors: keep them inside the loader
    r = Corrupt(std::string("safetensors: malformed header: ") + e.what());
  }
  if (!r.ok() && !file.path().empty()) {
    return Status(r.status().code(), r.status().message() + " [" + file.path() + "]");
  }
  return r;
}

}  // namespace stride
