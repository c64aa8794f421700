// Model keys for encrypted weights: parsing, key files, generation, and the
// process-wide key the loader uses.
#include <openssl/rand.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>

#include "loader/encrypted_file.h"

namespace stride {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::mutex g_key_mu;
std::optional<ModelKey> g_key;
ModelKeyFallback g_fallback;

}  // namespace

Expected<ModelKey> parse_model_key_hex(const std::string& text) {
  std::string hex;
  for (char c : text) {
    if (!std::isspace((unsigned char)c)) hex.push_back(c);
  }
  if (hex.size() != 64) {
    return InvalidArgument("a model key is 64 hex digits (256 bits); got " + std::to_string(hex.size()) + " characters");
  }
  ModelKey key;
  for (size_t i = 0; i < 32; ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgument("a model key is 64 hex digits; found a non-hex character");
    key[i] = uint8_t(hi << 4 | lo);
  }
  return key;
}

Expected<ModelKey> read_model_key_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFound("cannot read key file " + path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.size() == 32) {
    ModelKey key;
    std::memcpy(key.data(), text.data(), 32);
    return key;
  }
  auto key = parse_model_key_hex(text);
  if (!key) return InvalidArgument("key file " + path + ": " + key.status().message() + " (or 32 raw bytes)");
  return key;
}

Expected<std::string> generate_model_key_hex() {
  uint8_t raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return Internal("OpenSSL RAND_bytes failed");
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

void set_model_key(const ModelKey& key) {
  std::lock_guard<std::mutex> lock(g_key_mu);
  g_key = key;
}

void set_model_key_fallback(ModelKeyFallback fallback) {
  std::lock_guard<std::mutex> lock(g_key_mu);
  g_fallback = std::move(fallback);
}

Expected<ModelKey> model_key_for(const std::string& path) {
  ModelKeyFallback fallback;
  {
    std::lock_guard<std::mutex> lock(g_key_mu);
    if (g_key) return *g_key;
    fallback = g_fallback;
  }
  if (!fallback.hex.empty()) {
    auto key = parse_model_key_hex(fallback.hex);
    if (!key) return InvalidArgument("STRIDE_MODEL_KEY: " + key.status().message());
    return key;
  }
  if (!fallback.file.empty()) return read_model_key_file(fallback.file);
  return InvalidArgument(path + " is encrypted: give a key (model_key_file in the config, STRIDE_MODEL_KEY or "
                         "STRIDE_MODEL_KEY_FILE)");
}

}  // namespace stride
