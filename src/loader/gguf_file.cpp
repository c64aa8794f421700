// GGUF parsing: header, metadata, tensor infos. Every read goes through a
// bounds-checked cursor, and every count is checked against the bytes left
// before anything is reserved, so a hostile file cannot force a huge allocation.
#include "loader/gguf_file.h"

#include <cstring>
#include <limits>

namespace stride {

namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxDims = 4;

// Smallest encoding of one value of each scalar type; strings are a u64 length.
uint64_t min_value_size(GGUFType t) {
  switch (t) {
    case GGUFType::UINT8: case GGUFType::INT8: case GGUFType::BOOL: return 1;
    case GGUFType::UINT16: case GGUFType::INT16: return 2;
    case GGUFType::UINT32: case GGUFType::INT32: case GGUFType::FLOAT32: return 4;
    case GGUFType::UINT64: case GGUFType::INT64: case GGUFType::FLOAT64: return 8;
    case GGUFType::STRING: return 8;
    case GGUFType::ARRAY: return 12;  // element type + count
  }
  return 0;
}

bool valid_type(uint32_t raw) { return raw <= static_cast<uint32_t>(GGUFType::FLOAT64); }

// Little-endian cursor over [data, data + size).
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  Status need(uint64_t n, const std::string& what) const {
    if (n > left()) {
      return Corrupt("GGUF: truncated reading " + what + " at offset " + std::to_string(pos_) +
                     " (need " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                     " left in file of size " + std::to_string(size_) + ")");
    }
    return Status::Ok();
  }
  template <typename T>
  Expected<T> read(const std::string& what) {
    STRIDE_RETURN_IF_ERROR(need(sizeof(T), what));
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // host is little-endian (x86-64)
    pos_ += sizeof(T);
    return v;
  }
  Expected<std::string_view> read_string(const std::string& what) {
    STRIDE_ASSIGN_OR_RETURN(const uint64_t len, read<uint64_t>(what + " length"));
    if (len > left()) {
      return Corrupt("GGUF: " + what + " length " + std::to_string(len) + " at offset " +
                     std::to_string(pos_ - 8) + " exceeds the " + std::to_string(left()) +
                     " bytes left in the file");
    }
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return s;
  }
  Status skip(uint64_t n, const std::string& what) {
    STRIDE_RETURN_IF_ERROR(need(n, what));
    pos_ += n;
    return Status::Ok();
  }
  const uint8_t* here() const { return data_ + pos_; }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace

class GGUFParser {
 public:
  explicit GGUFParser(GGUFFile& f) : f_(f), cur_(f.file_.data(), f.file_.size()) {}

  Status run() {
    STRIDE_RETURN_IF_ERROR(parse_header());
    for (uint64_t i = 0; i < kv_count_; ++i) STRIDE_RETURN_IF_ERROR(parse_kv(i));
    STRIDE_RETURN_IF_ERROR(read_alignment());
    std::vector<uint64_t> offsets;
    offsets.reserve(tensor_count_);  // safe: bounded by bytes left (checked in header)
    f_.tensors_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      TensorView view;
      uint64_t offset = 0;
      STRIDE_RETURN_IF_ERROR(parse_tensor_info(i, view, offset));
      offsets.push_back(offset);
      f_.tensor_index_[view.name] = f_.tensors_.size();
      f_.tensors_.push_back(std::move(view));
    }
    // The data section starts at the next multiple of the alignment.
    const uint64_t pos = cur_.pos();
    const uint64_t data_start = (pos + alignment_ - 1) / alignment_ * alignment_;
    const uint64_t size = f_.file_.size();
    if (tensor_count_ > 0 && data_start > size) {
      return Corrupt("GGUF: data section start " + std::to_string(data_start) +
                     " is past end of file (size " + std::to_string(size) + ")");
    }
    for (size_t i = 0; i < f_.tensors_.size(); ++i) {
      STRIDE_RETURN_IF_ERROR(place_tensor(f_.tensors_[i], offsets[i], data_start));
    }
    return Status::Ok();
  }

 private:
  Status parse_header() {
    if (f_.file_.size() < 4) {
      return Corrupt("GGUF: file too small for magic (size " + std::to_string(f_.file_.size()) + ")");
    }
    STRIDE_ASSIGN_OR_RETURN(const uint32_t magic, cur_.read<uint32_t>("magic"));
    if (std::memcmp(&magic, "GGUF", 4) != 0) return Corrupt("GGUF: bad magic (not a GGUF file)");
    STRIDE_ASSIGN_OR_RETURN(f_.version_, cur_.read<uint32_t>("version"));
    if (f_.version_ == 1) return Unsupported("GGUF: version 1 is not supported (only 2 and 3)");
    if (f_.version_ != 2 && f_.version_ != 3) {
      return Unsupported("GGUF: unknown version " + std::to_string(f_.version_) +
                         " (only 2 and 3 are supported)");
    }
    STRIDE_ASSIGN_OR_RETURN(tensor_count_, cur_.read<uint64_t>("tensor_count"));
    STRIDE_ASSIGN_OR_RETURN(kv_count_, cur_.read<uint64_t>("kv_count"));
    // Each KV needs >= 13 bytes and each tensor info >= 24; reject counts that
    // cannot possibly fit before allocating anything for them.
    if (kv_count_ > cur_.left() / 13) {
      return Corrupt("GGUF: kv_count " + std::to_string(kv_count_) + " cannot fit in the " +
                     std::to_string(cur_.left()) + " bytes left");
    }
    if (tensor_count_ > cur_.left() / 24) {
      return Corrupt("GGUF: tensor_count " + std::to_string(tensor_count_) +
                     " cannot fit in the " + std::to_string(cur_.left()) + " bytes left");
    }
    return Status::Ok();
  }

  Status parse_kv(uint64_t index) {
    const std::string where = "metadata key #" + std::to_string(index);
    STRIDE_ASSIGN_OR_RETURN(const std::string_view key_sv, cur_.read_string(where));
    std::string key(key_sv);
    const std::string what = "metadata '" + key + "'";
    if (f_.kv_.count(key)) return Corrupt("GGUF: duplicate " + what);
    STRIDE_ASSIGN_OR_RETURN(const uint32_t raw_type, cur_.read<uint32_t>(what + " type"));
    if (!valid_type(raw_type)) {
      return Corrupt("GGUF: " + what + " has unknown value type " + std::to_string(raw_type));
    }
    GGUFValue v;
    v.type = static_cast<GGUFType>(raw_type);
    if (v.type == GGUFType::ARRAY) {
      STRIDE_RETURN_IF_ERROR(parse_array(what, v));
    } else {
      STRIDE_RETURN_IF_ERROR(parse_scalar(what, v));
    }
    f_.kv_.emplace(std::move(key), v);
    return Status::Ok();
  }

  Status parse_scalar(const std::string& what, GGUFValue& v) {
    auto get = [&](auto tag, auto assign) -> Status {
      using T = decltype(tag);
      STRIDE_ASSIGN_OR_RETURN(const T x, cur_.read<T>(what + " value"));
      assign(x);
      return Status::Ok();
    };
    auto uns = [&](uint64_t x) {
      v.u = x;
      v.i = x <= (uint64_t)std::numeric_limits<int64_t>::max() ? (int64_t)x : 0;
      v.f = (double)x;
    };
    auto sig = [&](int64_t x) { v.i = x; v.u = (uint64_t)x; v.f = (double)x; };
    switch (v.type) {
      case GGUFType::UINT8: return get(uint8_t{}, uns);
      case GGUFType::INT8: return get(int8_t{}, sig);
      case GGUFType::UINT16: return get(uint16_t{}, uns);
      case GGUFType::INT16: return get(int16_t{}, sig);
      case GGUFType::UINT32: return get(uint32_t{}, uns);
      case GGUFType::INT32: return get(int32_t{}, sig);
      case GGUFType::UINT64: return get(uint64_t{}, uns);
      case GGUFType::INT64: return get(int64_t{}, sig);
      case GGUFType::FLOAT32: return get(float{}, [&](float x) { v.f = x; });
      case GGUFType::FLOAT64: return get(double{}, [&](double x) { v.f = x; });
      case GGUFType::BOOL:
        return get(uint8_t{}, [&](uint8_t x) { v.u = x != 0; v.i = x != 0; });
      case GGUFType::STRING: {
        STRIDE_ASSIGN_OR_RETURN(v.s, cur_.read_string(what + " string"));
        return Status::Ok();
      }
      case GGUFType::ARRAY: break;
    }
    return Internal("GGUF: unreachable scalar type");
  }

  Status parse_array(const std::string& what, GGUFValue& v) {
    STRIDE_ASSIGN_OR_RETURN(const uint32_t et, cur_.read<uint32_t>(what + " array element type"));
    if (!valid_type(et)) {
      return Corrupt("GGUF: " + what + " has unknown array element type " + std::to_string(et));
    }
    v.array_type = static_cast<GGUFType>(et);
    if (v.array_type == GGUFType::ARRAY) {
      return Unsupported("GGUF: " + what + " is a nested array (not supported)");
    }
    STRIDE_ASSIGN_OR_RETURN(v.array_count, cur_.read<uint64_t>(what + " array_count"));
    const uint64_t elem = min_value_size(v.array_type);
    if (v.array_count > cur_.left() / elem) {
      return Corrupt("GGUF: " + what + " array_count " + std::to_string(v.array_count) +
                     " cannot fit in the " + std::to_string(cur_.left()) + " bytes left");
    }
    v.array_data = cur_.here();
    if (v.array_type != GGUFType::STRING) {
      return cur_.skip(v.array_count * elem, what + " array data");
    }
    for (uint64_t i = 0; i < v.array_count; ++i) {
      STRIDE_ASSIGN_OR_RETURN(const std::string_view s,
                              cur_.read_string(what + " element " + std::to_string(i)));
      (void)s;
    }
    return Status::Ok();
  }

  Status read_alignment() {
    alignment_ = kDefaultAlignment;
    if (!f_.has("general.alignment")) return Status::Ok();
    auto al = f_.get_int("general.alignment");
    if (!al.ok()) return Corrupt("GGUF: general.alignment must be an integer");
    if (*al <= 0 || (*al & (*al - 1)) != 0) {
      return Corrupt("GGUF: general.alignment " + std::to_string(*al) +
                     " must be a non-zero power of two");
    }
    alignment_ = (uint64_t)*al;
    return Status::Ok();
  }

  Status parse_tensor_info(uint64_t index, TensorView& view, uint64_t& offset) {
    STRIDE_ASSIGN_OR_RETURN(const std::string_view name,
                            cur_.read_string("tensor #" + std::to_string(index) + " name"));
    view.name = std::string(name);
    const std::string what = "tensor '" + view.name + "'";
    if (f_.tensor_index_.count(view.name)) return Corrupt("GGUF: duplicate " + what);
    STRIDE_ASSIGN_OR_RETURN(const uint32_t n_dims, cur_.read<uint32_t>(what + " n_dims"));
    if (n_dims < 1 || n_dims > (uint32_t)kMaxDims) {
      return Corrupt("GGUF: " + what + " has n_dims " + std::to_string(n_dims) +
                     " (must be 1.." + std::to_string(kMaxDims) + ")");
    }
    view.n_dims = (int)n_dims;
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const std::string ne_name = what + " ne[" + std::to_string(d) + "]";
      STRIDE_ASSIGN_OR_RETURN(const uint64_t ne, cur_.read<uint64_t>(ne_name));
      if (ne == 0 || ne > (uint64_t)std::numeric_limits<int64_t>::max()) {
        return Corrupt("GGUF: " + ne_name + " = " + std::to_string(ne) + " is out of range");
      }
      view.ne[d] = (int64_t)ne;
      if (__builtin_mul_overflow(n_elements, view.ne[d], &n_elements)) {
        return Corrupt("GGUF: " + what + " element count overflows (ne product)");
      }
    }
    STRIDE_ASSIGN_OR_RETURN(const uint32_t type, cur_.read<uint32_t>(what + " type"));
    const DTypeInfo* info = dtype_info(type);
    if (!info) {
      return Unsupported("GGUF: " + what + " has unknown type id " + std::to_string(type));
    }
    view.type = static_cast<DType>(type);
    if (view.ne[0] % info->block_elems != 0) {
      return Corrupt("GGUF: " + what + " ne[0] = " + std::to_string(view.ne[0]) +
                     " is not a multiple of the " + info->name + " block size " +
                     std::to_string(info->block_elems));
    }
    int64_t nbytes = 0;
    if (__builtin_mul_overflow(n_elements / info->block_elems, info->block_bytes, &nbytes)) {
      return Corrupt("GGUF: " + what + " byte size overflows");
    }
    view.nbytes = nbytes;
    STRIDE_ASSIGN_OR_RETURN(offset, cur_.read<uint64_t>(what + " offset"));
    return Status::Ok();
  }

  Status place_tensor(TensorView& view, uint64_t offset, uint64_t data_start) {
    const std::string what = "tensor '" + view.name + "'";
    if (offset % alignment_ != 0) {
      return Corrupt("GGUF: " + what + " offset " + std::to_string(offset) +
                     " is not aligned to " + std::to_string(alignment_));
    }
    const uint64_t size = f_.file_.size();
    uint64_t begin = 0, end = 0;
    if (__builtin_add_overflow(data_start, offset, &begin) ||
        __builtin_add_overflow(begin, (uint64_t)view.nbytes, &end) || end > size) {
      return Corrupt("GGUF: " + what + ": data [offset " + std::to_string(offset) + ", size " +
                     std::to_string(view.nbytes) + "] extends past end of file (size " +
                     std::to_string(size) + ")");
    }
    view.data = f_.file_.data() + begin;
    return Status::Ok();
  }

  GGUFFile& f_;
  Cursor cur_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
};

Expected<std::unique_ptr<GGUFFile>> GGUFFile::open(const std::string& path) {
  STRIDE_ASSIGN_OR_RETURN(MappedFile mf, MappedFile::open(path));
  return parse(std::move(mf));
}

Expected<std::unique_ptr<GGUFFile>> GGUFFile::parse(MappedFile file) {
  std::unique_ptr<GGUFFile> f(new GGUFFile());  // private constructor: no make_unique
  f->file_ = std::move(file);
  GGUFParser parser(*f);
  Status st = parser.run();
  if (!st.ok()) {
    const std::string& p = f->file_.path();
    return Status(st.code(), p.empty() ? st.message() : st.message() + " [" + p + "]");
  }
  return f;
}

}  // namespace stride
