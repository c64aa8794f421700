#pragma once
// Speculative sampling (Leviathan et al. 2023, Chen et al. 2023): a token x
// proposed by a draft distribution q is kept with probability
// min(1, p(x) / q(x)) under the target distribution p; otherwise the token
// is drawn from the residual max(0, p - q), normalized. The token that comes
// out is distributed exactly as p, whatever q is. A deterministic draft
// (prompt lookup) is a point mass: x is kept with probability p(x), and the
// residual is p without x. Greedy targets are point masses too, so the rule
// keeps x exactly when it is the argmax.
#include <cstdint>

#include "sampler/sampler.h"

namespace stride {

struct DraftVerdict {
  bool accepted = false;
  int32_t token = -1;  // the draft when accepted, else the residual's draw
};

// q: the draft's distribution, or null for a point mass at `draft`.
// Draws from `rng` only when the outcome is uncertain.
DraftVerdict verify_draft_token(const TokenDistribution& p, int32_t draft, const TokenDistribution* q, Sampler& rng);

// The residual max(0, p - q) normalized (q null: a point mass at `draft`);
// p itself when the residual is empty (then p == q and nothing is rejected).
TokenDistribution residual_distribution(const TokenDistribution& p, int32_t draft, const TokenDistribution* q);

}  // namespace stride
