#pragma once
// stride.v1.Inference on the serving stack: each call is checked like its
// HTTP twin (keys, allowlist, rate and in-flight limits, the request rules of
// /v1/completions), submitted to the same scheduler and written to the same
// audit log.
#include <atomic>
#include <memory>

#include "http/api.h"
#include "rpc/call_record.h"
#include "stride/v1/inference.grpc.pb.h"

namespace stride::rpc {

class InferenceService final : public stride::v1::Inference::CallbackService {
 public:
  explicit InferenceService(server::Api& api) : api_(api) {}

  // On gRPC's callback threads; none of them blocks (rpc/generate_call.h).
  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(grpc::CallbackServerContext* ctx,
                                                           const v1::GenerateRequest* req) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* ctx, const v1::TokenizeRequest* req,
                                     v1::TokenizeResponse* out) override;
  grpc::ServerUnaryReactor* Models(grpc::CallbackServerContext* ctx, const v1::ModelsRequest* req,
                                   v1::ModelsResponse* out) override;

 private:
  // Allowlist, API key and a loaded model; fills rec's client and key.
  grpc::Status admit(grpc::CallbackServerContext* ctx, CallRecord& rec, server::ModelPtr& model);
  // Checks, prepares and submits a Generate request; OK with *ch and *slot set.
  grpc::Status submit(grpc::CallbackServerContext* ctx, const v1::GenerateRequest& req, CallRecord& rec,
                      std::unique_ptr<serving::Admission::Slot>& slot, std::shared_ptr<serving::RequestChannel>& ch);
  grpc::Status tokenize(grpc::CallbackServerContext* ctx, const v1::TokenizeRequest& req, v1::TokenizeResponse& out);
  grpc::Status models(grpc::CallbackServerContext* ctx, v1::ModelsResponse& out);

  server::Api& api_;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace stride::rpc
