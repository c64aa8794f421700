#pragma once
// The calibration pass behind per-head top-k budgets (DuoAttention-style):
// each prompt is prefilled densely and decoded greedily for a few steps, and
// at every decode step each (layer, kv head)'s exact attention mass outside
// the sinks and the local window is recorded. Heads with little such mass
// only look near (streaming heads); the others retrieve.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "eval/ruler_tasks.h"

namespace stride {

struct DistantMass {
  int n_layer = 0;
  int n_kv_heads = 0;
  // [n_layer * n_kv_heads]: mean over the decode queries of the mass outside
  // sinks + window (each query's mass averaged over the kv head's group of
  // query heads); -1 for a layer that never selected (not top-k).
  std::vector<double> mass;
  int64_t sink_tokens = 0;    // what counted as sinks and window, in tokens (whole pages)
  int64_t window_tokens = 0;
};

// `engine` must run a top-k policy that selects on decode steps and reads
// every page there (topk:sparsity=0,prefill=dense[,sinks=S,window=W]): its
// sinks and window are the ones measured against, and its decode is dense's.
// Each instance runs its prompt and decode_steps greedy decode steps.
// on_prompt(done, total) is optional.
Expected<DistantMass> measure_distant_mass(Engine& engine, const std::vector<TaskInstance>& instances,
                                           int decode_steps,
                                           const std::function<void(size_t, size_t)>& on_prompt = {});

// Scalar reference of one query row set's distant mass: rows over keys at
// positions [0, n_keys) (all visible), page_size tokens a page; pages below
// n_sink_pages and from local_from_page on are near. Exposed for tests.
double distant_mass_of_rows(const float* const* rows, int n_rows, int dim, float scale, const float* keys,
                            int64_t n_keys, int page_size, int64_t n_sink_pages, int64_t local_from_page);

}  // namespace stride
