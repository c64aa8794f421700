// Speculative decoding in the scheduler: a decoding sequence that
// speculates sends its last token and its drafts in the step (logits at
// every position); between the forward pass and the commit every such
// sequence verifies its drafts (in parallel over the pool) and keeps the
// accepted run, so the commit rolls the rejected tail's KV back; then the
// accepted drafts and the target's own token are emitted in order, as if
// they had come from as many plain steps.
#include <algorithm>

#include "serving/scheduler_speculative.h"

namespace stride::serving {

void SpeculativeSteps::start_drafter(Sequence& s) {
  const SpeculativeMode mode = s.req().speculative.value_or(opts_.speculative.mode);
  // Grammar-constrained requests decode plainly: the matcher's state cannot
  // be rolled back past a rejected draft.
  if (mode == SpeculativeMode::Off || s.matcher) return;
  if (mode == SpeculativeMode::Draft && !engine_.draft_model()) return;
  SpeculativeOptions o = opts_.speculative;
  o.mode = mode;
  s.drafter = std::make_unique<Drafter>(o, engine_.draft_model(), s.req().sampling);
}

// The step of a sequence with one token left to feed: with drafts (at most
// draft_room of them) when it speculates and a drafter finds some, else the
// plain one-token decode. Returns the tokens it sends.
int SpeculativeSteps::plan_decode(Sequence& s, int draft_room, SequenceStep& st) {
  st.seq = s.seq;
  s.verifying = false;
  if (s.drafter && draft_room > 0) {
    // Drafts past max_tokens or the context limit would be thrown away.
    const int64_t limit = std::min<int64_t>({(int64_t)draft_room, (int64_t)s.req().max_tokens - s.n_generated - 1,
                                             opts_.max_context - (int64_t)s.tokens.size() - 1});
    s.drafter->propose(s.tokens, (int)std::max<int64_t>(0, limit), s.drafts, s.q);
    if (!s.drafts.empty()) {
      s.verifying = true;
      s.want_logits = false;
      s.step_ids.assign(1, s.tokens.back());
      s.step_ids.insert(s.step_ids.end(), s.drafts.begin(), s.drafts.end());
      s.rows.resize(s.step_ids.size() * (size_t)engine_.config().n_vocab);
      st.tokens = s.step_ids.data();
      st.n = (int)s.step_ids.size();
      st.all_logits = true;
      st.logits = s.rows.data();
      st.may_truncate = true;
      return st.n;
    }
  }
  s.want_logits = true;
  st.tokens = s.tokens.data() + s.n_cached;
  st.n = 1;
  st.logits = s.logits.data();
  return 1;
}

// Turns every speculative step back into a plain decode; false when there was none.
bool SpeculativeSteps::strip_drafts(std::vector<SequenceStep>& steps, const std::vector<Sequence*>& owners) {
  bool any = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    Sequence& s = *owners[i];
    if (!s.verifying) continue;
    SequenceStep plain;
    plan_decode(s, 0, plain);
    steps[i] = plain;
    any = true;
  }
  return any;
}

void SpeculativeSteps::verify_step(std::span<int> keep, const std::vector<Sequence*>& owners) {
  std::vector<int> verifying;
  for (size_t i = 0; i < owners.size(); ++i)
    if (owners[i]->verifying) verifying.push_back((int)i);
  const int n_vocab = engine_.config().n_vocab;
  engine_.pool().run_chunks((int)verifying.size(), [&](int c, int) {
    Sequence& s = *owners[(size_t)verifying[(size_t)c]];
    s.verified = verify_drafts(s.rows.data(), n_vocab, s.drafts, s.q.empty() ? nullptr : &s.q, s.sampler, s.tokens);
  });
  for (const int i : verifying) keep[(size_t)i] = 1 + owners[(size_t)i]->verified.accepted;
}

void SpeculativeSteps::emit_verified(Sequence& s, const std::function<void(Sequence&)>& after_logits) {
  const int drafted = (int)s.drafts.size();
  s.drafter->record(drafted, s.verified.accepted);
  metrics_.spec_draft_tokens += drafted;
  metrics_.spec_accepted_tokens += s.verified.accepted;
  ++metrics_.spec_verify_steps;
  metrics_.spec_acceptance.observe((double)s.verified.accepted / drafted);
  const int n_vocab = engine_.config().n_vocab;
  // Token j was drawn from row j, as a plain step would have drawn it.
  for (size_t j = 0; j < s.verified.tokens.size() && s.seq >= 0; ++j) {
    s.next = s.verified.tokens[j];
    s.next_logprobs.clear();
    if (s.req().top_logprobs >= 0)
      s.next_logprobs.push_back(
          token_logprobs(s.rows.data() + j * (size_t)n_vocab, n_vocab, s.next, s.req().top_logprobs));
    after_logits(s);
  }
}

}  // namespace stride::serving
