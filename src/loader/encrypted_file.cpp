#include "loader/encrypted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/atomic_file.h"

namespace stride {

namespace {

constexpr size_t kMagicBytes = 10;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kHeaderBytes = kMagicBytes + 4 + 4 + 8 + kNonceBytes;  // 38
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kMaxChunkBytes = 1u << 30;  // one EVP update takes an int
constexpr uint64_t kKeyCheckIndex = ~uint64_t(0);

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

struct Header {
  uint32_t chunk_bytes = 0;
  uint64_t plaintext_bytes = 0;
  std::array<uint8_t, kHeaderBytes> raw{};  // as on disk; part of every AAD

  uint64_t n_chunks() const {
    return plaintext_bytes == 0 ? 1 : (plaintext_bytes + chunk_bytes - 1) / chunk_bytes;
  }
  uint64_t file_bytes() const { return kHeaderBytes + kTagBytes + plaintext_bytes + n_chunks() * kTagBytes; }
  const uint8_t* base_nonce() const { return raw.data() + kHeaderBytes - kNonceBytes; }
};

Header make_header(uint32_t chunk_bytes, uint64_t plaintext_bytes, const uint8_t nonce[kNonceBytes]) {
  Header h;
  h.chunk_bytes = chunk_bytes;
  h.plaintext_bytes = plaintext_bytes;
  uint8_t* p = h.raw.data();
  std::memcpy(p, kEncryptedMagic, kMagicBytes);
  put_le(p + 10, kFormatVersion, 4);
  put_le(p + 14, chunk_bytes, 4);
  put_le(p + 18, plaintext_bytes, 8);
  std::memcpy(p + 26, nonce, kNonceBytes);
  return h;
}

Expected<Header> parse_header(const uint8_t* data, size_t size, const std::string& what) {
  if (size < kHeaderBytes || std::memcmp(data, kEncryptedMagic, kMagicBytes) != 0) {
    return Corrupt(what + ": not a stride encrypted model (no STRIDEENC1 header)");
  }
  Header h;
  std::memcpy(h.raw.data(), data, kHeaderBytes);
  const uint32_t version = (uint32_t)get_le(data + 10, 4);
  if (version != kFormatVersion) {
    return Unsupported(what + ": encrypted format version " + std::to_string(version) + " (this build reads 1)");
  }
  h.chunk_bytes = (uint32_t)get_le(data + 14, 4);
  h.plaintext_bytes = get_le(data + 18, 8);
  if (h.chunk_bytes == 0 || h.chunk_bytes > kMaxChunkBytes) {
    return Corrupt(what + ": bad chunk size " + std::to_string(h.chunk_bytes) + " in the header");
  }
  if (h.plaintext_bytes > (uint64_t(1) << 50)) return Corrupt(what + ": absurd plaintext size in the header");
  if (h.file_bytes() != size) {
    return Corrupt(what + ": " + std::to_string(size) + " bytes, but its header implies " +
                   std::to_string(h.file_bytes()) + " (the file is truncated, extended or its header was modified)");
  }
  return h;
}

// Base nonce XOR (0^4 || be64(index)).
std::array<uint8_t, kNonceBytes> chunk_nonce(const Header& h, uint64_t index) {
  std::array<uint8_t, kNonceBytes> n;
  std::memcpy(n.data(), h.base_nonce(), kNonceBytes);
  for (int i = 0; i < 8; ++i) n[kNonceBytes - 1 - i] ^= uint8_t(index >> (8 * i));
  return n;
}

// Header || be64(index) || final flag.
std::array<uint8_t, kHeaderBytes + 9> chunk_aad(const Header& h, uint64_t index, bool final_chunk) {
  std::array<uint8_t, kHeaderBytes + 9> a;
  std::memcpy(a.data(), h.raw.data(), kHeaderBytes);
  for (int i = 0; i < 8; ++i) a[kHeaderBytes + i] = uint8_t(index >> (8 * (7 - i)));
  a[kHeaderBytes + 8] = final_chunk ? 1 : 0;
  return a;
}

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, void (*)(EVP_CIPHER_CTX*)>;
CipherCtx new_ctx() { return CipherCtx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free); }

// One GCM message: out gets n bytes, tag 16 bytes.
bool gcm_seal(EVP_CIPHER_CTX* ctx, const ModelKey& key, const uint8_t* nonce, const uint8_t* aad, size_t aad_n,
              const uint8_t* in, size_t n, uint8_t* out, uint8_t* tag) {
  int len = 0;
  if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key.data(), nonce) != 1) return false;
  if (EVP_EncryptUpdate(ctx, nullptr, &len, aad, (int)aad_n) != 1) return false;
  if (n > 0 && EVP_EncryptUpdate(ctx, out, &len, in, (int)n) != 1) return false;
  if (EVP_EncryptFinal_ex(ctx, out + (n > 0 ? len : 0), &len) != 1) return false;
  return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, (int)kTagBytes, tag) == 1;
}

// False when authentication fails (wrong key or modified bytes).
bool gcm_open(EVP_CIPHER_CTX* ctx, const ModelKey& key, const uint8_t* nonce, const uint8_t* aad, size_t aad_n,
              const uint8_t* in, size_t n, const uint8_t* tag, uint8_t* out) {
  int len = 0;
  if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key.data(), nonce) != 1) return false;
  if (EVP_DecryptUpdate(ctx, nullptr, &len, aad, (int)aad_n) != 1) return false;
  if (n > 0 && EVP_DecryptUpdate(ctx, out, &len, in, (int)n) != 1) return false;
  if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, (int)kTagBytes, const_cast<uint8_t*>(tag)) != 1) return false;
  return EVP_DecryptFinal_ex(ctx, out + (n > 0 ? len : 0), &len) == 1;
}

// Streams plaintext in, emits the encrypted file through `out`.
class Encryptor {
 public:
  Encryptor(const ModelKey& key, uint32_t chunk_bytes, uint64_t plaintext_bytes, const ByteSink& out)
      : key_(key), out_(out), ctx_(new_ctx()) {
    chunk_bytes_ = chunk_bytes;
    plaintext_bytes_ = plaintext_bytes;
  }

  Status begin() {
    if (chunk_bytes_ == 0 || chunk_bytes_ > kMaxChunkBytes) return InvalidArgument("chunk size out of range");
    if (!ctx_) return Internal("cannot create an OpenSSL cipher context");
    uint8_t nonce[kNonceBytes];
    if (RAND_bytes(nonce, (int)kNonceBytes) != 1) return Internal("OpenSSL RAND_bytes failed");
    header_ = make_header(chunk_bytes_, plaintext_bytes_, nonce);
    STRIDE_RETURN_IF_ERROR(out_(header_.raw.data(), kHeaderBytes));
    uint8_t tag[kTagBytes];
    const auto n = chunk_nonce(header_, kKeyCheckIndex);
    if (!gcm_seal(ctx_.get(), key_, n.data(), header_.raw.data(), kHeaderBytes, nullptr, 0, nullptr, tag)) {
      return Internal("AES-256-GCM encryption failed");
    }
    buf_.reserve(chunk_bytes_);
    cipher_.resize(chunk_bytes_ + kTagBytes);
    return out_(tag, kTagBytes);
  }

  Status feed(const uint8_t* data, size_t n) {
    if (fed_ + n > plaintext_bytes_) return Internal("encryptor fed more bytes than announced");
    fed_ += n;
    while (n > 0) {
      // A full chunk goes out once more bytes follow, so it is not the final one.
      if (buf_.size() == chunk_bytes_) STRIDE_RETURN_IF_ERROR(emit(false));
      const size_t take = std::min<size_t>(n, chunk_bytes_ - buf_.size());
      buf_.insert(buf_.end(), data, data + take);
      data += take;
      n -= take;
    }
    return Status::Ok();
  }

  Status finish() {
    if (fed_ != plaintext_bytes_) return Internal("encryptor fed fewer bytes than announced");
    return emit(true);
  }

 private:
  Status emit(bool final_chunk) {
    const auto nonce = chunk_nonce(header_, index_);
    const auto aad = chunk_aad(header_, index_, final_chunk);
    uint8_t* tag = cipher_.data() + buf_.size();
    if (!gcm_seal(ctx_.get(), key_, nonce.data(), aad.data(), aad.size(), buf_.data(), buf_.size(), cipher_.data(),
                  tag)) {
      return Internal("AES-256-GCM encryption failed");
    }
    STRIDE_RETURN_IF_ERROR(out_(cipher_.data(), buf_.size() + kTagBytes));
    buf_.clear();
    ++index_;
    return Status::Ok();
  }

  const ModelKey& key_;
  const ByteSink& out_;
  CipherCtx ctx_;
  uint32_t chunk_bytes_ = 0;
  uint64_t plaintext_bytes_ = 0;
  uint64_t fed_ = 0;
  uint64_t index_ = 0;
  Header header_;
  std::vector<uint8_t> buf_;     // plaintext of the chunk being filled
  std::vector<uint8_t> cipher_;  // ciphertext + tag of one chunk
};

// Streams bytes into an AtomicFile (temporary file beside the target, renamed on commit).
ByteSink sink_to(AtomicFile& f) {
  return [&f](const uint8_t* p, size_t n) { return f.write(p, n); };
}

// The mode an existing file has, so a re-keyed file keeps its permissions.
mode_t mode_of(const std::string& path, mode_t fallback) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : fallback;
}

}  // namespace

bool is_encrypted_model(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[kMagicBytes] = {};
  return f.read(magic, kMagicBytes) && std::memcmp(magic, kEncryptedMagic, kMagicBytes) == 0;
}

Status encrypt_bytes(const uint8_t* data, size_t n, const ModelKey& key, uint32_t chunk_bytes, const ByteSink& out) {
  Encryptor e(key, chunk_bytes, n, out);
  STRIDE_RETURN_IF_ERROR(e.begin());
  STRIDE_RETURN_IF_ERROR(e.feed(data, n));
  return e.finish();
}

Expected<uint64_t> encrypted_plaintext_size(const uint8_t* data, size_t size, const std::string& what) {
  STRIDE_ASSIGN_OR_RETURN(Header h, parse_header(data, size, what));
  return h.plaintext_bytes;
}

Status decrypt_bytes(const uint8_t* data, size_t size, const ModelKey& key, const ByteSink& out,
                     const std::string& what) {
  STRIDE_ASSIGN_OR_RETURN(Header h, parse_header(data, size, what));
  CipherCtx ctx = new_ctx();
  if (!ctx) return Internal("cannot create an OpenSSL cipher context");
  const uint8_t* p = data + kHeaderBytes;
  const auto check_nonce = chunk_nonce(h, kKeyCheckIndex);
  if (!gcm_open(ctx.get(), key, check_nonce.data(), h.raw.data(), kHeaderBytes, nullptr, 0, p, nullptr)) {
    return InvalidArgument(what + ": wrong key (the key check failed; or the header was modified)");
  }
  p += kTagBytes;
  const uint64_t n_chunks = h.n_chunks();
  std::vector<uint8_t> plain(std::min<uint64_t>(h.chunk_bytes, std::max<uint64_t>(h.plaintext_bytes, 1)));
  uint64_t left = h.plaintext_bytes;
  for (uint64_t i = 0; i < n_chunks; ++i) {
    const size_t n = (size_t)std::min<uint64_t>(left, h.chunk_bytes);
    const bool final_chunk = i + 1 == n_chunks;
    const auto nonce = chunk_nonce(h, i);
    const auto aad = chunk_aad(h, i, final_chunk);
    if (!gcm_open(ctx.get(), key, nonce.data(), aad.data(), aad.size(), p, n, p + n, plain.data())) {
      return Corrupt(what + ": chunk " + std::to_string(i) + " of " + std::to_string(n_chunks) +
                     " failed authentication (the file was modified, or its chunks reordered or cut)");
    }
    STRIDE_RETURN_IF_ERROR(out(plain.data(), n));
    p += n + kTagBytes;
    left -= n;
  }
  return Status::Ok();
}

Status encrypt_file(const std::string& in, const std::string& out, const ModelKey& key, uint32_t chunk_bytes) {
  STRIDE_ASSIGN_OR_RETURN(MappedFile src, MappedFile::open(in));
  if (src.size() >= kMagicBytes && std::memcmp(src.data(), kEncryptedMagic, kMagicBytes) == 0) {
    return InvalidArgument(in + " is already encrypted");
  }
  AtomicFile dst;
  STRIDE_RETURN_IF_ERROR(dst.open(out, 0644));  // ciphertext: readable like any model file
  STRIDE_RETURN_IF_ERROR(encrypt_bytes(src.data(), src.size(), key, chunk_bytes, sink_to(dst)));
  return dst.commit();
}

Status decrypt_file(const std::string& in, const std::string& out, const ModelKey& key) {
  STRIDE_ASSIGN_OR_RETURN(MappedFile src, MappedFile::open(in));
  AtomicFile dst;
  STRIDE_RETURN_IF_ERROR(dst.open(out, 0600));  // plaintext weights: the owner only
  STRIDE_RETURN_IF_ERROR(decrypt_bytes(src.data(), src.size(), key, sink_to(dst), in));
  return dst.commit();
}

Status rotate_model_key_into(const std::string& path, const ModelKey& old_key, const ModelKey& new_key,
                             AtomicFile& out) {
  STRIDE_ASSIGN_OR_RETURN(MappedFile src, MappedFile::open(path));
  STRIDE_ASSIGN_OR_RETURN(Header h, parse_header(src.data(), src.size(), path));
  STRIDE_RETURN_IF_ERROR(out.open(path, mode_of(path, 0644)));
  const ByteSink to_file = sink_to(out);
  Encryptor enc(new_key, h.chunk_bytes, h.plaintext_bytes, to_file);
  STRIDE_RETURN_IF_ERROR(enc.begin());
  // Every chunk is authenticated under the old key before anything is renamed.
  STRIDE_RETURN_IF_ERROR(decrypt_bytes(src.data(), src.size(), old_key,
                                       [&enc](const uint8_t* p, size_t n) { return enc.feed(p, n); }, path));
  return enc.finish();
}

Expected<MappedFile> decrypt_to_memory(const std::string& path, const ModelKey& key) {
  STRIDE_ASSIGN_OR_RETURN(MappedFile src, MappedFile::open(path));
  STRIDE_ASSIGN_OR_RETURN(uint64_t plain_bytes, encrypted_plaintext_size(src.data(), src.size(), path));
  // A memfd is anonymous memory with a file descriptor, so the plaintext can
  // be mapped like a file without ever reaching a disk.
  const int fd = memfd_create("stride-model", MFD_CLOEXEC);
  if (fd < 0) return IoError(std::string("memfd_create failed: ") + std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  if (plain_bytes > 0 && ::ftruncate(fd, (off_t)plain_bytes) != 0) {
    return ResourceExhausted("cannot size " + std::to_string(plain_bytes) + " bytes of memory for " + path + ": " +
                             std::strerror(errno));
  }
  if (plain_bytes > 0) {
    void* mem = mmap(nullptr, plain_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) return IoError(std::string("mmap of the decryption buffer failed: ") + std::strerror(errno));
    uint8_t* dst = static_cast<uint8_t*>(mem);
    uint64_t at = 0;
    Status st = decrypt_bytes(src.data(), src.size(), key,
                              [&](const uint8_t* p, size_t n) {
                                std::memcpy(dst + at, p, n);
                                at += n;
                                return Status::Ok();
                              },
                              path);
    munmap(mem, plain_bytes);
    STRIDE_RETURN_IF_ERROR(st);
  } else {
    STRIDE_RETURN_IF_ERROR(decrypt_bytes(src.data(), src.size(), key, [](const uint8_t*, size_t) { return Status::Ok(); },
                                         path));
  }
  return MappedFile::open("/proc/self/fd/" + std::to_string(fd));
}

}  // namespace stride
