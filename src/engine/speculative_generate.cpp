// Engine::generate's decode loop with speculative decoding: each step feeds
// the last token and the drafts, verifies them against the logits of every
// position, keeps the accepted run (BeforeCommit rolls the rest of the
// step's KV back) and emits the accepted drafts and the target's own token.
#include <algorithm>

#include "engine/engine.h"
#include "engine/step_runner.h"

namespace stride {

Status Engine::decode_speculative(KvManager::SeqId seq, std::vector<float>& logits, const GenerateOptions& opts,
                                  Sampler& sampler, DecodeLoop& loop, std::vector<int32_t>& history,
                                  GenerateResult& r, const std::function<void(const std::string&)>& emit) {
  STRIDE_RETURN_IF_ERROR(check_speculative_options(opts.speculative));
  if (opts.speculative.mode == SpeculativeMode::Draft && !draft_)
    return InvalidArgument("speculative decoding: draft needs a draft model (--draft-model)");
  const int n_vocab = config().n_vocab;
  Drafter drafter(opts.speculative, draft_.get(), opts.sampling);
  std::vector<int32_t> pending{sampler.sample(logits.data(), n_vocab, history)};
  std::vector<int32_t> drafts, step_ids;
  std::vector<TokenDistribution> q;
  std::vector<float> rows;  // [1 + drafts, n_vocab]
  for (;;) {
    for (const int32_t id : pending)
      if (take_token(id, loop, history, r, emit)) return Status::Ok();
    // Drafts past max_tokens would be thrown away; a step holds at most max_chunk tokens.
    const int room = std::min(opts.max_tokens - loop.n_generated() - 1, model_->max_chunk() - 1);
    drafter.propose(history, room, drafts, q);
    step_ids.assign(1, pending.back());
    step_ids.insert(step_ids.end(), drafts.begin(), drafts.end());
    rows.resize(step_ids.size() * (size_t)n_vocab);
    SequenceStep step;
    step.seq = seq;
    step.tokens = step_ids.data();
    step.n = (int)step_ids.size();
    step.all_logits = true;
    step.logits = rows.data();
    step.may_truncate = true;
    VerifiedTokens verified;
    STRIDE_RETURN_IF_ERROR(run_step(*model_, *kv_, &step, 1, *pool_, nullptr, [&](std::span<int> keep) {
      verified = verify_drafts(rows.data(), n_vocab, drafts, q.empty() ? nullptr : &q, sampler, history);
      keep[0] = 1 + verified.accepted;
    }));
    drafter.record((int)drafts.size(), verified.accepted);
    if (!drafts.empty()) {
      ++r.verify_steps;
      r.drafted_tokens += (int64_t)drafts.size();
      r.accepted_tokens += verified.accepted;
    }
    pending = std::move(verified.tokens);
  }
}

}  // namespace stride
