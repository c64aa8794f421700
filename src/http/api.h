#pragma once
// The OpenAI-compatible API: routing, auth, JSON <-> serving structs. This is
// the only layer that sees JSON; the scheduler gets plain ServeRequests.
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "http/access.h"
#include "http/audit_log.h"
#include "http/error_body.h"
#include "http/http_server.h"
#include "serving/admission.h"
#include "serving/chat_template.h"
#include "serving/config.h"
#include "serving/metrics.h"
#include "serving/encoder_service.h"
#include "serving/scheduler.h"
#include "session/session_store.h"

namespace stride::server {

// One loaded model version: what the API serves. Shared by the requests
// using it, so a replaced version lives (and finishes its requests) until the
// last of them is done. Members are destroyed in reverse order: the scheduler
// drains and stops before its engine goes.
struct ModelHandle {
  std::unique_ptr<Engine> owned_engine;
  std::unique_ptr<serving::Scheduler> owned_scheduler;
  // An embeddings-only model (a BERT encoder) has these instead of an engine and a scheduler.
  std::unique_ptr<serving::EncoderService> owned_encoder;
  Engine* engine = nullptr;
  serving::Scheduler* scheduler = nullptr;
  serving::EncoderService* encoder = nullptr;
  std::string id;             // the name responses report (the first served name)
  std::vector<std::string> names;  // every name clients may pass as "model" (id first)
  std::string path;
  std::string version;        // the published version name, else a sha256 prefix (audit log, /v1/models)
  std::string sha256;         // of the file as stored
  Expected<serving::ChatTemplate> chat = NotFound("no model");
  PolicySpec attention;       // the engine's global-layer policy
};
using ModelPtr = std::shared_ptr<const ModelHandle>;

// Which model to load: a file with an optional expected sha256, and the
// published version it came from ("" for a plain file).
struct ModelRef {
  std::string path;
  std::string sha256;
  std::string version;
  std::string model_dir;  // set for a published version: it is recorded as ACTIVE once it serves
};
// A version of <model_dir> as a ModelRef (its recorded sha256 is then verified
// by the loader); "active" or "" names the version <model_dir>/ACTIVE records.
Expected<ModelRef> model_ref_for_version(const std::string& model_dir, const std::string& version);
// Records a published version that now serves as its directory's ACTIVE one
// (nothing for a plain file); a failure is logged and returned.
Status record_active_version(const ModelRef& ref);

// Loads and warms up a model; used at start-up, for /admin/model and SIGHUP.
using ModelLoader = std::function<Expected<std::shared_ptr<ModelHandle>>(const ModelRef&)>;

struct GenerationCall;  // openai_request.h
struct ParseContext;    // openai_request.h
struct WebAsset;        // web_assets.h
struct ResponseIds;     // openai_response.h
class ToolReplyStream;  // tool_reply.h

class Api {
 public:
  Api(const serving::ServeConfig& cfg, serving::Metrics& metrics, AuditLog* audit,
      std::vector<Cidr> allowlist);

  void handle(const HttpRequest& req, Responder& res);
  void set_model(std::shared_ptr<ModelHandle> m);  // serve this version from now on (then ready)
  void set_loader(ModelLoader loader) { loader_ = std::move(loader); }
  ModelPtr model() const;
  // Loads and warms `ref` beside the serving version, then switches new
  // requests to it; on failure the old version keeps serving. Returns seconds taken.
  Expected<double> switch_model(const ModelRef& ref);
  // The directory POST /admin/model {"version": V} resolves versions in.
  void set_model_dir(const std::string& dir);
  // Saved sessions (session_dir); without a store the session endpoints answer 404.
  void set_session_store(std::unique_ptr<SessionStore> store) { sessions_ = std::move(store); }
  void set_draining() { admission_.set_draining(); }
  bool ready() const { return admission_.ready(); }
  bool draining() const { return admission_.draining(); }
  // What other front ends (gRPC) share with HTTP: one admission (rate and
  // in-flight limits count a key's requests over both), config, audit log.
  serving::Admission& admission() { return admission_; }
  const serving::ServeConfig& config() const { return cfg_; }
  AuditLog* audit() const { return audit_; }
  const std::vector<Cidr>& allowlist() const { return allowlist_; }

 private:
  struct Call;  // one request's context (id, key, timing)
  void route(const HttpRequest& req, Responder& res, Call& call);
  void generate(const HttpRequest& req, Responder& res, Call& call, bool chat);
  void responses(const HttpRequest& req, Responder& res, Call& call);  // api_responses.cpp
  void infill(const HttpRequest& req, Responder& res, Call& call);     // llama-server's /infill (api_infill.cpp)
  ParseContext parse_context(const HttpRequest& req, const Call& call) const;
  // Hands a parsed request to the scheduler; null when it was refused (the
  // error response is sent: 429 over the key's in-flight limit or a full queue, 503).
  std::shared_ptr<serving::RequestChannel> submit_generation(Responder& res, Call& call,
                                                             const serving::Admission::Slot& slot, GenerationCall& g);
  // What relays a submitted request's events into its response (see http/event_relay.h).
  class CompletionRelay;   // completions and chat completions, one JSON body or SSE (api_generate.cpp)
  class ResponsesRelay;    // /v1/responses (api_responses.cpp)
  class EmbeddingsRelay;   // /v1/embeddings (api_embeddings.cpp)
  class SessionSaveRelay;  // POST /v1/sessions/{name} (api_sessions.cpp)
  class InfillRelay;       // POST /infill in llama-server's shape (api_infill.cpp)
  // The metrics and the audit line of a request, once its response is over.
  void record(const Call& call, const Responder& res);
  // POST /v1/embeddings, through the scheduler or the encoder service (api_embeddings.cpp).
  void embeddings(const HttpRequest& req, Responder& res, Call& call);
  // The answer when admission refuses a request: 429 when the client is over a
  // limit or the queue is full (with Retry-After), else 503.
  void refuse(Responder& res, Call& call, const serving::Refusal& r);
  // The key a client's limits count against: its API key, else its address.
  static std::string client_key(const Call& call);
  // /v1/sessions[/{name}] (api_sessions.cpp).
  void sessions(const HttpRequest& req, Responder& res, Call& call);
  void save_session(const HttpRequest& req, Responder& res, Call& call, const std::string& name);
  void show_session(Responder& res, Call& call, const std::string& name);
  // A generation's "session": loads it and checks it starts the prompt; false
  // when refused (the error response is sent).
  bool attach_session(Responder& res, Call& call, GenerationCall& g);
  void tokenize(const HttpRequest& req, Responder& res, Call& call);
  void detokenize(const HttpRequest& req, Responder& res, Call& call);
  void models(Responder& res, Call& call);
  void web_asset(Responder& res, const WebAsset& asset);
  void admin_model(const HttpRequest& req, Responder& res, Call& call);
  void error(Responder& res, Call& call, int status, const std::string& message, const std::string& param = "",
             const std::string& code = "", const Headers& extra = {});
  void json(Responder& res, Call& call, int status, const std::string& body);
  // An audit line for what is not a request outcome (failed logins, admin actions).
  void audit_event(const std::string& kind, const Call& call, const std::string& detail,
                   std::map<std::string, std::string> fields = {});
  const serving::ServeConfig& cfg_;
  serving::Metrics& metrics_;
  AuditLog* audit_;
  std::vector<Cidr> allowlist_;
  mutable std::mutex model_mu_;
  ModelPtr model_;
  ModelLoader loader_;
  std::string model_dir_;  // guarded by model_mu_
  std::mutex switch_mu_;  // one switch at a time
  serving::Admission admission_;  // ready, draining, rate and in-flight limits
  std::atomic<uint64_t> next_id_{1};
  std::unique_ptr<SessionStore> sessions_;
};

}  // namespace stride::server
