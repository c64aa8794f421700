#pragma once
// A request as the scheduler holds it (scheduler*.cpp and the helpers they
// use: scheduler_speculative.h, scheduler_scoring.h).
#include <memory>
#include <vector>

#include "engine/decode_loop.h"
#include "engine/speculative.h"
#include "grammar/grammar_matcher.h"
#include "serving/scheduler.h"

namespace stride::serving {

// Branch j of a parallel-sampling request draws with seed + j.
inline SamplingParams branch_sampling(SamplingParams p, int branch) {
  p.seed += (uint64_t)branch;
  return p;
}

struct Scheduler::Sequence {
  std::shared_ptr<RequestChannel> ch;
  KvManager::SeqId seq = -1;       // -1: holds no KV (waiting or preempted)
  std::vector<int32_t> tokens;   // prompt + generated; [0, n_cached) are in the cache
  int64_t n_cached = 0;
  int n_generated = 0;
  Sampler sampler;
  DecodeLoop loop;  // EOS, stop strings, token limits, text release
  std::vector<float> logits;     // [n_vocab] of the last fed token
  bool want_logits = false;      // this step's chunk reaches the end of `tokens`
  int32_t next = -1;             // sampled from `logits` by this step
  std::vector<TokenLogprob> next_logprobs;  // its log-probabilities, if requested (0 or 1)
  // Prompt log-probs (scheduler_scoring.cpp): rows of this step's scoring chunk,
  // and the log-probs gathered so far (sent once the prompt is scored).
  std::vector<float> prompt_rows;
  std::vector<TokenLogprob> prompt_logprobs;
  bool prompt_scored = false;
  Clock::time_point last_token;
  bool admitted_once = false;
  int cached_prompt_tokens = 0;  // prompt tokens the first admission found in the prefix cache
  int64_t admission_pages = -1;  // pages the whole prompt and a first token need; -1: not computed yet
  std::unique_ptr<grammar::GrammarMatcher> matcher;  // constrained decoding, when the request has a grammar
  bool grammar_stuck = false;    // the grammar allowed no token this step
  // Embedding inputs: input `embed_index` of the request, pooled chunk by chunk.
  int embed_index = -1;
  std::unique_ptr<PooledRows> pooled;  // null: a generation
  std::vector<float> hidden;           // [step tokens, n_embd] this step's final hidden states
  // Speculative decoding (scheduler_speculative.cpp).
  std::unique_ptr<Drafter> drafter;  // null: this request does not speculate
  bool verifying = false;            // this step verifies drafts
  std::vector<int32_t> drafts;
  std::vector<TokenDistribution> q;  // the draft model's distributions; empty for prompt lookup
  std::vector<int32_t> step_ids;     // [1 + drafts] the last token, then the drafts
  std::vector<float> rows;           // [1 + drafts, n_vocab] logits of every position
  VerifiedTokens verified;           // set between the forward pass and the commit
  // Parallel sampling: which choice this is, and (on each prompt's first
  // branch) the other branches, which fork from it once its prompt is
  // prefilled (Scheduler::fork_branches).
  int choice = 0;
  int64_t prompt_size = 0;
  std::vector<std::unique_ptr<Sequence>> forks;
  double logprob_sum = 0;  // sum_logprobs: of the sampled tokens

  // Branch `branch` of the request's prompt `prompt_index`.
  Sequence(std::shared_ptr<RequestChannel> c, const Tokenizer& tok, int n_vocab, int64_t max_context,
           int prompt_index = 0, int branch = 0)
      : ch(std::move(c)),
        tokens(ch->request.prompt_at(prompt_index)),
        sampler(branch_sampling(ch->request.sampling, branch)),
        loop(tok,
             DecodeLimits{ch->request.max_tokens, max_context, ch->request.ignore_eos, ch->request.stop,
                          ch->request.render_special},
             (int64_t)tokens.size()),
        logits(n_vocab),
        choice(prompt_index * ch->request.branches + branch),
        prompt_size((int64_t)tokens.size()) {}
  const ServeRequest& req() const { return ch->request; }
  const std::vector<int32_t>& prompt() const { return req().prompt_at(choice / req().branches); }
  int64_t remaining() const { return (int64_t)tokens.size() - n_cached; }
  bool scoring_prompt() const { return req().prompt_logprobs >= 0 && !prompt_scored; }
};

}  // namespace stride::serving
