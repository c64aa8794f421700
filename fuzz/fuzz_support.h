#pragma once
// Helpers shared by the fuzz targets: fuzz bytes as a memory-mapped file (the
// loaders only read MappedFiles), the real vocabularies, and a byte reader
// that splits one input into several fields.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "core/mapped_file.h"
#include "loader/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace stride::fuzz {

// Maps `size` bytes through one memfd that is rewritten per input: no disk
// I/O, and the loader sees exactly what it sees for a real file.
inline Expected<MappedFile> map_bytes(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("stride-fuzz", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0) return IoError("memfd unavailable");
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
    if (n <= 0) return IoError("memfd write failed");
    done += (size_t)n;
  }
  return MappedFile::open("/proc/self/fd/" + std::to_string(fd));
}

// Start of the one live mapping of the memfd, found in /proc/self/maps: for
// readers that keep their MappedFile private (GGUFFile) but whose views must
// point inside it. nullptr when not mapped exactly once.
inline const uint8_t* memfd_mapping() {
  std::ifstream maps("/proc/self/maps");
  const uint8_t* found = nullptr;
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:stride-fuzz") == std::string::npos) continue;
    found = reinterpret_cast<const uint8_t*>(std::strtoull(line.c_str(), nullptr, 16));
    ++count;
  }
  return count == 1 ? found : nullptr;
}

// The directory of the real vocabulary fixtures (STRIDE_FUZZ_VOCAB_DIR overrides).
inline std::string vocab_dir() {
  if (const char* d = std::getenv("STRIDE_FUZZ_VOCAB_DIR"); d && *d) return std::string(d) + "/";
  return std::string(STRIDE_SOURCE_DIR) + "/../shared/fixtures/vocab/";
}

// A tokenizer built once from a real GGUF vocabulary; a missing or bad file
// ends the process (a fuzzer without its vocabulary would test nothing).
struct LoadedTokenizer {
  std::unique_ptr<GGUFFile> file;
  std::unique_ptr<Tokenizer> tok;
};

inline const LoadedTokenizer& load_tokenizer(const std::string& name) {
  static LoadedTokenizer* loaded = [&] {
    static LoadedTokenizer t;
    const std::string path = vocab_dir() + name;
    auto f = GGUFFile::open(path);
    if (!f.ok()) {
      std::fprintf(stderr, "fuzz: cannot open %s: %s\n", path.c_str(), f.status().message().c_str());
      std::abort();
    }
    auto tok = Tokenizer::from_gguf(**f);
    if (!tok.ok()) {
      std::fprintf(stderr, "fuzz: no tokenizer in %s: %s\n", path.c_str(), tok.status().message().c_str());
      std::abort();
    }
    t.file = std::move(*f);
    t.tok = std::move(*tok);
    return &t;
  }();
  return *loaded;
}

// Consumes an input from the front: small control values, then the rest.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  // The next field: up to the next 0x00 byte (consumed) or the end.
  std::string_view field() {
    const size_t start = pos_;
    while (pos_ < size_ && data_[pos_] != 0) ++pos_;
    std::string_view s(reinterpret_cast<const char*>(data_ + start), pos_ - start);
    if (pos_ < size_) ++pos_;
    return s;
  }
  std::string_view rest() {
    std::string_view s(reinterpret_cast<const char*>(data_ + pos_), size_ - pos_);
    pos_ = size_;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace stride::fuzz
