#include "server/audit_log.h"

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

namespace stride::server {

Expected<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  std::unique_ptr<AuditLog> log(new AuditLog());
  log->f_ = std::fopen(path.c_str(), "a");
  if (!log->f_) return IoError("cannot open audit log " + path);
  return log;
}

AuditLog::~AuditLog() {
  if (f_) std::fclose(f_);
}

void AuditLog::write(const AuditRecord& r) {
  nlohmann::json j;
  j["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  j["request_id"] = r.request_id;
  j["client_ip"] = r.client_ip;
  j["key_id"] = r.key_id;
  j["model_version"] = r.model_version;
  j["endpoint"] = r.endpoint;
  j["status"] = r.status;
  j["prompt_tokens"] = r.prompt_tokens;
  j["completion_tokens"] = r.completion_tokens;
  j["latency_s"] = r.latency_s;
  if (!r.finish_reason.empty()) j["finish_reason"] = r.finish_reason;
  if (!r.prompt.empty()) j["prompt"] = r.prompt;
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);
}

}  // namespace stride::server
