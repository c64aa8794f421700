#pragma once
// The model version the API serves, and the switch to another (POST
// /admin/model, SIGHUP): the new version loads and warms beside the serving
// one, then new requests use it while the old one finishes its requests.
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "serving/admission.h"
#include "serving/chat_template.h"
#include "serving/encoder_service.h"
#include "serving/metrics.h"
#include "serving/scheduler.h"

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

class ServedModel {
 public:
  // Serving a first version makes `admission` ready and sets the ready gauge.
  ServedModel(serving::Admission& admission, serving::Metrics& metrics) : admission_(admission), metrics_(metrics) {}

  void set_model(std::shared_ptr<ModelHandle> m);  // serve this version from now on (then ready)
  void set_loader(ModelLoader loader) { loader_ = std::move(loader); }
  ModelPtr model() const;
  // Loads and warms `ref` beside the serving version, then switches new
  // requests to it; on failure the old version keeps serving. Returns seconds taken.
  Expected<double> switch_model(const ModelRef& ref);
  // The directory POST /admin/model {"version": V} resolves versions in.
  void set_model_dir(const std::string& dir);
  std::string model_dir() const;

 private:
  serving::Admission& admission_;
  serving::Metrics& metrics_;
  mutable std::mutex model_mu_;
  ModelPtr model_;
  ModelLoader loader_;
  std::string model_dir_;  // guarded by model_mu_
  std::mutex switch_mu_;  // one switch at a time
};

}  // namespace stride::server
