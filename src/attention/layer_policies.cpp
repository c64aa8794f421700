#include "attention/layer_policies.h"

#include <algorithm>

namespace stride {

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
    }
    const auto it = overrides.by_layer.find(l);
    if (it != overrides.by_layer.end()) out[l] = it->second;
  }
  return out;
}

}  // namespace stride
