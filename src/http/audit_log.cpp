#include "http/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

namespace stride::server {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Invalid UTF-8 (a prompt, a header value) is replaced, never thrown on.
std::string to_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace

Expected<int> AuditLog::open_fd(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP) return IoError("cannot open audit log " + path + ": it is a symbolic link (refused)");
    return IoError("cannot open audit log " + path + ": " + std::strerror(err));
  }
  return fd;
}

Expected<std::unique_ptr<AuditLog>> AuditLog::open(const std::string& path) {
  STRIDE_ASSIGN_OR_RETURN(const int fd, open_fd(path));
  std::unique_ptr<AuditLog> log(new AuditLog());
  log->path_ = path;
  log->fd_ = fd;
  return log;
}

AuditLog::~AuditLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status AuditLog::reopen() {
  STRIDE_ASSIGN_OR_RETURN(const int fd, open_fd(path_));
  std::lock_guard<std::mutex> lock(mu_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return Status::Ok();
}

int64_t AuditLog::failed_writes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_writes_;
}

// One write(2) per line under O_APPEND: lines from concurrent writers (or
// another process sharing the file) never interleave.
Status AuditLog::append(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t w = ::write(fd_, line.data() + done, line.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ++failed_writes_;
      return IoError("cannot write audit log " + path_ + ": " + std::strerror(w < 0 ? errno : EIO));
    }
    done += (size_t)w;
  }
  return Status::Ok();
}

void AuditLog::write(const AuditRecord& r) {
  nlohmann::json j;
  j["time"] = now_s();
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
  (void)append(to_line(j));  // counted in failed_writes_
}

Status AuditLog::write_event(const AuditEvent& e) {
  nlohmann::json j;
  for (const auto& [name, value] : e.fields) j[name] = value;
  // Set last: a field named like a fixed member cannot forge it.
  j["time"] = now_s();
  j["kind"] = e.kind;
  j["client_ip"] = e.client_ip.empty() ? "-" : e.client_ip;
  j["key_id"] = e.key_id.empty() ? "-" : e.key_id;
  j["detail"] = e.detail;
  return append(to_line(j));
}

}  // namespace stride::server
