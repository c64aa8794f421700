#include "rpc/grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "rpc/inference_service.h"

namespace stride::rpc {

namespace {

Expected<std::string> read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Expected<std::shared_ptr<grpc::ServerCredentials>> credentials(const serving::ServeConfig& cfg) {
  if (cfg.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  STRIDE_ASSIGN_OR_RETURN(std::string cert, read_text(cfg.tls_cert_file));
  STRIDE_ASSIGN_OR_RETURN(std::string key, read_text(cfg.tls_key_file));
  grpc::SslServerCredentialsOptions opts;
  opts.pem_key_cert_pairs.push_back({key, cert});
  return grpc::SslServerCredentials(opts);
}

}  // namespace

Expected<std::unique_ptr<GrpcServer>> GrpcServer::start(server::Api& api, const serving::ServeConfig& cfg) {
  std::unique_ptr<GrpcServer> s(new GrpcServer());
  s->service_ = std::make_unique<InferenceService>(api);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder b;
  const std::string host = cfg.host.find(':') != std::string::npos ? "[" + cfg.host + "]" : cfg.host;
  STRIDE_ASSIGN_OR_RETURN(auto creds, credentials(cfg));
  b.AddListeningPort(host + ":" + std::to_string(cfg.grpc_port), creds, &s->port_);
  b.RegisterService(s->service_.get());
  // The same body limit as HTTP; a 32K-token prompt of packed ids is ~128 KiB.
  b.SetMaxReceiveMessageSize((int)std::min<int64_t>(cfg.max_body_bytes, INT32_MAX));
  // Idle connections close as HTTP keep-alive ones do; gRPC's own threads are bounded.
  b.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, (int)std::min(cfg.idle_timeout_s * 1000.0, 2e9));
  grpc::ResourceQuota quota("stride-grpc");
  quota.SetMaxThreads(std::max(8, cfg.max_connections < 256 ? cfg.max_connections : 256));
  b.SetResourceQuota(quota);
  s->server_ = b.BuildAndStart();
  if (!s->server_ || s->port_ == 0) {
    return IoError("gRPC: cannot listen on " + host + ":" + std::to_string(cfg.grpc_port));
  }
  s->set_serving(false);
  return s;
}

GrpcServer::~GrpcServer() { shutdown(0); }

void GrpcServer::set_serving(bool serving) {
  if (!server_) return;
  auto* health = server_->GetHealthCheckService();
  if (!health) return;
  health->SetServingStatus(serving);
  health->SetServingStatus("stride.v1.Inference", serving);
}

void GrpcServer::shutdown(double grace_seconds) {
  if (!server_) return;
  set_serving(false);
  server_->Shutdown(std::chrono::system_clock::now() +
                    std::chrono::milliseconds((int64_t)(grace_seconds * 1000)));
  server_->Wait();
  server_.reset();
}

}  // namespace stride::rpc
