#include "session/session_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/sha256.h"

namespace stride {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSuffix = ".stridekv";

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

Expected<std::string> read_whole(const std::string& path, int64_t max_bytes) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return ec == std::errc::no_such_file_or_directory ? Status(NotFound("no such session"))
                                                            : Status(IoError("cannot stat " + path + ": " + ec.message()));
  if ((int64_t)size > max_bytes)
    return ResourceExhausted("the session file has " + std::to_string(size) + " bytes, over session_max_bytes (" +
                             std::to_string(max_bytes) + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot open " + path);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), (std::streamsize)size)) return IoError("cannot read " + path);
  return bytes;
}

}  // namespace

Expected<std::unique_ptr<SessionStore>> SessionStore::open(const SessionLimits& limits) {
  if (limits.dir.empty()) return InvalidArgument("session_dir is empty");
  std::error_code ec;
  fs::create_directories(limits.dir, ec);
  if (ec) return IoError("cannot create session_dir " + limits.dir + ": " + ec.message());
  if (!fs::is_directory(limits.dir, ec)) return InvalidArgument("session_dir " + limits.dir + " is not a directory");
  return std::make_unique<SessionStore>(limits);
}

Status SessionStore::check_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSessionName)
    return InvalidArgument("a session name has 1 to " + std::to_string(kMaxSessionName) + " characters");
  if (!std::all_of(name.begin(), name.end(), name_char) || name[0] == '.' || name[0] == '-' || name[0] == '_')
    return InvalidArgument("a session name is made of letters, digits, '.', '_' and '-', and starts with a letter or digit");
  return Status::Ok();
}

std::string SessionStore::path_of(std::string_view name) const {
  return limits_.dir + "/" + std::string(name) + std::string(kSuffix);
}

int64_t SessionStore::total_bytes_except(std::string_view name) const {
  int64_t total = 0;
  std::error_code ec;
  const std::string skip = std::string(name) + std::string(kSuffix);
  for (const fs::directory_entry& e : fs::directory_iterator(limits_.dir, ec)) {
    const std::string file = e.path().filename().string();
    if (file == skip || !file.ends_with(kSuffix)) continue;
    std::error_code size_ec;
    const auto size = e.file_size(size_ec);
    if (!size_ec) total += (int64_t)size;
  }
  return total;
}

Expected<SessionEntry> SessionStore::save(const SessionFile& s, const ModelKey* key) {
  STRIDE_RETURN_IF_ERROR(check_name(s.name));
  const int64_t plain_bytes = encoded_session_bytes(s);
  if (plain_bytes > limits_.max_file_bytes)
    return ResourceExhausted("the session needs " + std::to_string(plain_bytes) + " bytes, over session_max_bytes (" +
                             std::to_string(limits_.max_file_bytes) + ")");
  std::string bytes = encode_session(s);
  if (key) {
    std::string sealed;
    sealed.reserve(bytes.size() + bytes.size() / 1024 + 256);
    STRIDE_RETURN_IF_ERROR(encrypt_bytes((const uint8_t*)bytes.data(), bytes.size(), *key, kDefaultChunkBytes,
                                         [&](const uint8_t* d, size_t n) {
                                           sealed.append((const char*)d, n);
                                           return Status::Ok();
                                         }));
    bytes = std::move(sealed);
  }
  if ((int64_t)bytes.size() > limits_.max_file_bytes)
    return ResourceExhausted("the session file would have " + std::to_string(bytes.size()) +
                             " bytes, over session_max_bytes (" + std::to_string(limits_.max_file_bytes) + ")");
  std::lock_guard<std::mutex> lock(write_mu_);
  const int64_t others = total_bytes_except(s.name);
  if (others + (int64_t)bytes.size() > limits_.max_total_bytes)
    return ResourceExhausted("session_dir would hold " + std::to_string(others + (int64_t)bytes.size()) +
                             " bytes, over session_max_total_bytes (" + std::to_string(limits_.max_total_bytes) +
                             "); delete sessions first");
  STRIDE_RETURN_IF_ERROR(write_file_atomic(path_of(s.name), bytes, 0600));
  SessionEntry e;
  e.name = s.name;
  e.bytes = (int64_t)bytes.size();
  e.created = s.created;
  e.sha256 = sha256_hex(sha256_bytes(bytes.data(), bytes.size()));
  return e;
}

Expected<SessionFile> SessionStore::load(std::string_view name, const SessionIdentity& expected,
                                         const ModelKey* key) const {
  STRIDE_RETURN_IF_ERROR(check_name(name));
  auto read = read_whole(path_of(name), limits_.max_file_bytes);
  if (!read.ok()) {
    if (read.status().code() == StatusCode::kNotFound) return NotFound("no session named '" + std::string(name) + "'");
    return read.status();
  }
  std::string bytes = std::move(*read);
  const size_t magic = sizeof(kEncryptedMagic) - 1;
  const bool sealed = bytes.size() >= magic && std::memcmp(bytes.data(), kEncryptedMagic, magic) == 0;
  if (sealed != (key != nullptr))
    return InvalidArgument(sealed ? "the session file is encrypted but the model is not"
                                  : "the model is encrypted but the session file is not");
  if (sealed) {
    std::string plain;
    STRIDE_RETURN_IF_ERROR(decrypt_bytes((const uint8_t*)bytes.data(), bytes.size(), *key,
                                         [&](const uint8_t* d, size_t n) {
                                           plain.append((const char*)d, n);
                                           return Status::Ok();
                                         },
                                         "session file"));
    bytes = std::move(plain);
  }
  STRIDE_ASSIGN_OR_RETURN(SessionFile s, decode_session(bytes, expected));
  if (s.name != name) return Corrupt("the session file names another session ('" + s.name + "')");
  return s;
}

Expected<std::vector<SessionEntry>> SessionStore::list() const {
  std::vector<SessionEntry> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(limits_.dir, ec)) {
    const std::string file = e.path().filename().string();
    if (!file.ends_with(kSuffix)) continue;
    const std::string name = file.substr(0, file.size() - kSuffix.size());
    if (!check_name(name).ok()) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    out.push_back({name, (int64_t)st.st_size, (int64_t)st.st_mtime, ""});
  }
  if (ec) return IoError("cannot list session_dir " + limits_.dir + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const SessionEntry& a, const SessionEntry& b) { return a.name < b.name; });
  return out;
}

Expected<SessionEntry> SessionStore::describe(std::string_view name) const {
  STRIDE_RETURN_IF_ERROR(check_name(name));
  const std::string path = path_of(name);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return NotFound("no session named '" + std::string(name) + "'");
  STRIDE_ASSIGN_OR_RETURN(std::string digest, sha256_file(path));
  return SessionEntry{std::string(name), (int64_t)st.st_size, (int64_t)st.st_mtime, digest};
}

Status SessionStore::remove(std::string_view name) {
  STRIDE_RETURN_IF_ERROR(check_name(name));
  std::lock_guard<std::mutex> lock(write_mu_);
  const std::string path = path_of(name);
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return NotFound("no session named '" + std::string(name) + "'");
    return IoError("cannot delete " + path + ": " + std::strerror(errno));
  }
  return fsync_directory(limits_.dir);
}

}  // namespace stride
