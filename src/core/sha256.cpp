#include "core/sha256.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

namespace stride {

Expected<std::string> sha256_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    if (errno == ENOENT) return NotFound("no such file: " + path);
    return IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return Internal("sha256: cannot initialise OpenSSL digest");
  }
  std::vector<unsigned char> buf(1 << 20);
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0) {
    if (EVP_DigestUpdate(ctx.get(), buf.data(), n) != 1) return Internal("sha256: update failed");
  }
  if (std::ferror(f.get())) return IoError("read error on " + path);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), md, &len) != 1) return Internal("sha256: final failed");
  std::array<uint8_t, 32> digest{};
  std::memcpy(digest.data(), md, std::min<size_t>(len, digest.size()));
  return sha256_hex(digest);
}

Expected<std::string> sha256_model(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return sha256_file(path);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.is_regular_file(ec)) names.push_back(e.path().filename().string());
  }
  if (ec) return IoError("cannot list " + path + ": " + ec.message());
  std::sort(names.begin(), names.end());
  std::string manifest;
  for (const std::string& name : names) {
    STRIDE_ASSIGN_OR_RETURN(std::string digest, sha256_file((fs::path(path) / name).string()));
    manifest += digest + "  " + name + "\n";
  }
  return sha256_hex(sha256_bytes(manifest.data(), manifest.size()));
}

std::array<uint8_t, 32> sha256_bytes(const void* data, size_t n) {
  std::array<uint8_t, 32> digest{};
  unsigned int len = 0;
  // One-shot EVP_Digest cannot fail for SHA-256 short of memory exhaustion.
  EVP_Digest(data, n, digest.data(), &len, EVP_sha256(), nullptr);
  return digest;
}

std::string sha256_hex(const std::array<uint8_t, 32>& digest) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * digest.size());
  for (const uint8_t b : digest) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

}  // namespace stride
