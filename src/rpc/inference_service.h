#pragma once
// stride.v1.Inference on the serving stack: each call is checked like its
// HTTP twin (keys, allowlist, rate and in-flight limits, the request rules of
// /v1/completions), submitted to the same scheduler and written to the same
// audit log.
#include "http/api.h"
#include "stride/v1/inference.grpc.pb.h"

namespace stride::rpc {

class InferenceService final : public stride::v1::Inference::Service {
 public:
  explicit InferenceService(server::Api& api) : api_(api) {}

  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override;
  grpc::Status Tokenize(grpc::ServerContext* ctx, const v1::TokenizeRequest* req,
                        v1::TokenizeResponse* out) override;
  grpc::Status Models(grpc::ServerContext* ctx, const v1::ModelsRequest* req, v1::ModelsResponse* out) override;

 private:
  struct CallRecord;  // one call's audit line, written when the call ends
  // Allowlist, API key and a loaded model; fills rec's client and key.
  grpc::Status admit(grpc::ServerContext* ctx, CallRecord& rec, server::ModelPtr& model);

  server::Api& api_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace stride::rpc
