#include "engine/speculative.h"

#include <algorithm>

#include "sampler/speculative_sampling.h"

namespace stride {

Status check_speculative_options(const SpeculativeOptions& o) {
  if (o.draft_max < 1 || o.draft_max > 64) return InvalidArgument("draft_max must be 1-64");
  if (o.draft_min < 1 || o.draft_min > o.draft_max) return InvalidArgument("draft_min must be 1-draft_max");
  if (o.ngram_min < 1 || o.ngram_max > 16 || o.ngram_min > o.ngram_max)
    return InvalidArgument("the n-gram sizes must satisfy 1 <= ngram_min <= ngram_max <= 16");
  return Status::Ok();
}

VerifiedTokens verify_drafts(const float* logits, int n_vocab, std::span<const int32_t> drafts,
                             const std::vector<TokenDistribution>* q, Sampler& sampler,
                             std::vector<int32_t>& history) {
  VerifiedTokens out;
  const size_t history_size = history.size();
  for (size_t i = 0; i <= drafts.size(); ++i) {
    const float* row = logits + (int64_t)i * n_vocab;
    if (i == drafts.size()) {  // every draft accepted: the target's own next token
      out.tokens.push_back(sampler.sample(row, n_vocab, history));
      break;
    }
    const TokenDistribution p = sampler.distribution(row, n_vocab, history);
    const TokenDistribution* qi = q && i < q->size() ? &(*q)[i] : nullptr;
    const DraftVerdict v = verify_draft_token(p, drafts[i], qi, sampler);
    out.tokens.push_back(v.token);
    if (!v.accepted) break;
    ++out.accepted;
    history.push_back(v.token);
  }
  history.resize(history_size);
  return out;
}

Drafter::Drafter(const SpeculativeOptions& opts, DraftModel* draft, const SamplingParams& sampling)
    : opts_(opts), draft_sampler_([&] {
        SamplingParams p = sampling;
        p.seed = sampling.seed ^ 0x9E3779B97F4A7C15ull;  // its own stream, apart from the target's
        return p;
      }()) {
  if (opts_.mode == SpeculativeMode::Draft && draft) draft_.emplace(*draft);
  length_ = opts_.draft_max;
}

void Drafter::record(int drafted, int accepted) {
  if (drafted <= 0) return;
  length_ = accepted == drafted ? std::min(opts_.draft_max, length_ + 2) : std::max(opts_.draft_min, accepted + 1);
}

void Drafter::propose(const std::vector<int32_t>& context, int limit, std::vector<int32_t>& drafts,
                      std::vector<TokenDistribution>& q) {
  drafts.clear();
  q.clear();
  const int k = std::min(limit, length_);
  if (k < opts_.draft_min) return;
  if (opts_.mode == SpeculativeMode::PromptLookup) {
    drafts = prompt_lookup_draft(context, PromptLookupOptions{opts_.ngram_min, opts_.ngram_max, k});
  } else if (opts_.mode == SpeculativeMode::Draft && draft_) {
    if (!draft_->propose(context, k, draft_sampler_, drafts, q).ok()) {
      drafts.clear();
      q.clear();
    }
    if (!draft_->holds_sequence()) draft_.reset();
  }
  if ((int)drafts.size() < opts_.draft_min) {
    drafts.clear();
    q.clear();
  }
}

}  // namespace stride
