#include "http/served_model.h"

#include <chrono>

#include "http/log.h"
#include "loader/model_versions.h"

namespace stride::server {

using serving::Clock;

void ServedModel::set_model(std::shared_ptr<ModelHandle> m) {
  {
    std::lock_guard<std::mutex> lock(model_mu_);
    model_ = std::move(m);
  }
  admission_.set_ready();
  metrics_.ready = 1;
}

ModelPtr ServedModel::model() const {
  std::lock_guard<std::mutex> lock(model_mu_);
  return model_;
}

Expected<ModelRef> model_ref_for_version(const std::string& model_dir, const std::string& version) {
  if (model_dir.empty()) return InvalidArgument("no model_dir is configured, so versions cannot be selected");
  STRIDE_ASSIGN_OR_RETURN(ModelVersion v, resolve_model_version(model_dir, version));
  return ModelRef{v.path, v.sha256, v.version, model_dir};
}

Status record_active_version(const ModelRef& ref) {
  if (ref.model_dir.empty() || ref.version.empty()) return Status::Ok();
  Status st = set_active_model_version(ref.model_dir, ref.version);
  if (!st.ok()) {
    log(LogLevel::Error, "the serving version is not recorded as active; a restart may serve another",
        {{"version", ref.version}, {"reason", st.message()}});
  }
  return st;
}

void ServedModel::set_model_dir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(model_mu_);
  model_dir_ = dir;
}

std::string ServedModel::model_dir() const {
  std::lock_guard<std::mutex> lock(model_mu_);
  return model_dir_;
}

Expected<double> ServedModel::switch_model(const ModelRef& ref) {
  if (!loader_) return Unsupported("model switching is not available");
  std::lock_guard<std::mutex> one_at_a_time(switch_mu_);
  const auto t0 = Clock::now();
  auto loaded = loader_(ref);
  if (!loaded.ok()) return loaded.status();
  set_model(std::move(*loaded));
  (void)record_active_version(ref);  // logged; the switch itself succeeded
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace stride::server
