#pragma once
// Speculative decoding: a drafter proposes the next few tokens cheaply,
// the target checks them all in one step (the last committed token and the
// drafts, logits at every position) and keeps the longest accepted run plus
// one token of its own; the KV of the rejected drafts is rolled back at the
// step's commit (BeforeCommit, KvManager n_keep). Greedy output is token for
// token the one plain decoding gives; sampled output has the same
// distribution (sampler/speculative_sampling.h).
//
// Drafters: prompt lookup (the tokens after an earlier occurrence of the
// last n-gram, engine/prompt_lookup.h) or a draft model of the same
// vocabulary (engine/draft_model.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/draft_model.h"
#include "engine/prompt_lookup.h"
#include "engine/speculative_mode.h"
#include "sampler/sampler.h"

namespace stride {

struct SpeculativeOptions {
  SpeculativeMode mode = SpeculativeMode::Off;
  int draft_max = 8;  // tokens drafted per step at most
  int draft_min = 1;  // fewer found: this step decodes one token as usual
  int ngram_min = 1;  // prompt lookup: the suffix lengths tried, longest first
  int ngram_max = 3;
};
// InvalidArgument for values out of range (draft_max 1-64, ngrams 1-16).
Status check_speculative_options(const SpeculativeOptions& o);

// What one verification step produced.
struct VerifiedTokens {
  std::vector<int32_t> tokens;  // the accepted drafts, then one token the target drew
  int accepted = 0;             // drafts kept: tokens.size() - 1
};

// logits: [drafts.size() + 1, n_vocab], row i the target's logits after the
// step's i-th token (the last committed token, then the drafts). q: the
// draft distributions (null: deterministic drafts). history: prompt and
// generated tokens so far, for the penalties; it is extended as drafts are
// accepted and restored before returning. Row i's token comes from row i.
VerifiedTokens verify_drafts(const float* logits, int n_vocab, std::span<const int32_t> drafts,
                             const std::vector<TokenDistribution>* q, Sampler& sampler,
                             std::vector<int32_t>& history);

// One sequence's drafter.
class Drafter {
 public:
  // draft: the draft model (mode Draft only); seed: for the draft's own draws.
  Drafter(const SpeculativeOptions& opts, DraftModel* draft, const SamplingParams& sampling);

  // Drafts of at most `limit` tokens continuing `context` (fewer than
  // draft_min: none). q is filled for a draft model and left empty for
  // prompt lookup. A draft model that fails once (its pool is full) drafts
  // nothing more for this sequence, rather than recompute it every step.
  void propose(const std::vector<int32_t>& context, int limit, std::vector<int32_t>& drafts,
               std::vector<TokenDistribution>& q);
  // What the target made of the last drafts: the next draft length follows
  // (every draft accepted: two more, up to draft_max; else one more than
  // were accepted), so text that rarely repeats costs short verifications.
  void record(int drafted, int accepted);
  int draft_length() const { return length_; }
  const SpeculativeOptions& options() const { return opts_; }

 private:
  SpeculativeOptions opts_;
  int length_ = 0;  // drafts to propose next
  std::optional<DraftSequence> draft_;  // empty: no draft model, or it failed
  Sampler draft_sampler_;
};

}  // namespace stride
