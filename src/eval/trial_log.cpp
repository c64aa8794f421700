#include "eval/trial_log.h"

#include <nlohmann/json.hpp>

namespace stride {

namespace {

bool has(const nlohmann::json& j, const char* key, nlohmann::json::value_t type) {
  if (!j.contains(key)) return false;
  const nlohmann::json& v = j[key];
  if (type == nlohmann::json::value_t::number_integer) return v.is_number_integer();
  if (type == nlohmann::json::value_t::number_float) return v.is_number();
  return v.type() == type;
}

}  // namespace

Expected<TrialLog> TrialLog::open(const std::string& path, const std::string& model_sha256) {
  TrialLog log;
  log.path_ = path;
  log.model_sha256_ = model_sha256;
  {
    std::ifstream in(path);
    std::string line;
    int line_no = 0;
    while (in && std::getline(in, line)) {
      ++line_no;
      if (line.empty()) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      using T = nlohmann::json::value_t;
      if (j.is_discarded() || !j.is_object() || !has(j, "model_sha256", T::string) || !has(j, "run", T::string) ||
          !has(j, "prompt_sha256", T::string) || !has(j, "max_new_tokens", T::number_integer) ||
          !has(j, "answer", T::string)) {
        ++log.skipped_lines_;
        continue;
      }
      if (j["model_sha256"].get<std::string>() != model_sha256)
        return InvalidArgument("trial log " + path + ", line " + std::to_string(line_no) +
                               ": recorded with another model file; use a log per model");
      RecordedTrial t;
      t.answer = j["answer"].get<std::string>();
      if (has(j, "new_tokens", T::number_integer)) t.new_tokens = j["new_tokens"].get<int>();
      if (has(j, "pages_read", T::number_integer)) t.pages_read = j["pages_read"].get<int64_t>();
      if (has(j, "pages_present", T::number_integer)) t.pages_present = j["pages_present"].get<int64_t>();
      if (has(j, "seconds", T::number_float)) t.seconds = j["seconds"].get<double>();
      log.trials_[{j["run"].get<std::string>(), j["prompt_sha256"].get<std::string>(),
                   j["max_new_tokens"].get<int>()}] = std::move(t);
    }
  }
  log.out_.open(path, std::ios::app);
  if (!log.out_) return InvalidArgument("trial log: cannot open " + path + " for appending");
  // A line cut short by a stop has no newline: start on a fresh line.
  if (log.skipped_lines_ > 0) log.out_ << '\n';
  return log;
}

const RecordedTrial* TrialLog::find(const std::string& run, const std::string& prompt_sha256,
                                    int max_new_tokens) const {
  auto it = trials_.find({run, prompt_sha256, max_new_tokens});
  return it == trials_.end() ? nullptr : &it->second;
}

Status TrialLog::append(const std::string& run, const std::string& prompt_sha256, int max_new_tokens,
                        const RecordedTrial& trial) {
  const nlohmann::json j = {{"model_sha256", model_sha256_}, {"run", run},
                            {"prompt_sha256", prompt_sha256}, {"max_new_tokens", max_new_tokens},
                            {"answer", trial.answer},     {"new_tokens", trial.new_tokens},
                            {"pages_read", trial.pages_read}, {"pages_present", trial.pages_present},
                            {"seconds", trial.seconds}};
  out_ << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
  if (!out_) return InvalidArgument("trial log: writing " + path_ + " failed");
  trials_[{run, prompt_sha256, max_new_tokens}] = trial;
  return Status::Ok();
}

}  // namespace stride
