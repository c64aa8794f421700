#include "kv/shared/shared_page_codec.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>

namespace stride {

namespace {

constexpr char kMagic[4] = {'S', 'T', 'K', 'V'};
constexpr std::string_view kKeyDomain = "stride-kv-shared/1";

PageDigest sha256(const void* data, size_t n) {
  PageDigest out{};
  unsigned int len = 0;
  EVP_Digest(data, n, out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

template <typename T>
void put(std::string& out, const T& v) {
  out.append((const char*)&v, sizeof v);
}

template <typename T>
T get(std::string_view value, size_t at) {
  T v;
  std::memcpy(&v, value.data() + at, sizeof v);
  return v;
}

}  // namespace

PageDigest shared_kv_identity(std::string_view description) {
  return sha256(description.data(), description.size());
}

PageDigest SharedPageKeys::next(const PageDigest& parent, std::span<const int32_t> tokens) const {
  // domain | identity | parent | tokens
  std::string msg;
  msg.reserve(kKeyDomain.size() + 64 + tokens.size_bytes());
  msg.append(kKeyDomain);
  msg.append((const char*)identity_.data(), identity_.size());
  msg.append((const char*)parent.data(), parent.size());
  msg.append((const char*)tokens.data(), tokens.size_bytes());
  PageDigest out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret_.data(), (int)secret_.size(), (const unsigned char*)msg.data(), msg.size(), out.data(),
       &len);
  return out;
}

std::string SharedPageKeys::name(const PageDigest& key) const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s = prefix_;
  for (uint8_t b : key) {
    s += kHex[b >> 4];
    s += kHex[b & 15];
  }
  return s;
}

std::string encode_shared_page(const SharedPageLayout& layout, const PageDigest& key,
                               std::span<const int32_t> tokens, std::span<const uint8_t> payload) {
  std::string out;
  out.reserve(layout.value_bytes());
  out.append(kMagic, sizeof kMagic);
  put(out, kSharedPageVersion);
  out.append((const char*)layout.identity.data(), layout.identity.size());
  out.append((const char*)key.data(), key.size());
  put(out, layout.n_layer);
  put(out, layout.page_size);
  put(out, layout.layer_bytes);
  out.append((const char*)tokens.data(), tokens.size_bytes());
  out.append((const char*)payload.data(), payload.size());
  const PageDigest sum = sha256(out.data(), out.size());
  out.append((const char*)sum.data(), sum.size());
  return out;
}

Expected<std::span<const uint8_t>> decode_shared_page(const SharedPageLayout& layout, const PageDigest& key,
                                                      std::span<const int32_t> tokens, std::string_view value) {
  if (value.size() != layout.value_bytes())
    return Corrupt("shared KV page: " + std::to_string(value.size()) + " bytes, expected " +
                   std::to_string(layout.value_bytes()));
  if (std::memcmp(value.data(), kMagic, sizeof kMagic) != 0) return Corrupt("shared KV page: bad magic");
  if (get<uint32_t>(value, 4) != kSharedPageVersion) return Corrupt("shared KV page: unknown version");
  const size_t body = value.size() - 32;
  if (sha256(value.data(), body) != get<PageDigest>(value, body)) return Corrupt("shared KV page: checksum mismatch");
  if (get<PageDigest>(value, 8) != layout.identity) return Corrupt("shared KV page: another model or KV layout");
  if (get<PageDigest>(value, 40) != key) return Corrupt("shared KV page: stored under another key");
  if (get<uint32_t>(value, 72) != layout.n_layer || get<uint32_t>(value, 76) != layout.page_size ||
      get<uint64_t>(value, 80) != layout.layer_bytes)
    return Corrupt("shared KV page: page geometry differs");
  if (tokens.size() != layout.page_size ||
      std::memcmp(value.data() + kSharedPageHeaderBytes, tokens.data(), tokens.size_bytes()) != 0)
    return Corrupt("shared KV page: other tokens");
  const size_t at = kSharedPageHeaderBytes + tokens.size_bytes();
  return std::span<const uint8_t>((const uint8_t*)value.data() + at, layout.payload_bytes());
}

}  // namespace stride
