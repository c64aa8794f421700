#pragma once
// Streaming SHA-256 of a file (model identity in `stride info` and caches).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace stride {

// Lowercase hex digest; reads the file in chunks, never whole.
Expected<std::string> sha256_file(const std::string& path);

// A model's identity: the file's digest, or for an HF folder the digest of
// its manifest ("<sha256>  <name>\n" per regular file, names sorted), so any
// change to any file of the folder changes it.
Expected<std::string> sha256_model(const std::string& path);

// The digest of bytes in memory (session files).
std::array<uint8_t, 32> sha256_bytes(const void* data, size_t n);
std::string sha256_hex(const std::array<uint8_t, 32>& digest);

}  // namespace stride
