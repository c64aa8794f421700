// POST /v1/embeddings: validate, submit (to the scheduler for a decoder
// model, to the encoder service for a BERT encoder), gather one vector per
// input, answer in OpenAI's shape.
#include <chrono>

#include "http/api_embeddings.h"
#include "http/embeddings_request.h"
#include "http/openai_response.h"

namespace stride::server {

using serving::Clock;

namespace {

EmbeddingsContext embeddings_context(const ModelHandle& m, const serving::ServeConfig& cfg) {
  EmbeddingsContext ctx;
  ctx.model_id = m.id;
  ctx.model_names = m.names;
  ctx.max_inputs = cfg.max_embedding_inputs;
  ctx.max_total_tokens = cfg.max_embedding_tokens;
  ctx.strict_requests = cfg.strict_requests;
  if (m.encoder) {
    const EncoderModel& enc = m.encoder->model();
    ctx.encode = [&enc](const std::string& text) { return enc.tokenizer().encode(text); };
    ctx.n_vocab = enc.config().n_vocab;
    ctx.n_embd = enc.config().n_embd;
    ctx.max_input_tokens = enc.max_tokens();
  } else {
    const Tokenizer* tok = m.engine->tokenizer();
    ctx.encode = [tok](const std::string& text) { return tok->encode(text, tok->add_bos_default(), false); };
    ctx.n_vocab = m.engine->config().n_vocab;
    ctx.n_embd = m.engine->config().n_embd;
    ctx.max_input_tokens = cfg.max_prompt_tokens > 0 ? std::min(cfg.max_prompt_tokens, cfg.max_context_length)
                                                     : cfg.max_context_length;
  }
  return ctx;
}

// Gathers one vector per input, then answers with all of them.
class EmbeddingsRelay final : public EventRelay {
 public:
  EmbeddingsRelay(ApiHandler& api, ApiCall& call, std::unique_ptr<serving::Admission::Slot> slot,
                  std::shared_ptr<serving::RequestChannel> ch, size_t n_inputs, bool base64, int prompt_tokens)
      : api_(api), call_(call), slot_(std::move(slot)), ch_(std::move(ch)), vectors_(n_inputs), base64_(base64),
        prompt_tokens_(prompt_tokens) {}

  bool on_event(serving::Event& ev, Responder& res) override {
    const size_t n_inputs = vectors_.size();
    if (ev.kind == serving::EventKind::Embedding) {
      if (ev.index < 0 || (size_t)ev.index >= n_inputs || !vectors_[(size_t)ev.index].empty()) return true;
      vectors_[(size_t)ev.index] = std::move(ev.embedding);
      if (++received_ < n_inputs) return true;
      call_.finish_reason = "stop";
      api_.json(res, call_, 200, dump(embeddings_json(vectors_, base64_, call_.model->id, prompt_tokens_)));
      return false;
    }
    if (ev.kind == serving::EventKind::Error) {
      ch_->cancel();  // the other inputs stop too
      const Status failed(ev.code, ev.message);
      call_.finish_reason = "error";
      api_.error(res, call_, http_status_for(failed), ev.message, "", "embedding_failed");
      return false;
    }
    if (ev.kind == serving::EventKind::Finish) {
      ch_->cancel();
      call_.finish_reason = ev.finish_reason;
      if (ev.finish_reason == "timeout") {
        api_.error(res, call_, 503,
                   "the request did not finish within request_timeout_s (" +
                       std::to_string(api_.config().request_timeout_s) + " s)",
                   "", "timeout");
      } else {
        api_.error(res, call_, 503, "the request was cancelled (" + ev.finish_reason + ")", "", "cancelled");
      }
      return false;
    }
    return true;
  }

  void on_client_gone() override { call_.finish_reason = "client_disconnected"; }

 private:
  ApiHandler& api_;
  ApiCall& call_;
  std::unique_ptr<serving::Admission::Slot> slot_;  // counted against the key while the request runs
  std::shared_ptr<serving::RequestChannel> ch_;
  std::vector<std::vector<float>> vectors_;
  const bool base64_;
  const int prompt_tokens_;
  size_t received_ = 0;
};

}  // namespace

void EmbeddingsHandler::embeddings(const HttpRequest& req, Responder& res, ApiCall& call) {
  nlohmann::json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  const ModelHandle& m = *call.model;
  EmbeddingsCall ec;
  if (ApiError e = parse_embeddings(body, embeddings_context(m, cfg_), ec); !e.ok()) {
    return error(res, call, e.status, e.message, e.param, e.code);
  }
  int prompt_tokens = 0;
  for (const auto& ids : ec.inputs) prompt_tokens += (int)ids.size();
  call.prompt_tokens = prompt_tokens;
  if (cfg_.audit_log_prompts) call.prompt = ec.prompt_text;

  auto embed = std::make_shared<serving::EmbedRequest>();
  embed->inputs = std::move(ec.inputs);
  const size_t n_inputs = embed->inputs.size();
  if (!m.encoder) {
    Pooling pooling = Pooling::Last;
    (void)parse_pooling(cfg_.embedding_pooling, pooling);  // validated with the config
    embed->pooling = pooling;
    embed->normalize = cfg_.embedding_normalize;
  }
  serving::ServeRequest sr;
  sr.id = call.id;
  sr.deadline = Clock::now() + std::chrono::microseconds((int64_t)(cfg_.request_timeout_s * 1e6));
  sr.embed = std::move(embed);

  auto slot = std::make_unique<serving::Admission::Slot>(admission_, client_key(call));
  if (auto r = slot->refusal()) return refuse(res, call, *r);
  auto ch = std::make_shared<serving::RequestChannel>(std::move(sr));
  auto refused = m.encoder ? admission_.submit(*m.encoder, ch) : admission_.submit(*m.scheduler, ch);
  if (refused) return refuse(res, call, *refused);
  res.relay(ch, std::make_unique<EmbeddingsRelay>(*this, call, std::move(slot), ch, n_inputs, ec.base64, prompt_tokens));
}

}  // namespace stride::server
