#pragma once
// Named session files in one directory (session_dir): name checks, size
// limits, atomic writes, listing and deletion. With a model key the files
// are AES-256-GCM encrypted as model files are (loader/encrypted_file.h), so
// the KV of an encrypted model never reaches the disk in clear.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "loader/encrypted_file.h"
#include "session/session_file.h"

namespace stride {

struct SessionLimits {
  std::string dir;
  int64_t max_file_bytes = int64_t{2} << 30;    // one file
  int64_t max_total_bytes = int64_t{16} << 30;  // every file in dir
};

struct SessionEntry {
  std::string name;
  int64_t bytes = 0;
  int64_t created = 0;  // unix seconds (the file's time when listed)
  std::string sha256;   // of the file as stored; set by save()
};

inline constexpr size_t kMaxSessionName = 64;

class SessionStore {
 public:
  // Creates dir (mode 0700) when missing.
  static Expected<std::unique_ptr<SessionStore>> open(const SessionLimits& limits);
  explicit SessionStore(SessionLimits limits) : limits_(std::move(limits)) {}

  // 1-64 of [A-Za-z0-9._-], starting with a letter or digit: never a path.
  static Status check_name(std::string_view name);

  // Writes s under s.name (replacing an older file of that name) through a
  // temporary file, fsync and rename. ResourceExhausted over a size limit.
  // key: encrypt with it; null: plaintext.
  Expected<SessionEntry> save(const SessionFile& s, const ModelKey* key);
  // NotFound; InvalidArgument when it belongs to another model or layout, or
  // its encryption does not match the model's; Corrupt when damaged.
  Expected<SessionFile> load(std::string_view name, const SessionIdentity& expected, const ModelKey* key) const;
  Expected<std::vector<SessionEntry>> list() const;  // by name
  // One file's entry with its sha256 (the file is read once more).
  Expected<SessionEntry> describe(std::string_view name) const;
  Status remove(std::string_view name);

  const SessionLimits& limits() const { return limits_; }

 private:
  std::string path_of(std::string_view name) const;
  int64_t total_bytes_except(std::string_view name) const;

  SessionLimits limits_;
  std::mutex write_mu_;  // the total-size check and the write of one save at a time
};

}  // namespace stride
