#pragma once
// JSON-lines audit log: one line per API request. Never holds API keys; the
// prompt text only when the config enables it.
#include <cstdio>
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

class AuditLog {
 public:
  static Expected<std::unique_ptr<AuditLog>> open(const std::string& path);
  ~AuditLog();
  void write(const AuditRecord& r);

 private:
  AuditLog() = default;
  std::mutex mu_;
  std::FILE* f_ = nullptr;
};

}  // namespace stride::server
