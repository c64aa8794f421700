#pragma once
// Test helpers: a byte-level GGUF writer (so corrupt files can be crafted
// field by field), temp files, and a tiny complete llama-style model.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace stride::test {

// Appends little-endian GGUF primitives to a byte string.
struct Bytes {
  std::string b;
  template <typename T>
  Bytes& put(T v) {
    char tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.append(tmp, sizeof(T));
    return *this;
  }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) { u64(s.size()); b += s; return *this; }
};

// Pre-serialised KV entries (key + type + value).
inline std::string kv_u32(const std::string& k, uint32_t v) { Bytes x; x.str(k).u32(4).u32(v); return x.b; }
inline std::string kv_i32(const std::string& k, int32_t v) { Bytes x; x.str(k).u32(5).put(v); return x.b; }
inline std::string kv_f32(const std::string& k, float v) { Bytes x; x.str(k).u32(6).put(v); return x.b; }
inline std::string kv_bool(const std::string& k, bool v) { Bytes x; x.str(k).u32(7).put<uint8_t>(v); return x.b; }
inline std::string kv_str(const std::string& k, const std::string& v) { Bytes x; x.str(k).u32(8).str(v); return x.b; }
inline std::string kv_str_arr(const std::string& k, const std::vector<std::string>& v) {
  Bytes x; x.str(k).u32(9).u32(8).u64(v.size());
  for (const auto& s : v) x.str(s);
  return x.b;
}
inline std::string kv_bool_arr(const std::string& k, const std::vector<bool>& v) {
  Bytes x; x.str(k).u32(9).u32(7).u64(v.size());
  for (bool e : v) x.put<uint8_t>(e);
  return x.b;
}

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = 0;           // ggml type id
  uint64_t nbytes = 0;         // data bytes to reserve
  uint64_t offset = UINT64_MAX;  // UINT64_MAX: next aligned slot
};

struct GGUFSpec {
  uint32_t version = 3;
  std::vector<std::string> kvs;
  std::vector<TensorSpec> tensors;
  uint64_t alignment = 32;
  int64_t tensor_count_override = -1;
  int64_t kv_count_override = -1;
};

// Bytes per element-block of the few types the tests use.
inline uint64_t test_type_bytes(uint32_t type, uint64_t n) {
  switch (type) {
    case 0: return 4 * n;
    case 1: case 30: return 2 * n;
    case 8: return n / 32 * 34;
    case 9: return n / 32 * 36;
    default: return n;
  }
}

inline TensorSpec tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type = 0) {
  uint64_t n = 1;
  for (uint64_t e : ne) n *= e;
  return {name, std::move(ne), type, test_type_bytes(type, n)};
}

inline std::string build_gguf(const GGUFSpec& s) {
  Bytes x;
  x.b = "GGUF";
  x.u32(s.version);
  x.u64(s.tensor_count_override >= 0 ? (uint64_t)s.tensor_count_override : s.tensors.size());
  x.u64(s.kv_count_override >= 0 ? (uint64_t)s.kv_count_override : s.kvs.size());
  for (const auto& kv : s.kvs) x.b += kv;
  uint64_t next = 0;
  std::vector<uint64_t> offsets;
  for (const auto& t : s.tensors) {
    const uint64_t off = t.offset != UINT64_MAX ? t.offset : next;
    offsets.push_back(off);
    next = (off + t.nbytes + s.alignment - 1) / s.alignment * s.alignment;
    x.str(t.name).u32((uint32_t)t.ne.size());
    for (uint64_t e : t.ne) x.u64(e);
    x.u32(t.type).u64(off);
  }
  while (x.b.size() % s.alignment) x.b.push_back('\0');
  const size_t data_start = x.b.size();
  uint64_t end = 0;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    if (s.tensors[i].offset == UINT64_MAX) end = std::max(end, offsets[i] + s.tensors[i].nbytes);
  }
  x.b.resize(data_start + end);
  // Deterministic data so views can be checked byte for byte.
  for (size_t i = data_start; i < x.b.size(); ++i) x.b[i] = (char)(i * 7 + 3);
  return x.b;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/stride_loader_test_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary).write(bytes.data(), (std::streamsize)bytes.size());
    return p;
  }

 private:
  std::string path_;
};

// A complete 1-layer llama-style model, all F32 (n_embd 32, 4 heads, 2 kv
// heads, head_dim 8, n_ff 64, vocab 16). `skip` drops one tensor by name.
inline GGUFSpec tiny_model(const std::string& arch = "llama", const std::string& skip = "") {
  GGUFSpec s;
  s.kvs = {kv_str("general.architecture", arch),
           kv_u32(arch + ".block_count", 1),
           kv_u32(arch + ".embedding_length", 32),
           kv_u32(arch + ".feed_forward_length", 64),
           kv_u32(arch + ".attention.head_count", 4),
           kv_u32(arch + ".attention.head_count_kv", 2),
           kv_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f),
           kv_u32(arch + ".context_length", 128),
           kv_str_arr("tokenizer.ggml.tokens", std::vector<std::string>(16, "t"))};
  std::vector<TensorSpec> t = {
      tensor("token_embd.weight", {32, 16}), tensor("output_norm.weight", {32}),
      tensor("blk.0.attn_norm.weight", {32}), tensor("blk.0.attn_q.weight", {32, 32}),
      tensor("blk.0.attn_k.weight", {32, 16}), tensor("blk.0.attn_v.weight", {32, 16}),
      tensor("blk.0.attn_output.weight", {32, 32}), tensor("blk.0.ffn_norm.weight", {32}),
      tensor("blk.0.ffn_gate.weight", {32, 64}), tensor("blk.0.ffn_up.weight", {32, 64}),
      tensor("blk.0.ffn_down.weight", {64, 32})};
  if (arch == "qwen2") {
    t.push_back(tensor("blk.0.attn_q.bias", {32}));
    t.push_back(tensor("blk.0.attn_k.bias", {16}));
    t.push_back(tensor("blk.0.attn_v.bias", {16}));
  }
  if (arch == "gemma3") {
    t.push_back(tensor("blk.0.attn_q_norm.weight", {8}));
    t.push_back(tensor("blk.0.attn_k_norm.weight", {8}));
    t.push_back(tensor("blk.0.post_attention_norm.weight", {32}));
    t.push_back(tensor("blk.0.post_ffw_norm.weight", {32}));
  }
  for (auto& e : t) {
    if (e.name != skip) s.tensors.push_back(e);
  }
  return s;
}

}  // namespace stride::test
