#pragma once
// A per-head attention profile saved with a model: for every (layer, kv head)
// the share of decode queries' attention mass outside the sinks and the local
// window, measured by `stride calibrate-heads` (eval/head_calibration.h). A
// top-k policy with heads=FILE turns it into per-head budgets
// (attention/head_budget.h). The profile names the model it was measured on;
// loading it for another model is refused.
#include <cstdint>
#include <string>
#include <vector>

#include "attention/policy.h"
#include "core/status.h"
#include "loader/model_source.h"

namespace stride {

// What a profile is checked against: names, shapes, and a digest of every
// tensor's name, type and dimensions (cheap: no weight bytes are read).
struct ModelIdentity {
  std::string name;  // general.name, else the file's name
  std::string architecture;
  int n_layer = 0, n_head = 0, n_kv_heads = 0, head_dim = 0;
  int64_t tensors = 0;
  std::string tensor_digest;  // sha256 hex
  bool operator==(const ModelIdentity&) const = default;
};
ModelIdentity model_identity(const ModelSource& source);

// How the profile was measured.
struct CalibrationSetup {
  std::vector<int64_t> lengths;
  std::vector<std::string> tasks;
  int prompts = 0;        // prompts run
  int decode_steps = 0;   // decode queries observed per prompt
  uint64_t seed = 0;
  int page_size = 0;
  int64_t sinks = 0;      // tokens counted as sinks (whole pages)
  int64_t window = 0;     // tokens counted as the local window (whole pages)
};

struct HeadProfile {
  ModelIdentity model;
  CalibrationSetup setup;
  int n_layer = 0;
  int n_kv_heads = 0;
  // [n_layer * n_kv_heads]: mean over the observed decode queries (and the
  // kv head's group of query heads) of the attention mass outside sinks +
  // window; -1 where the layer was not observed (not top-k).
  std::vector<double> distant_mass;
};

Status write_head_profile(const HeadProfile& profile, const std::string& path);
Expected<HeadProfile> read_head_profile(const std::string& path);

// InvalidArgument naming what differs when `profile` was measured on another model.
Status check_profile_model(const HeadProfile& profile, const ModelIdentity& model);

// For every top-k layer policy with heads=FILE: reads the file, checks it
// against `model`, and fills head_shares and head_layer
// (attention/policy.h). Layers without heads=FILE are left alone.
Status apply_head_profiles(std::vector<PolicySpec>& layer_policies, const ModelIdentity& model);

}  // namespace stride
