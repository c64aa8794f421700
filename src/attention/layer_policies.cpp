#include "attention/layer_policies.h"

#include <algorithm>

namespace stride {

namespace {

bool parse_layer_index(std::string_view s, int& out) {
  if (s.empty() || s.size() > 6) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

}  // namespace

Status parse_layer_override(std::string_view text, int n_layer, LayerPolicyOverrides& out) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument("layer policy '" + std::string(text) + "' must look like A-B=POLICY");
  }
  const std::string_view range = text.substr(0, eq);
  const size_t dash = range.find('-');
  int first = 0, last = 0;
  const bool ok = dash == std::string_view::npos
                      ? parse_layer_index(range, first) && parse_layer_index(range, last)
                      : parse_layer_index(range.substr(0, dash), first) &&
                            parse_layer_index(range.substr(dash + 1), last);
  if (!ok || first > last) {
    return InvalidArgument("bad layer range '" + std::string(range) + "' in '" + std::string(text) + "'");
  }
  if (n_layer > 0 && last >= n_layer) {
    return InvalidArgument("layer " + std::to_string(last) + " does not exist (the model has " +
                           std::to_string(n_layer) + " layers)");
  }
  STRIDE_ASSIGN_OR_RETURN(PolicySpec spec, parse_policy(text.substr(eq + 1)));
  for (int l = first; l <= last; ++l) out.by_layer[l] = spec;
  return Status::Ok();
}

Status check_dense_layers(const PolicySpec& p, int n_layer) {
  if (!p.dense_layers.empty() && p.dense_layers.back() >= n_layer)
    return InvalidArgument("policy dense_layers: layer " + std::to_string(p.dense_layers.back()) +
                           " does not exist (the model has " + std::to_string(n_layer) + " layers)");
  return Status::Ok();
}

std::vector<PolicySpec> resolve_layer_policies(const ModelConfig& cfg, const PolicySpec& user,
                                               const LayerPolicyOverrides& overrides) {
  std::vector<PolicySpec> out((size_t)std::max(cfg.n_layer, 0), user);
  for (int l = 0; l < cfg.n_layer; ++l) {
    if (cfg.is_windowed(l) && cfg.sliding_window > 0) {
      // A natively windowed layer keeps the window it was trained with.
      PolicySpec w;
      w.kind = PolicyKind::Window;
      w.window = cfg.sliding_window;
      out[l] = w;
    } else if (user.kind == PolicyKind::TopK &&
               std::binary_search(user.dense_layers.begin(), user.dense_layers.end(), l)) {
      out[l] = PolicySpec{};  // dense_layers: this layer attends as dense does
    }
    const auto it = overrides.by_layer.find(l);
    if (it != overrides.by_layer.end()) out[l] = it->second;
  }
  return out;
}

}  // namespace stride
