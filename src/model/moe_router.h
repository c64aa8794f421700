#pragma once
// Router scores -> the k experts each token uses and their gate weights.
#include <cstdint>
#include <vector>

#include "loader/moe_config.h"

namespace stride {

struct MoeRouting {
  int k = 0;
  std::vector<int32_t> expert;  // [n, k] chosen experts, largest score first
  std::vector<float> weight;    // [n, k] their gate weights
};

// One token: logits [n_expert] -> expert[k], weight[k]. Ties go to the lower
// expert index.
void route_one(const MoeConfig& c, const float* logits, int32_t* expert, float* weight);

// logits: [n, n_expert] router logits of n tokens.
void route_tokens(const MoeConfig& c, const float* logits, int n, MoeRouting& out);

}  // namespace stride
