#pragma once
// Model files at rest, encrypted with AES-256-GCM in independent chunks so a
// multi-GB file is never one GCM message.
//
// Layout (little-endian):
//   header  "STRIDEENC1" | u32 format version (1) | u32 chunk bytes | u64 plaintext bytes | 12-byte base nonce
//   check   16-byte GCM tag over nothing (AAD = header), nonce index 2^64-1: tells a wrong key from tampering
//   chunks  ciphertext (chunk bytes, the last one shorter) | 16-byte tag, for each chunk i
// Chunk i uses nonce = base nonce XOR (0^4 || be64(i)) and AAD = header || be64(i) || final flag,
// so a modified header, a flipped byte, reordered or dropped chunks all fail
// authentication. The file length must equal what the header implies.
//
// The loader decrypts into anonymous memory (a memfd, never a file on disk)
// and parses the plaintext as GGUF.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/mapped_file.h"
#include "core/status.h"

namespace stride {

using ModelKey = std::array<uint8_t, 32>;

inline constexpr char kEncryptedMagic[] = "STRIDEENC1";  // 10 bytes on disk, no terminator
inline constexpr uint32_t kDefaultChunkBytes = 4u << 20;

// 64 hex digits (whitespace around them ignored).
Expected<ModelKey> parse_model_key_hex(const std::string& text);
// A key file holds 64 hex digits or exactly 32 raw bytes.
Expected<ModelKey> read_model_key_file(const std::string& path);
// A fresh random key, as 64 hex digits.
Expected<std::string> generate_model_key_hex();

// True when the file starts with the magic (false for unreadable files too).
bool is_encrypted_model(const std::string& path);

// Plaintext bytes arrive chunk by chunk; a failing sink stops the operation.
using ByteSink = std::function<Status(const uint8_t* data, size_t n)>;

Status encrypt_bytes(const uint8_t* data, size_t n, const ModelKey& key, uint32_t chunk_bytes, const ByteSink& out);
// `size` bytes of an encrypted file; `what` names it in errors.
Status decrypt_bytes(const uint8_t* data, size_t size, const ModelKey& key, const ByteSink& out,
                     const std::string& what = "encrypted model");
// Plaintext size recorded in the header (checked against the key later).
Expected<uint64_t> encrypted_plaintext_size(const uint8_t* data, size_t size, const std::string& what);

// Whole files. Outputs are written to a temporary file beside `out`, synced
// and renamed into place only when complete (core/atomic_file.h), so a
// failure leaves no partial file. Encrypted outputs get mode 0644, decrypted
// ones 0600.
Status encrypt_file(const std::string& in, const std::string& out, const ModelKey& key,
                    uint32_t chunk_bytes = kDefaultChunkBytes);
Status decrypt_file(const std::string& in, const std::string& out, const ModelKey& key);
// Re-encrypts `path` in place under a new key (fresh nonce), keeping its
// mode; atomic rename. When `path` is the file of a published version
// (model_versions.h), the version's SHA256 record is rewritten in the same
// operation, so the version still verifies (implemented there).
Status rotate_model_key(const std::string& path, const ModelKey& old_key, const ModelKey& new_key);
// The re-encryption step alone: `out` is opened beside `path` and holds the
// complete new file, not yet committed (the caller commits or discards it).
Status rotate_model_key_into(const std::string& path, const ModelKey& old_key, const ModelKey& new_key,
                             AtomicFile& out);

// Decrypts into anonymous memory and returns it as a read-only MappedFile.
Expected<MappedFile> decrypt_to_memory(const std::string& path, const ModelKey& key);

// The key for encrypted models: set by the caller (stride serve's
// model_key / model_key_file), else the fallback (the command line reads
// STRIDE_MODEL_KEY and STRIDE_MODEL_KEY_FILE into it at start).
void set_model_key(const ModelKey& key);
struct ModelKeyFallback {
  std::string hex;   // the key in hex, checked when first needed
  std::string file;  // a key file, used when hex is empty
};
void set_model_key_fallback(ModelKeyFallback fallback);
Expected<ModelKey> model_key_for(const std::string& path);

}  // namespace stride
