#pragma once
// Read-only memory map of a whole file (RAII, move-only).
#include <cstdint>
#include <string>

#include "core/status.h"

namespace stride {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  static Expected<MappedFile> open(const std::string& path);

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Lets the kernel drop the resident pages wholly inside [p, p + n) (when
  // that lies in this map): they are read back from the file if touched
  // again, page by page (no readahead), so a copy made elsewhere (repacked
  // weights) is not held twice.
  // False when the range is not in this map.
  bool drop_resident(const void* p, uint64_t n) const;
  // Copies [p, p + n) of the map into dst with pread, without mapping it
  // (dropped pages read this way stay out of RSS). False when the range is
  // not in this map or the read fails.
  bool read_at(const void* p, uint64_t n, void* dst) const;

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
  std::string path_;
};

}  // namespace stride
