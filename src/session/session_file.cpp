#include "session/session_file.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/sha256.h"

namespace stride {

namespace {

using json = nlohmann::json;

constexpr size_t kMagicBytes = 8;
constexpr size_t kPreamble = kMagicBytes + 4 + 4;  // magic, version, header bytes
constexpr size_t kDigestBytes = 32;
constexpr uint32_t kMaxHeaderBytes = 1u << 20;
constexpr int64_t kMaxTokens = int64_t{1} << 26;

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back((char)((v >> (8 * i)) & 0xff));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= (uint32_t)(uint8_t)p[i] << (8 * i);
  return v;
}
void put_i32s(std::string& out, const int32_t* v, size_t n) {
  for (size_t i = 0; i < n; ++i) put_u32(out, (uint32_t)v[i]);
}

json header_json(const SessionFile& s) {
  const SessionIdentity& id = s.identity;
  return json{{"name", s.name},
              {"created", s.created},
              {"model_sha256", id.model_sha256},
              {"model_version", id.model_version},
              {"architecture", id.architecture},
              {"n_vocab", id.n_vocab},
              {"n_layer", id.n_layer},
              {"n_kv_heads", id.n_kv_heads},
              {"head_dim_k", id.head_dim_k},
              {"head_dim_v", id.head_dim_v},
              {"page_size", id.page_size},
              {"kv_storage", id.kv_storage},
              {"layer_policies", id.layer_policies},
              {"n_tokens", (int64_t)s.kv.tokens.size()},
              {"n_pages", s.kv.n_pages},
              {"image_bytes", s.kv.image_bytes},
              {"n_page_refs", (int64_t)s.kv.pages.size()}};
}

// Typed reads from the header; false (and *why set) on a missing or mistyped field.
struct HeaderReader {
  const json& h;
  std::string why;
  bool str(const char* key, std::string& out) {
    auto it = h.find(key);
    if (it == h.end() || !it->is_string()) return fail(key);
    out = it->get<std::string>();
    return true;
  }
  template <typename T>
  bool num(const char* key, T& out, int64_t lo, int64_t hi) {
    auto it = h.find(key);
    if (it == h.end() || !it->is_number_integer()) return fail(key);
    const int64_t v = it->is_number_unsigned() && it->get<uint64_t>() > (uint64_t)hi ? hi + 1 : it->get<int64_t>();
    if (v < lo || v > hi) return fail(key);
    out = (T)v;
    return true;
  }
  bool fail(const char* key) {
    if (why.empty()) why = std::string("header field '") + key + "' is missing or out of range";
    return false;
  }
};

// The first field where `got` differs from `want`, or "".
std::string first_difference(const SessionIdentity& got, const SessionIdentity& want) {
  if (got.model_sha256 != want.model_sha256)
    return "another model (sha256 " + got.model_sha256 + ", serving " + want.model_sha256 + ")";
  if (got.architecture != want.architecture) return "another architecture (" + got.architecture + ")";
  if (got.n_vocab != want.n_vocab) return "another vocabulary size";
  if (got.n_layer != want.n_layer || got.n_kv_heads != want.n_kv_heads || got.head_dim_k != want.head_dim_k ||
      got.head_dim_v != want.head_dim_v)
    return "other layer or head dimensions";
  if (got.page_size != want.page_size) return "another KV page size (" + std::to_string(got.page_size) + ")";
  if (got.kv_storage != want.kv_storage) return "another KV type (" + got.kv_storage + ", serving " + want.kv_storage + ")";
  if (got.layer_policies != want.layer_policies) {
    for (size_t l = 0; l < got.layer_policies.size() && l < want.layer_policies.size(); ++l)
      if (got.layer_policies[l] != want.layer_policies[l])
        return "another attention policy on layer " + std::to_string(l) + " (" + got.layer_policies[l] + ", serving " +
               want.layer_policies[l] + ")";
    return "another attention policy";
  }
  if (got.model_version != want.model_version) return "another model version (" + got.model_version + ")";
  return "";
}

}  // namespace

int64_t encoded_session_bytes(const SessionFile& s) {
  return (int64_t)(kPreamble + header_json(s).dump().size()) + 4 * (int64_t)s.kv.tokens.size() +
         8 * (int64_t)s.kv.pages.size() + (int64_t)s.kv.images.size() + (int64_t)kDigestBytes;
}

std::string encode_session(const SessionFile& s) {
  const std::string header = header_json(s).dump();
  std::string out;
  out.reserve((size_t)encoded_session_bytes(s));
  out.append(kSessionMagic, kMagicBytes);
  put_u32(out, kSessionFormatVersion);
  put_u32(out, (uint32_t)header.size());
  out += header;
  put_i32s(out, s.kv.tokens.data(), s.kv.tokens.size());
  for (const KvSnapshot::PageRef& r : s.kv.pages) {
    put_u32(out, (uint32_t)r.layer);
    put_u32(out, (uint32_t)r.page);
  }
  out.append((const char*)s.kv.images.data(), s.kv.images.size());
  const std::array<uint8_t, 32> digest = sha256_bytes(out.data(), out.size());
  out.append((const char*)digest.data(), digest.size());
  return out;
}

Expected<SessionFile> decode_session(std::string_view bytes, const SessionIdentity& expected) {
  if (bytes.size() < kPreamble + kDigestBytes) return Corrupt("session file truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), kSessionMagic, kMagicBytes) != 0) return Corrupt("not a stride session file (bad magic)");
  const uint32_t version = get_u32(bytes.data() + kMagicBytes);
  if (version != kSessionFormatVersion)
    return Corrupt("session file format " + std::to_string(version) + " (this server reads " +
                   std::to_string(kSessionFormatVersion) + ")");
  const size_t body = bytes.size() - kDigestBytes;
  const std::array<uint8_t, 32> digest = sha256_bytes(bytes.data(), body);
  if (std::memcmp(digest.data(), bytes.data() + body, kDigestBytes) != 0)
    return Corrupt("session file checksum mismatch (corrupt or truncated)");
  const uint32_t header_bytes = get_u32(bytes.data() + kMagicBytes + 4);
  if (header_bytes > kMaxHeaderBytes || kPreamble + header_bytes > body) return Corrupt("session header size out of range");
  const json h = json::parse(bytes.substr(kPreamble, header_bytes), nullptr, /*allow_exceptions=*/false);
  if (!h.is_object()) return Corrupt("session header is not a JSON object");

  SessionFile s;
  SessionIdentity& id = s.identity;
  HeaderReader r{h, {}};
  int64_t n_tokens = 0, n_refs = 0;
  const bool ok = r.str("name", s.name) && r.num("created", s.created, 0, INT64_MAX) &&
                  r.str("model_sha256", id.model_sha256) && r.str("model_version", id.model_version) &&
                  r.str("architecture", id.architecture) && r.num("n_vocab", id.n_vocab, 1, INT32_MAX) &&
                  r.num("n_layer", id.n_layer, 1, 4096) && r.num("n_kv_heads", id.n_kv_heads, 1, 4096) &&
                  r.num("head_dim_k", id.head_dim_k, 1, 65536) && r.num("head_dim_v", id.head_dim_v, 1, 65536) &&
                  r.num("page_size", id.page_size, 1, 65536) && r.str("kv_storage", id.kv_storage) &&
                  r.num("n_tokens", n_tokens, 0, kMaxTokens) && r.num("n_pages", s.kv.n_pages, 0, kMaxTokens) &&
                  r.num("image_bytes", s.kv.image_bytes, 1, int64_t{1} << 30) &&
                  r.num("n_page_refs", n_refs, 0, kMaxTokens * 4096);
  if (!ok) return Corrupt("session " + r.why);
  const auto pol = h.find("layer_policies");
  if (pol == h.end() || !pol->is_array() || pol->size() != (size_t)id.n_layer) return Corrupt("session header field 'layer_policies' is invalid");
  for (const json& p : *pol) {
    if (!p.is_string()) return Corrupt("session header field 'layer_policies' is invalid");
    id.layer_policies.push_back(p.get<std::string>());
  }
  if (std::string diff = first_difference(id, expected); !diff.empty())
    return InvalidArgument("the session was saved with " + diff);

  // Sizes: every count is bounded above, so these products cannot overflow.
  const size_t payload = body - kPreamble - header_bytes;
  const uint64_t want = 4 * (uint64_t)n_tokens + 8 * (uint64_t)n_refs;
  if (want > payload || (uint64_t)n_refs * (uint64_t)s.kv.image_bytes != payload - want)
    return Corrupt("session payload size does not match its header");
  if (s.kv.n_pages * id.page_size > n_tokens) return Corrupt("session covers more pages than it has tokens");
  s.kv.page_size = id.page_size;
  const char* p = bytes.data() + kPreamble + header_bytes;
  s.kv.tokens.resize((size_t)n_tokens);
  for (int64_t i = 0; i < n_tokens; ++i, p += 4) {
    s.kv.tokens[(size_t)i] = (int32_t)get_u32(p);
    if (s.kv.tokens[(size_t)i] < 0 || s.kv.tokens[(size_t)i] >= id.n_vocab) return Corrupt("session token id out of range");
  }
  s.kv.pages.resize((size_t)n_refs);
  for (int64_t i = 0; i < n_refs; ++i, p += 8) {
    KvSnapshot::PageRef& ref = s.kv.pages[(size_t)i];
    ref.layer = (int32_t)get_u32(p);
    ref.page = (int32_t)get_u32(p + 4);
    const KvSnapshot::PageRef* prev = i ? &s.kv.pages[(size_t)i - 1] : nullptr;
    // Sorted by (layer, page) and unique: no page is loaded twice.
    if (ref.layer < 0 || ref.layer >= id.n_layer || ref.page < 0 || ref.page >= s.kv.n_pages ||
        (prev && (prev->layer > ref.layer || (prev->layer == ref.layer && prev->page >= ref.page))))
      return Corrupt("session page list is invalid");
  }
  s.kv.images.assign((const uint8_t*)p, (const uint8_t*)p + (payload - want));
  return s;
}

}  // namespace stride
