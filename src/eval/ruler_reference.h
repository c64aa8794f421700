#pragma once
// Reusing the dense reference of an earlier `stride eval --json` report.
// Dense is the slowest run of the suite (quadratic prefill), and it does not
// change when only the policies do: a sweep of policies over the same prompts
// can score each new one against a dense run recorded once. A recorded trial
// is reused only for a prompt with the same token ids, the same answer bound
// and the same model file, so a different seed, text, length, template or
// model is refused instead of compared against the wrong answers.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "eval/ruler_suite.h"

namespace stride {

// The hex SHA-256 of the prompt's token ids (int32, little-endian).
std::string prompt_fingerprint(const TaskInstance& instance);

// The dense run that `report` recorded for these instances, answers rescored
// with today's scorer. `model_sha256` must match the report's. Errors name
// the first instance the report lacks, or what in it is malformed.
Expected<PolicyRun> dense_run_from_report(const nlohmann::json& report, const std::string& model_sha256,
                                          const std::vector<TaskInstance>& instances);

}  // namespace stride
