// Saved sessions: POST /v1/sessions/{name} prefills a prompt and writes its
// KV pages to session_dir; GET /v1/sessions lists them, GET and DELETE
// /v1/sessions/{name} show and delete one; a completion or chat request
// with "session": NAME starts from its pages (restored into the prefix
// cache, kv/session_pages.cpp) and prefills only the rest of its prompt.
#include <chrono>
#include <optional>

#include "loader/encrypted_file.h"
#include "http/api_sessions.h"
#include "http/log.h"
#include "http/openai_prompt.h"
#include "http/openai_request.h"
#include "http/openai_response.h"
#include "jinja/template.h"

namespace stride::server {

using Json = nlohmann::json;
using serving::Clock;

namespace {

constexpr std::string_view kSessionsPrefix = "/v1/sessions/";

SessionIdentity identity_of(const ModelHandle& m) {
  Engine& e = *m.engine;
  const KvManagerConfig& kc = e.kv().config();
  SessionIdentity id;
  id.model_sha256 = m.sha256;
  id.model_version = m.version;
  id.architecture = arch_name(e.config().arch);
  id.n_vocab = e.config().n_vocab;
  id.n_layer = kc.n_layer;
  id.n_kv_heads = kc.n_kv_heads;
  id.head_dim_k = kc.head_dim_k;
  id.head_dim_v = kc.head_dim_v;
  id.page_size = kc.page_size;
  id.kv_storage = kv_storage_name(kc.storage);
  for (const PolicySpec& p : kc.layer_policies) id.layer_policies.push_back(policy_to_string(p));
  return id;
}

// The key session files of this model are sealed with: the model's own
// when its file is encrypted, else none.
Expected<std::optional<ModelKey>> key_of(const ModelHandle& m) {
  if (!is_encrypted_model(m.path)) return std::optional<ModelKey>();
  STRIDE_ASSIGN_OR_RETURN(ModelKey key, model_key_for(m.path));
  return std::optional<ModelKey>(key);
}

// The prompt to save, read as a generation of one greedy token: the same
// fields, rules, chat template, tokenization and limits as the request that
// continues it. A field sent as null is absent, as everywhere in the API.
ApiError read_session_prompt(const Json& body, const ParseContext& ctx, GenerationCall& out) {
  Fields f(body);
  const bool chat = f.find("messages") != nullptr;
  const Json* prompt = f.find("prompt");
  const Json* ids = f.find("prompt_token_ids");
  if ((int)(prompt != nullptr) + (int)chat + (int)(ids != nullptr) != 1)
    return bad_field("prompt", "give exactly one of 'prompt', 'messages' or 'prompt_token_ids'");
  if (ids && !ids->is_array())
    return bad_field("prompt_token_ids", "'prompt_token_ids' must be a list of token ids");
  if (prompt && !prompt->is_string())
    return bad_field("prompt", "'prompt' must be a string (token ids go in 'prompt_token_ids')");
  std::string model;
  STRIDE_API_TRY(f.opt_string("model", 1024, model));
  STRIDE_API_TRY(check_model_name(model, ctx.model_names));
  serving::GenerationRequest g;
  if (chat) {
    STRIDE_API_TRY(read_message_list(f.find("messages"), g));
    if (const Json* kw = f.find("chat_template_kwargs")) {
      if (!kw->is_object()) return bad_field("chat_template_kwargs", "'chat_template_kwargs' must be an object");
      g.template_kwargs = jinja::context_from_json(*kw);
    }
    g.add_generation_prompt = false;
    STRIDE_API_TRY(f.opt_bool("add_generation_prompt", g.add_generation_prompt));
  } else {
    STRIDE_API_TRY(f.opt_bool("parse_special", g.parse_special));
    STRIDE_API_TRY(read_prompt_value(prompt ? *prompt : *ids, ctx, g));
  }
  g.max_tokens = 1;
  g.sampling.temperature = 0;
  g.ignore_eos = true;
  STRIDE_API_TRY(read_attention(body, ctx));
  serving::PreparedGeneration p;
  STRIDE_API_TRY(api_error(serving::prepare_generation(g, ctx.prepare(), p)));
  out.chat = chat;
  out.req = std::move(p.req);
  out.prompt_text = std::move(p.prompt_text);
  out.tools.format = p.tool_format;
  return {};
}

int status_for_session(const Status& st) {
  switch (st.code()) {
    case StatusCode::kNotFound: return 404;
    case StatusCode::kInvalidArgument:
    case StatusCode::kCorrupt: return 400;
    case StatusCode::kResourceExhausted: return 413;
    default: return 500;
  }
}

const char* code_for_session(const Status& st) {
  switch (st.code()) {
    case StatusCode::kNotFound: return "session_not_found";
    case StatusCode::kCorrupt: return "session_corrupt";
    case StatusCode::kResourceExhausted: return "session_too_large";
    case StatusCode::kInvalidArgument: return "session_mismatch";
    default: return "session_io_error";
  }
}

Json session_json(const SessionFile& s, const SessionEntry& e) {
  return Json{{"object", "session"},
              {"name", s.name},
              {"n_tokens", s.kv.tokens.size()},
              {"cached_tokens", s.kv.covered_tokens()},
              {"bytes", e.bytes},
              {"sha256", e.sha256},
              {"created", s.created},
              {"model_version", s.identity.model_version},
              {"kv_type", s.identity.kv_storage},
              {"page_size", s.identity.page_size},
              {"attention", s.identity.layer_policies}};
}

}  // namespace

void SessionsHandler::sessions(const HttpRequest& req, Responder& res, ApiCall& call) {
  if (!sessions_)
    return error(res, call, 404, "saved sessions are off: start the server with session_dir (--session-dir)", "",
                 "sessions_disabled");
  const auto method = req.method();
  if (call.endpoint == "/v1/sessions") {
    if (method != http::verb::get)
      return error(res, call, 405, "method not allowed on /v1/sessions", "", "method_not_allowed", {{"Allow", "GET"}});
    auto listed = sessions_->list();
    if (!listed.ok()) return error(res, call, 500, listed.status().message(), "", "session_io_error");
    Json data = Json::array();
    for (const SessionEntry& e : *listed)
      data.push_back({{"object", "session"}, {"name", e.name}, {"bytes", e.bytes}, {"created", e.created}});
    return json(res, call, 200, dump(Json{{"object", "list"}, {"data", data}}));
  }
  const std::string name = call.endpoint.substr(kSessionsPrefix.size());
  if (Status st = SessionStore::check_name(name); !st.ok()) return error(res, call, 400, st.message(), "name", "invalid_session_name");
  if (method == http::verb::get) return show_session(res, call, name);
  if (method == http::verb::delete_) {
    if (Status st = sessions_->remove(name); !st.ok())
      return error(res, call, status_for_session(st), st.message(), "name", code_for_session(st));
    return json(res, call, 200, dump(Json{{"object", "session"}, {"name", name}, {"deleted", true}}));
  }
  if (method == http::verb::post) {
    if (auto r = admission_.check_draining()) return refuse(res, call, *r);
    return save_session(req, res, call, name);
  }
  error(res, call, 405, "method not allowed on " + call.endpoint, "", "method_not_allowed", {{"Allow", "GET, POST, DELETE"}});
}

void SessionsHandler::show_session(Responder& res, ApiCall& call, const std::string& name) {
  auto key = key_of(*call.model);
  if (!key.ok()) return error(res, call, 500, key.status().message(), "", "model_key");
  auto s = sessions_->load(name, identity_of(*call.model), *key ? &**key : nullptr);
  if (!s.ok()) return error(res, call, status_for_session(s.status()), s.status().message(), "name", code_for_session(s.status()));
  auto e = sessions_->describe(name);
  if (!e.ok()) return error(res, call, status_for_session(e.status()), e.status().message(), "name", code_for_session(e.status()));
  json(res, call, 200, dump(session_json(*s, *e)));
}

// Waits for the prompt's pages, then writes them to the store; the write is
// disk work, so it runs off the network threads.
class SessionsHandler::SessionSaveRelay final : public EventRelay {
 public:
  SessionSaveRelay(SessionsHandler& api, ApiCall& call, std::unique_ptr<serving::Admission::Slot> slot, std::string name,
                   size_t n_tokens, std::optional<ModelKey> key)
      : api_(api), call_(call), slot_(std::move(slot)), name_(std::move(name)), n_tokens_(n_tokens),
        key_(std::move(key)) {}

  bool on_event(serving::Event& ev, Responder& res) override {
    if (ev.kind == serving::EventKind::Error) {
      const Status st(ev.code, ev.message);
      api_.error(res, call_, http_status_for(st), "the session could not be saved: " + ev.message, "",
                 "session_save_failed");
      return false;
    }
    if (ev.kind != serving::EventKind::Finish) return true;
    call_.finish_reason = ev.finish_reason;
    call_.completion_tokens = 0;
    snapshot_ = ev.snapshot;
    if (!snapshot_) {
      api_.error(res, call_, 503,
                 "the session could not be saved: the request ended with '" + call_.finish_reason + "'", "",
                 "session_save_failed");
    }
    return false;
  }
  void on_client_gone() override { call_.finish_reason = "client_disconnected"; }
  bool finishes_off_strand() const override { return snapshot_ != nullptr; }

  void finish(Responder& res) override {
    SessionFile file;
    file.name = name_;
    file.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    file.identity = identity_of(*call_.model);
    file.kv = *snapshot_;
    auto saved = api_.sessions_->save(file, key_ ? &*key_ : nullptr);
    if (!saved.ok()) {
      return api_.error(res, call_, status_for_session(saved.status()), saved.status().message(), "",
                        code_for_session(saved.status()));
    }
    log(LogLevel::Info, "session saved",
        {{"name", name_}, {"tokens", std::to_string(n_tokens_)}, {"bytes", std::to_string(saved->bytes)}});
    api_.json(res, call_, 200, dump(session_json(file, *saved)));
  }

 private:
  SessionsHandler& api_;
  ApiCall& call_;
  std::unique_ptr<serving::Admission::Slot> slot_;  // counted against the key while the request runs
  const std::string name_;
  const size_t n_tokens_;
  const std::optional<ModelKey> key_;
  std::shared_ptr<const KvSnapshot> snapshot_;
};

void SessionsHandler::save_session(const HttpRequest& req, Responder& res, ApiCall& call, const std::string& name) {
  Json body;
  if (ApiError e = parse_json_object(req.body(), body); !e.ok()) return error(res, call, e.status, e.message, e.param, e.code);
  GenerationCall g;
  if (ApiError e = read_session_prompt(body, parse_context(req, call), g); !e.ok())
    return error(res, call, e.status, e.message, e.param, e.code);
  auto key = key_of(*call.model);
  if (!key.ok()) return error(res, call, 500, key.status().message(), "", "model_key");
  g.req.save_session = true;
  const size_t n_tokens = g.req.prompt.size();
  auto slot = std::make_unique<serving::Admission::Slot>(admission_, client_key(call));
  auto ch = submit_generation(res, call, *slot, g);
  if (!ch) return;
  res.relay(std::move(ch), std::make_unique<SessionSaveRelay>(*this, call, std::move(slot), name, n_tokens,
                                                              std::move(*key)));
}

bool SessionsHandler::attach_session(Responder& res, ApiCall& call, GenerationCall& g) {
  if (!sessions_) {
    error(res, call, 400, "'session' needs saved sessions, which are off (no session_dir)", "session", "sessions_disabled");
    return false;
  }
  if (Status st = SessionStore::check_name(g.session); !st.ok()) {
    error(res, call, 400, st.message(), "session", "invalid_session_name");
    return false;
  }
  auto key = key_of(*call.model);
  if (!key.ok()) {
    error(res, call, 500, key.status().message(), "", "model_key");
    return false;
  }
  auto s = sessions_->load(g.session, identity_of(*call.model), *key ? &**key : nullptr);
  if (!s.ok()) {
    const int status = s.status().code() == StatusCode::kNotFound ? 404 : status_for_session(s.status());
    error(res, call, status, s.status().message(), "session", code_for_session(s.status()));
    return false;
  }
  const std::vector<int32_t>& saved = s->kv.tokens;
  const std::vector<int32_t>& prompt = g.req.prompt;
  if (saved.size() > prompt.size() || !std::equal(saved.begin(), saved.end(), prompt.begin())) {
    size_t same = 0;
    while (same < saved.size() && same < prompt.size() && saved[same] == prompt[same]) ++same;
    error(res, call, 400,
          "the session's " + std::to_string(saved.size()) + " tokens are not a prefix of the prompt's " +
              std::to_string(prompt.size()) + " tokens (they differ from token " + std::to_string(same) + ")",
          "session", "session_prefix_mismatch");
    return false;
  }
  g.req.restore = std::make_shared<const KvSnapshot>(std::move(s->kv));
  return true;
}

}  // namespace stride::server
