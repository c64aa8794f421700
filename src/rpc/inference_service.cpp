#include "rpc/inference_service.h"

#include <chrono>

#include "http/access.h"
#include "http/openai_request.h"
#include "rpc/generate_call.h"
#include "rpc/grpc_status.h"
#include "serving/generation_checks.h"
#include "serving/prepare_generation.h"

namespace stride::rpc {

using serving::Clock;

namespace {

// "ipv4:127.0.0.1:5000" / "ipv6:[::1]:5000" -> the address.
std::string peer_ip(const std::string& peer) {
  std::string p = peer.substr(peer.find(':') + 1);
  if (!p.empty() && p[0] == '[') return p.substr(1, p.find(']') - 1);
  return p.substr(0, p.rfind(':'));
}

// The request straight from its fields, under the rules of /v1/completions.
serving::GenerationRequest generation_of(const v1::GenerateRequest& r) {
  serving::GenerationRequest g;
  if (r.has_token_ids()) {
    g.prompt = serving::GenerationRequest::Prompt::Tokens;
    g.tokens.assign(r.token_ids().ids().begin(), r.token_ids().ids().end());
  } else {
    g.text = r.text();
  }
  if (r.has_max_tokens()) g.max_tokens = r.max_tokens();
  const v1::Sampling& s = r.sampling();
  SamplingParams& p = g.sampling;
  if (s.has_temperature()) p.temperature = s.temperature();
  if (s.has_top_p()) p.top_p = s.top_p();
  if (s.has_top_k()) p.top_k = s.top_k();
  if (s.has_min_p()) p.min_p = s.min_p();
  if (s.has_repetition_penalty()) p.repeat_penalty = s.repetition_penalty();
  if (s.has_presence_penalty()) p.presence_penalty = s.presence_penalty();
  if (s.has_frequency_penalty()) p.frequency_penalty = s.frequency_penalty();
  if (s.has_seed()) p.seed = s.seed();
  g.stop.assign(r.stop().begin(), r.stop().end());
  g.ignore_eos = r.ignore_eos();
  return g;
}

// An embeddings-only model (a BERT encoder) has no engine to generate or tokenize with.
grpc::Status needs_generator(const server::ModelHandle& m) {
  if (m.engine) return grpc::Status::OK;
  return {grpc::StatusCode::FAILED_PRECONDITION, "model: '" + m.id + "' is an embedding model"};
}

}  // namespace

grpc::Status InferenceService::admit(grpc::CallbackServerContext* ctx, CallRecord& rec, server::ModelPtr& model) {
  rec.r.client_ip = peer_ip(ctx->peer());
  if (!server::ip_allowed(rec.r.client_ip, api_.allowlist())) {
    return {grpc::StatusCode::PERMISSION_DENIED, "client address " + rec.r.client_ip + " is not in the allowlist"};
  }
  const auto& keys = api_.config().api_keys;
  if (!keys.empty()) {
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    const std::string token = it == md.end() ? "" : server::bearer_token(std::string(it->second.data(), it->second.size()));
    const int idx = token.empty() ? -1 : server::match_api_key(token, keys);
    if (idx < 0) {
      return {grpc::StatusCode::UNAUTHENTICATED,
              token.empty() ? "missing bearer token (metadata authorization: Bearer <key>)" : "invalid API key"};
    }
    rec.r.key_id = "key#" + std::to_string(idx);
  }
  model = api_.model();
  if (auto r = api_.admission().check_ready(model != nullptr)) return to_grpc(*r);
  rec.model_version = model->version;
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceService::Generate(grpc::CallbackServerContext* ctx,
                                                                           const v1::GenerateRequest* req) {
  auto rec = std::make_unique<CallRecord>(api_, next_id_++, "/stride.v1.Inference/Generate");
  std::unique_ptr<serving::Admission::Slot> slot;
  std::shared_ptr<serving::RequestChannel> ch;
  if (grpc::Status st = submit(ctx, *req, *rec, slot, ch); !st.ok()) return GenerateCall::refused(std::move(rec), st);
  return GenerateCall::relay(std::move(rec), std::move(slot), std::move(ch));
}

grpc::Status InferenceService::submit(grpc::CallbackServerContext* ctx, const v1::GenerateRequest& req,
                                      CallRecord& rec, std::unique_ptr<serving::Admission::Slot>& slot,
                                      std::shared_ptr<serving::RequestChannel>& ch) {
  server::ModelPtr model;
  if (grpc::Status st = admit(ctx, rec, model); !st.ok()) return st;
  if (grpc::Status st = needs_generator(*model); !st.ok()) return st;
  const serving::ServeConfig& cfg = api_.config();
  serving::Admission& admission = api_.admission();
  const std::string who = rec.r.key_id != "-" ? rec.r.key_id : rec.r.client_ip;
  if (auto r = admission.take_rate_token(who)) return to_grpc(*r);
  if (auto r = admission.check_draining()) return to_grpc(*r);

  if (req.model().size() > 1024) return {grpc::StatusCode::INVALID_ARGUMENT, "model: 'model' is longer than 1024 bytes"};
  if (server::ApiError e = server::check_model_name(req.model(), model->names); !e.ok()) return to_grpc(e);
  const serving::PrepareContext pc{&cfg, model->engine->tokenizer(), &model->chat, model->engine->config().n_vocab};
  const serving::GenerationRequest gen = generation_of(req);
  serving::PreparedGeneration g;
  serving::RequestError e = serving::check_generation(gen, cfg.max_context_length, pc.n_vocab);
  if (e.ok()) e = serving::prepare_generation(gen, pc, g);
  if (!e.ok()) return to_grpc(server::api_error(e));
  rec.r.prompt_tokens = (int)g.req.prompt.size();
  if (cfg.audit_log_prompts) rec.r.prompt = g.prompt_text;
  slot = std::make_unique<serving::Admission::Slot>(admission, who);
  if (auto r = slot->refusal()) return to_grpc(*r);
  g.req.id = rec.r.request_id;
  g.req.deadline = Clock::now() + std::chrono::microseconds((int64_t)(cfg.request_timeout_s * 1e6));
  ch = std::make_shared<serving::RequestChannel>(std::move(g.req));
  if (auto r = admission.submit(*model->scheduler, ch)) return to_grpc(*r);
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* InferenceService::Tokenize(grpc::CallbackServerContext* ctx, const v1::TokenizeRequest* req,
                                                     v1::TokenizeResponse* out) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(tokenize(ctx, *req, *out));
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Models(grpc::CallbackServerContext* ctx, const v1::ModelsRequest*,
                                                   v1::ModelsResponse* out) {
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(models(ctx, *out));
  return reactor;
}

grpc::Status InferenceService::tokenize(grpc::CallbackServerContext* ctx, const v1::TokenizeRequest& req,
                                        v1::TokenizeResponse& out) {
  CallRecord rec(api_, next_id_++, "/stride.v1.Inference/Tokenize");
  server::ModelPtr model;
  if (grpc::Status st = admit(ctx, rec, model); !st.ok()) return rec.finish(st);
  if (grpc::Status st = needs_generator(*model); !st.ok()) return rec.finish(st);
  const Tokenizer& tok = *model->engine->tokenizer();
  const auto ids = tok.encode(req.text(), req.add_special_tokens() && tok.add_bos_default(), req.parse_special());
  out.mutable_ids()->Add(ids.begin(), ids.end());
  rec.r.prompt_tokens = (int)ids.size();
  return rec.finish(grpc::Status::OK);
}

grpc::Status InferenceService::models(grpc::CallbackServerContext* ctx, v1::ModelsResponse& out) {
  CallRecord rec(api_, next_id_++, "/stride.v1.Inference/Models");
  server::ModelPtr model;
  if (grpc::Status st = admit(ctx, rec, model); !st.ok()) return rec.finish(st);
  for (const std::string& name : model->names) {
    v1::Model* m = out.add_models();
    m->set_id(name);
    m->set_version(model->version);
    m->set_sha256(model->sha256);
    m->set_max_context_length(api_.config().max_context_length);
  }
  return rec.finish(grpc::Status::OK);
}

}  // namespace stride::rpc
