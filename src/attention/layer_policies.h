#pragma once
// Which policy each layer runs: natively windowed layers keep their trained
// window; the user's policy applies to the other (global) layers; explicit
// per-layer overrides win over both.
#include <map>
#include <string_view>
#include <vector>

#include "attention/policy.h"
#include "loader/model_config.h"

namespace stride {

struct LayerPolicyOverrides {
  std::map<int, PolicySpec> by_layer;  // layer index -> policy
};

// "A-B=POLICY" or "A=POLICY" (layers A..B inclusive), e.g. "0-1=dense".
// Layers beyond n_layer are an error when n_layer > 0.
Status parse_layer_override(std::string_view text, int n_layer, LayerPolicyOverrides& out);

// A top-k policy's dense_layers must name layers of the model.
Status check_dense_layers(const PolicySpec& p, int n_layer);

// The user's top-k dense_layers run Dense, natively windowed layers their
// window (which wins over dense_layers), overrides whatever they say.
std::vector<PolicySpec> resolve_layer_policies(const ModelConfig& cfg, const PolicySpec& user,
                                               const LayerPolicyOverrides& overrides = {});

}  // namespace stride
