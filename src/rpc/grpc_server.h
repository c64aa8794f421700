#pragma once
// The gRPC front end of `stride serve` (proto/stride/v1/inference.proto):
// Generate, Tokenize, Models and the standard health service, on their own
// port, sharing the HTTP API's scheduler, keys, limits and audit log.
#include <memory>

#include "core/status.h"
#include "http/api.h"

namespace grpc {
class Server;
}

namespace stride::rpc {

class InferenceService;

class GrpcServer {
 public:
  // Listens on cfg.host:cfg.grpc_port (0 picks a free port) with TLS when
  // the HTTP server has it. Health says NOT_SERVING until set_serving(true).
  static Expected<std::unique_ptr<GrpcServer>> start(server::Api& api, const serving::ServeConfig& cfg);
  ~GrpcServer();

  int port() const { return port_; }
  void set_serving(bool serving);
  // Stops accepting calls; running ones get until the deadline to finish.
  void shutdown(double grace_seconds);

 private:
  GrpcServer() = default;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace stride::rpc
