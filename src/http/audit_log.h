#pragma once
// JSON-lines audit log: one line per API request, plus event lines for what
// is not a request (admin actions, failed logins). Never holds API keys; the
// prompt text only when the config enables it.
//
// The file is created with mode 0600 (client addresses and maybe prompts are
// in it) and opened O_APPEND|O_CLOEXEC|O_NOFOLLOW: every line is one write(2)
// at the end of the file, a symlink planted at the path is refused, and
// child processes do not inherit it. reopen() starts a new file at the same
// path after logrotate renamed the old one (stride serve calls it on SIGHUP).
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/status.h"

namespace stride::server {

struct AuditRecord {
  std::string request_id;
  std::string client_ip;
  std::string key_id;         // "key#N" (index in the key list) or "-"
  std::string model_version;
  std::string endpoint;
  int status = 0;
  int prompt_tokens = 0;
  int completion_tokens = 0;
  double latency_s = 0;
  std::string finish_reason;
  std::string prompt;         // empty unless audit_log_prompts
};

// A line that is not a request: {"time", "kind", "client_ip", "key_id",
// "detail", ...fields}. `fields` adds string members; they never replace the
// five above.
struct AuditEvent {
  std::string kind;       // e.g. "admin_model_switch", "auth_failed"
  std::string client_ip;  // "-" when there is none (a signal)
  std::string key_id = "-";
  std::string detail;
  std::map<std::string, std::string> fields;
};

class AuditLog {
 public:
  static Expected<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // A request line. A failed write is counted (failed_writes), not returned:
  // the request it describes has been answered already.
  void write(const AuditRecord& r);
  // An event line; IoError when it could not be written.
  Status write_event(const AuditEvent& e);
  // Opens the path again (creating it, 0600) and switches to it; the old
  // descriptor is closed. On failure the log keeps writing to the old file.
  Status reopen();

  const std::string& path() const { return path_; }
  int64_t failed_writes() const;

 private:
  AuditLog() = default;
  static Expected<int> open_fd(const std::string& path);
  Status append(const std::string& line);

  mutable std::mutex mu_;
  std::string path_;
  int fd_ = -1;
  int64_t failed_writes_ = 0;
};

}  // namespace stride::server
