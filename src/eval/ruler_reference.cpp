#include "eval/ruler_reference.h"

#include <map>
#include <utility>

#include "eval/ruler_score.h"
#include "core/sha256.h"

namespace stride {

namespace {

std::string instance_label(const TaskInstance& t) {
  std::string s = std::string(ruler_task_name(t.spec.task)) + " at " + std::to_string(t.spec.target_tokens);
  if (ruler_task_uses_depth(t.spec.task)) return s + ", depth " + std::to_string(t.spec.depth);
  return s + ", trial " + std::to_string(t.trial);
}

bool is_string_field(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_string(); }

}  // namespace

std::string prompt_fingerprint(const TaskInstance& instance) {
  std::vector<uint8_t> bytes;
  bytes.reserve(instance.ids.size() * 4);
  for (int32_t id : instance.ids) {
    const uint32_t u = (uint32_t)id;
    for (int k = 0; k < 4; ++k) bytes.push_back((uint8_t)(u >> (8 * k)));
  }
  return sha256_hex(sha256_bytes(bytes.data(), bytes.size()));
}

Expected<PolicyRun> dense_run_from_report(const nlohmann::json& report, const std::string& model_sha256,
                                          const std::vector<TaskInstance>& instances) {
  if (!report.is_object()) return InvalidArgument("reference: not a stride eval report (expected a JSON object)");
  if (!is_string_field(report, "model_sha256"))
    return InvalidArgument("reference: the report has no model_sha256 (written by an older stride eval; re-run it)");
  if (report["model_sha256"].get<std::string>() != model_sha256)
    return InvalidArgument("reference: recorded with a different model file (sha256 " +
                           report["model_sha256"].get<std::string>().substr(0, 12) + "…, this model " +
                           model_sha256.substr(0, 12) + "…)");
  if (!report.contains("trials") || !report["trials"].is_array())
    return InvalidArgument("reference: the report has no trials array");

  // Dense trials by (prompt fingerprint, answer bound).
  std::map<std::pair<std::string, int>, std::pair<std::string, int>> dense;  // -> (answer, new tokens)
  for (const nlohmann::json& t : report["trials"]) {
    if (!t.is_object() || !is_string_field(t, "policy") || t["policy"].get<std::string>() != "dense") continue;
    if (!is_string_field(t, "prompt_sha256") || !is_string_field(t, "answer") || !t.contains("max_new_tokens") ||
        !t["max_new_tokens"].is_number_integer())
      return InvalidArgument("reference: a dense trial lacks prompt_sha256, answer or max_new_tokens");
    const int new_tokens = t.contains("new_tokens") && t["new_tokens"].is_number_integer() ? t["new_tokens"].get<int>() : 0;
    dense[{t["prompt_sha256"].get<std::string>(), t["max_new_tokens"].get<int>()}] = {t["answer"].get<std::string>(),
                                                                                     new_tokens};
  }

  PolicyRun run;
  run.policy = "dense";
  for (size_t i = 0; i < instances.size(); ++i) {
    const TaskInstance& t = instances[i];
    auto it = dense.find({prompt_fingerprint(t), t.max_new_tokens});
    if (it == dense.end())
      return InvalidArgument("reference: no dense trial for the prompt of " + instance_label(t) +
                             " (another seed, text, chat template, length or --max-new-tokens?)");
    run.trials.push_back({i, it->second.first, it->second.second, score_answer(it->second.first, t.expected)});
  }
  if (report.contains("policies") && report["policies"].is_array()) {
    for (const nlohmann::json& p : report["policies"]) {
      if (!p.is_object() || !is_string_field(p, "policy") || p["policy"].get<std::string>() != "dense") continue;
      if (p.contains("pages_read_share") && p["pages_read_share"].is_number())
        run.pages_read_share = p["pages_read_share"].get<double>();
      if (p.contains("seconds") && p["seconds"].is_number()) run.seconds = p["seconds"].get<double>();
    }
  }
  return run;
}

}  // namespace stride
