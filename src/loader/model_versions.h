#pragma once
// A model directory holds published versions, one folder each:
//   <model_dir>/<version>/<name>.gguf   the weights (plain or encrypted)
//   <model_dir>/<version>/SHA256        "<64 hex>  <name>.gguf", recorded at publish time
// SHA256 is in `sha256sum` format, so `cd <model_dir>/<version> && sha256sum -c SHA256`
// checks a version by hand. A version is published once and never rewritten,
// except by `stride model rotate-key`, which re-encrypts its file and
// rewrites SHA256 to match (see rotate_model_key in encrypted_file.h).
//   <model_dir>/ACTIVE                   the version that last went live (one line)
// Every file is written through core/atomic_file.h (synced, then renamed).
//
// ACTIVE is what makes a rollback durable: a server configured with
// model_version "active" (the default with a model_dir) serves it, and every
// version that goes live (at start, through /admin/model or SIGHUP) is
// recorded there only after it loaded and warmed up, so a kill -9 during a
// switch leaves the last good version recorded.
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace stride {

struct ModelVersion {
  std::string version;  // folder name
  std::string path;     // the model file
  std::string sha256;   // recorded at publish time
  uint64_t bytes = 0;
};

// Letters, digits, '.', '_' and '-'; not "." or ".."; at most 128 characters.
Status check_version_name(const std::string& version);

// Copies `file` into <model_dir>/<version>/ and records its sha256. The
// version appears atomically (built in a temporary folder, then renamed); an
// existing version is never overwritten.
Expected<ModelVersion> publish_model_version(const std::string& model_dir, const std::string& version,
                                             const std::string& file);

// The recorded entry of one version (the file is not hashed here: loading verifies it).
Expected<ModelVersion> find_model_version(const std::string& model_dir, const std::string& version);

// Every published version, sorted by name; folders without a valid SHA256 are skipped.
Expected<std::vector<ModelVersion>> list_model_versions(const std::string& model_dir);

// The version name that means "whatever ACTIVE records".
inline constexpr const char* kActiveVersionName = "active";

// The version ACTIVE records; NotFound when there is none.
Expected<std::string> read_active_model_version(const std::string& model_dir);
// Records `version` (which must be published) in ACTIVE, atomically.
Status set_active_model_version(const std::string& model_dir, const std::string& version);
// find_model_version, where "active" or "" means the version ACTIVE records.
Expected<ModelVersion> resolve_model_version(const std::string& model_dir, const std::string& version);

}  // namespace stride
