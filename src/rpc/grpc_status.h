#pragma once
// The API's refusals and errors as gRPC statuses.
#include <grpcpp/support/status.h>

#include "http/json_fields.h"
#include "serving/admission.h"

namespace stride::rpc {

inline grpc::StatusCode grpc_code_for(int http_status) {
  switch (http_status) {
    case 400: case 413: return grpc::StatusCode::INVALID_ARGUMENT;
    case 401: return grpc::StatusCode::UNAUTHENTICATED;
    case 403: return grpc::StatusCode::PERMISSION_DENIED;
    case 404: return grpc::StatusCode::NOT_FOUND;
    case 429: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 503: return grpc::StatusCode::UNAVAILABLE;
    default: return grpc::StatusCode::INTERNAL;
  }
}

inline grpc::Status to_grpc(const server::ApiError& e) {
  return {grpc_code_for(e.status), e.param.empty() ? e.message : e.param + ": " + e.message};
}

inline grpc::Status to_grpc(const serving::Refusal& r) {
  return {r.exhausted() ? grpc::StatusCode::RESOURCE_EXHAUSTED : grpc::StatusCode::UNAVAILABLE, r.message};
}

}  // namespace stride::rpc
