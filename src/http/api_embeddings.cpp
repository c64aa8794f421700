// POST /v1/embeddings: validate, submit (to the scheduler for a decoder
// model, to the encoder service for a BERT encoder), gather one vector per
// input, answer in OpenAI's shape.
#include <chrono>

#include "http/api.h"
#include "http/api_call.h"
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

}  // namespace

void Api::embeddings(const HttpRequest& req, Responder& res, Call& call) {
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

  serving::Admission::Slot slot(admission_, client_key(call));
  if (auto r = slot.refusal()) return refuse(res, call, *r);
  auto ch = std::make_shared<serving::RequestChannel>(std::move(sr));
  auto refused = m.encoder ? admission_.submit(*m.encoder, ch) : admission_.submit(*m.scheduler, ch);
  if (refused) return refuse(res, call, *refused);

  std::vector<std::vector<float>> vectors(n_inputs);
  size_t received = 0;
  while (received < n_inputs) {
    auto ev = wait_event(res, call, *ch);
    if (!ev) return;
    if (ev->kind == serving::EventKind::Embedding) {
      if (ev->index < 0 || (size_t)ev->index >= n_inputs || !vectors[(size_t)ev->index].empty()) continue;
      vectors[(size_t)ev->index] = std::move(ev->embedding);
      ++received;
    } else if (ev->kind == serving::EventKind::Error) {
      ch->cancel();  // the other inputs stop too
      const Status failed(ev->code, ev->message);
      call.finish_reason = "error";
      return error(res, call, http_status_for(failed), ev->message, "", "embedding_failed");
    } else if (ev->kind == serving::EventKind::Finish) {
      ch->cancel();
      call.finish_reason = ev->finish_reason;
      if (ev->finish_reason == "timeout") {
        return error(res, call, 503,
                     "the request did not finish within request_timeout_s (" + std::to_string(cfg_.request_timeout_s) + " s)",
                     "", "timeout");
      }
      return error(res, call, 503, "the request was cancelled (" + ev->finish_reason + ")", "", "cancelled");
    }
  }
  call.finish_reason = "stop";
  json(res, call, 200, dump(embeddings_json(vectors, ec.base64, m.id, prompt_tokens)));
}

}  // namespace stride::server
