// Parallel sampling (n, best_of) and batched prompts: a request becomes one
// sequence per prompt, and each of those carries the prompt's other
// branches. Only the first branch is admitted and prefilled; when its prompt
// is done the others fork from it (KvManager::fork_sequence: the prompt's
// full pages shared, its open page copied) and each samples its own first
// token from the same logits with its own seed. A branch that cannot fork
// (no batch slot, no pages) waits like a new request and is prefilled
// through the prefix cache instead: same tokens, more work.
#include <algorithm>
#include <iterator>

#include "grammar/grammar_matcher.h"
#include "kv/kv_pages_needed.h"
#include "serving/scheduler_sequence.h"
#include "serving/scheduler_speculative.h"

namespace stride::serving {

std::unique_ptr<Scheduler::Sequence> Scheduler::new_generation(const std::shared_ptr<RequestChannel>& ch,
                                                              int prompt_index, int branch) {
  auto s = std::make_unique<Sequence>(ch, *engine_.tokenizer(), engine_.config().n_vocab, opts_.max_context,
                                      prompt_index, branch);
  if (s->req().grammar) s->matcher = std::make_unique<grammar::GrammarMatcher>(s->req().grammar, token_trie());
  // Branches share their prompt's first logits, which a speculating step does not keep.
  if (s->req().branches == 1) speculative_->start_drafter(*s);
  return s;
}

void Scheduler::enqueue_generation(std::shared_ptr<RequestChannel> ch, std::deque<std::unique_ptr<Sequence>>& waiting) {
  const ServeRequest& r = ch->request;
  for (int p = 0; p < r.n_prompts(); ++p) {
    std::unique_ptr<Sequence> first = new_generation(ch, p, 0);
    for (int b = 1; b < r.branches; ++b) first->forks.push_back(new_generation(ch, p, b));
    if (r.speculative == SpeculativeMode::Draft && r.branches == 1 && !first->drafter && !first->matcher) {
      fail(*first, InvalidArgument("speculative: draft needs a server started with --draft-model"));
    } else if (r.max_tokens == 0 && r.prompt_logprobs < 0) {
      finish(*first, "length");  // nothing to generate and nothing to score: the model is not run
    } else {
      waiting.push_back(std::move(first));
    }
  }
}

int64_t Scheduler::admission_pages(Sequence& s) const {
  // The pages the prompt and its first token need, in this scheduler's step
  // sizes, from the policy predicate (kv/kv_pages_needed.h); a prefix hit
  // can only need fewer. Each branch to fork adds its copy of the open page
  // (one per layer) and its first token's growth.
  const KvManagerConfig& kc = engine_.kv().config();
  if (s.admission_pages < 0) {
    const int64_t n = (int64_t)s.tokens.size();
    s.admission_pages = pages_for_growth(kc.layer_policies, kc.page_size, 0, n + 1, opts_.step_tokens);
    if (!s.forks.empty())
      s.admission_pages += (int64_t)s.forks.size() *
                           (kc.n_layer + pages_for_growth(kc.layer_policies, kc.page_size, n, 1, opts_.step_tokens));
  }
  return s.admission_pages;
}

void Scheduler::fork_branches(Sequence& first, std::deque<std::unique_ptr<Sequence>>& waiting,
                              std::vector<Sequence*>& owners) {
  std::vector<std::unique_ptr<Sequence>> branches = std::exchange(first.forks, {});
  std::vector<std::unique_ptr<Sequence>> unforked;
  for (std::unique_ptr<Sequence>& b : branches) {
    // Counted with the first branch: the prompt ran once.
    b->admitted_once = true;
    b->cached_prompt_tokens = first.cached_prompt_tokens;
    Expected<KvManager::SeqId> seq = (int)running_.size() < opts_.max_batch
                                         ? engine_.kv().fork_sequence(first.seq)
                                         : Expected<KvManager::SeqId>(ResourceExhausted("no batch slot"));
    if (!seq.ok()) {
      unforked.push_back(std::move(b));
      continue;
    }
    b->seq = *seq;
    b->n_cached = first.n_cached;
    b->prompt_scored = true;  // the first branch scored the shared prompt (echo with logprobs)
    b->logits = first.logits;  // before the first branch's grammar mask and sampling touch them
    b->want_logits = true;
    owners.push_back(b.get());
    running_.push_back(std::move(b));
  }
  // In choice order at the head of the queue.
  for (auto it = unforked.rbegin(); it != unforked.rend(); ++it) waiting.push_front(std::move(*it));
}

}  // namespace stride::serving
