#pragma once
// Streaming SHA-256 of a file (model identity in `stride info` and caches).
#include <string>

#include "core/status.h"

namespace stride {

// Lowercase hex digest; reads the file in chunks, never whole.
Expected<std::string> sha256_file(const std::string& path);

}  // namespace stride
