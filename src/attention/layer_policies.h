#pragma once
// Which policy each layer runs: natively windowed layers keep their trained
// window; the user's policy applies to the other (global) layers; explicit
// per-layer overrides win over both.
#include <map>
#include <vector>

#include "attention/policy.h"
#include "loader/model_config.h"

namespace stride {

struct LayerPolicyOverrides {
  std::map<int, PolicySpec> by_layer;  // layer index -> policy
};

std::vector<PolicySpec> resolve_layer_policies(const ModelConfig& cfg, const PolicySpec& user,
                                               const LayerPolicyOverrides& overrides = {});

}  // namespace stride
