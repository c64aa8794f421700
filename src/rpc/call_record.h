#pragma once
// One gRPC call's line in the audit log, written when the record goes (a
// call drops it once its outcome is settled, before the client hears it).
#include <chrono>
#include <cstdio>
#include <string>

#include <grpcpp/support/status.h>

#include "http/api.h"
#include "http/audit_log.h"

namespace stride::rpc {

struct CallRecord {
  CallRecord(server::Api& api, uint64_t n, std::string method) : api(api) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "rpc-%08llx", (unsigned long long)n);
    // Move-assigned strings: GCC 12 at -O3 warns (-Wrestrict, falsely) on
    // assigning literals here.
    r.request_id = std::string(buf);
    r.endpoint = std::move(method);
    r.client_ip = std::string("-");
    r.key_id = std::string("-");
  }
  ~CallRecord() {
    if (!api.audit()) return;
    r.latency_s = std::chrono::duration<double>(serving::Clock::now() - start).count();
    r.model_version = model_version;
    api.audit()->write(r);
  }
  CallRecord(const CallRecord&) = delete;
  CallRecord& operator=(const CallRecord&) = delete;

  grpc::Status finish(grpc::Status st) {
    r.status = st.ok() ? 200 : 1000 + (int)st.error_code();  // 1000 + gRPC code: not an HTTP status
    return st;
  }
  server::Api& api;
  server::AuditRecord r;
  std::string model_version;
  serving::Clock::time_point start = serving::Clock::now();
};

}  // namespace stride::rpc
