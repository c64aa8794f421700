#include "loader/model_versions.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/sha256.h"
#include "loader/encrypted_file.h"

namespace stride {

namespace fs = std::filesystem;

namespace {

constexpr const char* kShaFile = "SHA256";
constexpr const char* kActiveFile = "ACTIVE";

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit((unsigned char)c) || (c >= 'a' && c <= 'f');
         });
}

// "<hex>  <name>" (sha256sum's text mode; '*' marks binary mode).
Expected<std::pair<std::string, std::string>> read_sha_file(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return NotFound("no " + std::string(kShaFile) + " in " + p.parent_path().string());
  std::string line;
  std::getline(f, line);
  std::istringstream ss(line);
  std::string hex, name;
  ss >> hex >> name;
  if (!name.empty() && name[0] == '*') name.erase(0, 1);
  if (!is_hex64(hex) || name.empty() || name.find('/') != std::string::npos) {
    return Corrupt(p.string() + " must hold one line '<64 lowercase hex>  <file name>'");
  }
  return std::make_pair(hex, name);
}

}  // namespace

Status check_version_name(const std::string& v) {
  const bool chars_ok = std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-';
  });
  if (v.empty() || v.size() > 128 || !chars_ok || v == "." || v == ".." || v[0] == '.') {
    return InvalidArgument("bad model version '" + v +
                           "': use letters, digits, '.', '_' and '-' (not starting with '.')");
  }
  if (v == kActiveVersionName) {
    return InvalidArgument("'" + v + "' is reserved: it names the version recorded in <model_dir>/ACTIVE");
  }
  return Status::Ok();
}

Expected<ModelVersion> find_model_version(const std::string& model_dir, const std::string& version) {
  STRIDE_RETURN_IF_ERROR(check_version_name(version));
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) return NotFound("model_dir " + model_dir + " is not a directory");
  const fs::path dir = fs::path(model_dir) / version;
  if (!fs::is_directory(dir, ec)) {
    std::string known;
    if (auto all = list_model_versions(model_dir); all.ok()) {
      for (const auto& v : *all) known += (known.empty() ? "" : ", ") + v.version;
    }
    return NotFound("model version '" + version + "' not found in " + model_dir +
                    (known.empty() ? " (no versions published)" : " (published: " + known + ")"));
  }
  STRIDE_ASSIGN_OR_RETURN(auto entry, read_sha_file(dir / kShaFile));
  ModelVersion v;
  v.version = version;
  v.sha256 = entry.first;
  v.path = (dir / entry.second).string();
  v.bytes = fs::file_size(v.path, ec);
  if (ec) return NotFound("model version '" + version + "': its file " + v.path + " is missing");
  return v;
}

Expected<std::vector<ModelVersion>> list_model_versions(const std::string& model_dir) {
  std::error_code ec;
  if (!fs::is_directory(model_dir, ec)) return NotFound("model_dir " + model_dir + " is not a directory");
  std::vector<ModelVersion> out;
  for (const auto& e : fs::directory_iterator(model_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || !check_version_name(name).ok()) continue;  // skips .tmp-* folders
    auto sha = read_sha_file(e.path() / kShaFile);
    if (!sha.ok()) continue;
    ModelVersion v;
    v.version = name;
    v.sha256 = sha->first;
    v.path = (e.path() / sha->second).string();
    v.bytes = fs::file_size(v.path, ec);
    if (ec) continue;
    out.push_back(std::move(v));
  }
  if (ec) return IoError("cannot list " + model_dir + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.version < b.version; });
  return out;
}

Expected<ModelVersion> publish_model_version(const std::string& model_dir, const std::string& version,
                                             const std::string& file) {
  STRIDE_RETURN_IF_ERROR(check_version_name(version));
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return NotFound("no such model file: " + file);
  fs::create_directories(model_dir, ec);
  if (ec) return IoError("cannot create " + model_dir + ": " + ec.message());
  const fs::path final_dir = fs::path(model_dir) / version;
  if (fs::exists(final_dir, ec)) {
    return InvalidArgument("model version '" + version + "' already exists in " + model_dir +
                           " (versions are immutable: publish a new one)");
  }
  const fs::path tmp = fs::path(model_dir) / (".tmp-" + version + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return IoError("cannot create " + tmp.string() + ": " + ec.message());
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code e;
      if (!p.empty()) fs::remove_all(p, e);
    }
  } cleanup{tmp};

  const std::string name = fs::path(file).filename().string();
  // Streamed in chunks and synced: after the rename below the version's
  // bytes are on disk, not only in the page cache.
  STRIDE_RETURN_IF_ERROR(copy_file_atomic(file, (tmp / name).string(), 0644));
  // Hash the copy: the record describes exactly the bytes that will be served.
  STRIDE_ASSIGN_OR_RETURN(std::string digest, sha256_file((tmp / name).string()));
  STRIDE_RETURN_IF_ERROR(write_file_atomic((tmp / kShaFile).string(), digest + "  " + name + "\n", 0644));
  fs::rename(tmp, final_dir, ec);
  if (ec) return IoError("cannot publish " + final_dir.string() + ": " + ec.message());
  cleanup.p.clear();
  STRIDE_RETURN_IF_ERROR(fsync_directory(model_dir));
  // The first version of a directory becomes its active one.
  if (!fs::exists(fs::path(model_dir) / kActiveFile, ec)) {
    STRIDE_RETURN_IF_ERROR(set_active_model_version(model_dir, version));
  }
  return find_model_version(model_dir, version);
}

// Declared in encrypted_file.h. The record is rewritten before the model
// file is renamed: a crash between the two renames leaves the old file under
// the old key (so the same command can simply be run again) beside a record
// that no longer matches it (so the version is refused, never served wrong).
Status rotate_model_key(const std::string& path, const ModelKey& old_key, const ModelKey& new_key) {
  AtomicFile model;
  STRIDE_RETURN_IF_ERROR(rotate_model_key_into(path, old_key, new_key, model));
  const fs::path record = fs::path(path).parent_path() / kShaFile;
  const std::string name = fs::path(path).filename().string();
  auto entry = read_sha_file(record);
  if (entry.ok() && entry->second == name) {
    STRIDE_ASSIGN_OR_RETURN(std::string digest, sha256_file(model.temp_path()));
    STRIDE_RETURN_IF_ERROR(write_file_atomic(record.string(), digest + "  " + name + "\n", 0644));
  }
  return model.commit();
}

Expected<std::string> read_active_model_version(const std::string& model_dir) {
  const fs::path p = fs::path(model_dir) / kActiveFile;
  std::ifstream f(p);
  if (!f) return NotFound("no active version recorded in " + model_dir + " (stride model activate --model-dir " +
                          model_dir + " VERSION)");
  std::string line;
  std::getline(f, line);
  line.erase(line.find_last_not_of(" \t\r\n") + 1);
  if (Status st = check_version_name(line); !st.ok()) {
    return InvalidArgument(p.string() + " does not hold a version name: " + st.message());
  }
  return line;
}

Status set_active_model_version(const std::string& model_dir, const std::string& version) {
  STRIDE_RETURN_IF_ERROR(find_model_version(model_dir, version).status());
  return write_file_atomic((fs::path(model_dir) / kActiveFile).string(), version + "\n", 0644);
}

Expected<ModelVersion> resolve_model_version(const std::string& model_dir, const std::string& version) {
  if (!version.empty() && version != kActiveVersionName) return find_model_version(model_dir, version);
  STRIDE_ASSIGN_OR_RETURN(std::string active, read_active_model_version(model_dir));
  return find_model_version(model_dir, active);
}

}  // namespace stride
