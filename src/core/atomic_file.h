#pragma once
// Atomic, durable file replacement. Bytes go to a temporary file created
// beside the target (same directory, so the final rename(2) cannot cross a
// file system), which is fsync'ed, renamed over the target, and then the
// directory is fsync'ed so the rename itself survives a power cut. Readers
// see either the old file or the complete new one, never a partial write;
// a failure at any step removes the temporary file and leaves the target as
// it was.
//
//   AtomicFile f;
//   STRIDE_RETURN_IF_ERROR(f.open("/models/v2/SHA256", 0644));
//   STRIDE_RETURN_IF_ERROR(f.write(data, n));   // any number of times: stream big files
//   STRIDE_RETURN_IF_ERROR(f.commit());         // destructor without commit() discards
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stride {

class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile();  // discards an uncommitted temporary file
  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Creates the temporary file (O_EXCL, `mode`, not subject to umask
  // widening: fchmod'ed to exactly `mode`). The target need not exist.
  Status open(const std::string& target, mode_t mode);
  // Writes every byte (short writes and EINTR are retried).
  Status write(const void* data, size_t n);
  Status write(std::string_view text) { return write(text.data(), text.size()); }
  // fsync, rename over the target, fsync the directory. After a failure the
  // temporary file is gone and the target unchanged. With kNoReplace an
  // existing target is an error (renameat2 RENAME_NOREPLACE: no race with a
  // file created meanwhile), e.g. for a key file that must never be lost.
  enum class Mode { kReplace, kNoReplace };
  Status commit(Mode how = Mode::kReplace);
  // Removes the temporary file now.
  void discard();

  const std::string& temp_path() const { return tmp_; }
  const std::string& target() const { return target_; }
  uint64_t bytes_written() const { return written_; }

 private:
  int fd_ = -1;
  std::string target_;
  std::string tmp_;
  uint64_t written_ = 0;
};

// The whole file in one call.
Status write_file_atomic(const std::string& target, std::string_view contents, mode_t mode,
                         AtomicFile::Mode how = AtomicFile::Mode::kReplace);

// Copies `src` to `target` atomically in chunks (never holding the file in
// memory).
Status copy_file_atomic(const std::string& src, const std::string& target, mode_t mode);

// fsync of a directory (after a rename or a new entry in it).
Status fsync_directory(const std::string& dir);

}  // namespace stride
