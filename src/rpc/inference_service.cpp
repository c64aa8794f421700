#include "rpc/inference_service.h"

#include <chrono>
#include <cstdio>

#include "http/access.h"
#include "http/audit_log.h"
#include "http/openai_request.h"
#include "serving/generation_checks.h"
#include "serving/prepare_generation.h"

namespace stride::rpc {

using serving::Clock;

namespace {

grpc::StatusCode grpc_code_for(int http_status) {
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

grpc::Status to_grpc(const server::ApiError& e) {
  return {grpc_code_for(e.status), e.param.empty() ? e.message : e.param + ": " + e.message};
}

grpc::Status to_grpc(const serving::Refusal& r) {
  return {r.exhausted() ? grpc::StatusCode::RESOURCE_EXHAUSTED : grpc::StatusCode::UNAVAILABLE, r.message};
}

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

struct InferenceService::CallRecord {
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
    r.latency_s = std::chrono::duration<double>(Clock::now() - start).count();
    r.model_version = model_version;
    api.audit()->write(r);
  }
  grpc::Status finish(grpc::Status st) {
    r.status = st.ok() ? 200 : 1000 + (int)st.error_code();  // 1000 + gRPC code: not an HTTP status
    return st;
  }
  server::Api& api;
  server::AuditRecord r;
  std::string model_version;
  Clock::time_point start = Clock::now();
};

grpc::Status InferenceService::admit(grpc::ServerContext* ctx, CallRecord& rec, server::ModelPtr& model) {
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

grpc::Status InferenceService::Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                                        grpc::ServerWriter<v1::GenerateResponse>* writer) {
  CallRecord rec(api_, next_id_++, "/stride.v1.Inference/Generate");
  server::ModelPtr model;
  if (grpc::Status st = admit(ctx, rec, model); !st.ok()) return rec.finish(st);
  if (grpc::Status st = needs_generator(*model); !st.ok()) return rec.finish(st);
  const serving::ServeConfig& cfg = api_.config();
  serving::Admission& admission = api_.admission();
  const std::string who = rec.r.key_id != "-" ? rec.r.key_id : rec.r.client_ip;
  if (auto r = admission.take_rate_token(who)) return rec.finish(to_grpc(*r));
  if (auto r = admission.check_draining()) return rec.finish(to_grpc(*r));

  if (req->model().size() > 1024) {
    return rec.finish({grpc::StatusCode::INVALID_ARGUMENT, "model: 'model' is longer than 1024 bytes"});
  }
  if (server::ApiError e = server::check_model_name(req->model(), model->names); !e.ok()) {
    return rec.finish(to_grpc(e));
  }
  const serving::PrepareContext pc{&cfg, model->engine->tokenizer(), &model->chat, model->engine->config().n_vocab};
  const serving::GenerationRequest gen = generation_of(*req);
  serving::PreparedGeneration g;
  serving::RequestError e = serving::check_generation(gen, cfg.max_context_length, pc.n_vocab);
  if (e.ok()) e = serving::prepare_generation(gen, pc, g);
  if (!e.ok()) return rec.finish(to_grpc(server::api_error(e)));
  rec.r.prompt_tokens = (int)g.req.prompt.size();
  if (cfg.audit_log_prompts) rec.r.prompt = g.prompt_text;
  serving::Admission::Slot slot(admission, who);
  if (auto r = slot.refusal()) return rec.finish(to_grpc(*r));
  g.req.id = rec.r.request_id;
  g.req.deadline = Clock::now() + std::chrono::microseconds((int64_t)(cfg.request_timeout_s * 1e6));
  auto ch = std::make_shared<serving::RequestChannel>(std::move(g.req));
  if (auto r = admission.submit(*model->scheduler, ch)) return rec.finish(to_grpc(*r));
  for (;;) {
    auto ev = ch->wait_next([&] { return ctx->IsCancelled(); });
    if (!ev) {
      rec.r.finish_reason = "client_disconnected";
      return rec.finish({grpc::StatusCode::CANCELLED, "the client cancelled the call"});
    }
    v1::GenerateResponse out;
    if (ev->kind == serving::EventKind::Token) {
      if (ev->token_ids.empty() && ev->text.empty()) continue;
      out.mutable_token_ids()->Add(ev->token_ids.begin(), ev->token_ids.end());
      out.set_text(ev->text);
      rec.r.completion_tokens += (int)ev->token_ids.size();
      if (!writer->Write(out)) {
        ch->cancel();
        rec.r.finish_reason = "client_disconnected";
        return rec.finish({grpc::StatusCode::CANCELLED, "the stream broke"});
      }
      continue;
    }
    if (ev->kind == serving::EventKind::Error) {
      return rec.finish({grpc_code_for(server::http_status_for(Status(ev->code, ev->message))), ev->message});
    }
    out.set_finish_reason(ev->finish_reason);
    out.mutable_usage()->set_prompt_tokens(ev->prompt_tokens);
    out.mutable_usage()->set_completion_tokens(ev->completion_tokens);
    out.mutable_usage()->set_cached_tokens(ev->cached_tokens);
    rec.r.completion_tokens = ev->completion_tokens;
    rec.r.finish_reason = ev->finish_reason;
    writer->Write(out);
    return rec.finish(grpc::Status::OK);
  }
}

grpc::Status InferenceService::Tokenize(grpc::ServerContext* ctx, const v1::TokenizeRequest* req,
                                        v1::TokenizeResponse* out) {
  CallRecord rec(api_, next_id_++, "/stride.v1.Inference/Tokenize");
  server::ModelPtr model;
  if (grpc::Status st = admit(ctx, rec, model); !st.ok()) return rec.finish(st);
  if (grpc::Status st = needs_generator(*model); !st.ok()) return rec.finish(st);
  const Tokenizer& tok = *model->engine->tokenizer();
  const auto ids = tok.encode(req->text(), req->add_special_tokens() && tok.add_bos_default(), req->parse_special());
  out->mutable_ids()->Add(ids.begin(), ids.end());
  rec.r.prompt_tokens = (int)ids.size();
  return rec.finish(grpc::Status::OK);
}

grpc::Status InferenceService::Models(grpc::ServerContext* ctx, const v1::ModelsRequest*, v1::ModelsResponse* out) {
  CallRecord rec(api_, next_id_++, "/stride.v1.Inference/Models");
  server::ModelPtr model;
  if (grpc::Status st = admit(ctx, rec, model); !st.ok()) return rec.finish(st);
  for (const std::string& name : model->names) {
    v1::Model* m = out->add_models();
    m->set_id(name);
    m->set_version(model->version);
    m->set_sha256(model->sha256);
    m->set_max_context_length(api_.config().max_context_length);
  }
  return rec.finish(grpc::Status::OK);
}

}  // namespace stride::rpc
