#pragma once
// What the API's router and endpoint handlers share, passed by reference:
// the configuration, the counters, the audit log, the admission limits, the
// served model and the saved-session store.
#include <memory>
#include <vector>

#include "http/access.h"
#include "http/audit_log.h"
#include "http/served_model.h"
#include "serving/admission.h"
#include "serving/config.h"
#include "serving/metrics.h"
#include "session/session_store.h"

namespace stride::server {

struct ApiContext {
  ApiContext(const serving::ServeConfig& c, serving::Metrics& m, AuditLog* a, std::vector<Cidr> allow)
      : cfg(c), metrics(m), audit(a), allowlist(std::move(allow)), admission(c), served(admission, m) {}

  const serving::ServeConfig& cfg;
  serving::Metrics& metrics;
  AuditLog* audit;
  const std::vector<Cidr> allowlist;
  serving::Admission admission;  // ready, draining, rate and in-flight limits (shared with gRPC)
  ServedModel served;
  std::unique_ptr<SessionStore> sessions;  // saved sessions (session_dir); null: the session endpoints answer 404
};

}  // namespace stride::server
