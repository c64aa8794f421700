// Prompt log-probs (completions `echo` with `logprobs`, the scoring use):
// a sequence that wants them is prefilled from its first token (admit()
// skips the prefix cache for it) in chunks that keep the logits of every
// position; row j of a chunk predicts the token after it, so the prompt's
// token i gets its log-prob from row i - 1 and the first token has none.
// Only these chunks pay for all-position logits: ordinary prefill keeps the
// last row alone.
#include <algorithm>
#include <cmath>
#include <limits>

#include "serving/scheduler_scoring.h"

namespace stride::serving {

namespace {
// Rows of one scoring chunk: [rows, n_vocab] floats (39 MB on a 152k vocabulary).
constexpr int kScoringChunk = 64;
}  // namespace

void plan_prompt_rows(Scheduler::Sequence& s, SequenceStep& st, Engine& engine) {
  const int64_t prompt = (int64_t)s.prompt().size();
  if (s.prompt_logprobs.empty()) {
    // The first token is predicted by nothing.
    TokenLogprob first;
    first.id = s.prompt()[0];
    first.logprob = std::numeric_limits<float>::quiet_NaN();
    s.prompt_logprobs.push_back(first);
  }
  st.n = (int)std::min<int64_t>({(int64_t)st.n, (int64_t)kScoringChunk, prompt - s.n_cached});
  s.want_logits = st.n == s.remaining();
  st.all_logits = true;
  s.prompt_rows.resize((size_t)st.n * (size_t)engine.config().n_vocab);
  st.logits = s.prompt_rows.data();
}

void score_prompt_rows(Scheduler::Sequence& s, const SequenceStep& st, Engine& engine) {
  const int n_vocab = engine.config().n_vocab;
  const std::vector<int32_t>& prompt = s.prompt();  // this sequence's, in a batch of prompts
  const int64_t pos0 = s.n_cached;  // the chunk's first position (n_cached not yet advanced)
  // Rows whose next token is still a prompt token.
  const int rows = (int)std::clamp<int64_t>((int64_t)prompt.size() - 1 - pos0, 0, st.n);
  const size_t base = s.prompt_logprobs.size();
  s.prompt_logprobs.resize(base + (size_t)rows);
  engine.pool().run_chunks(rows, [&](int j, int) {
    s.prompt_logprobs[base + (size_t)j] = token_logprobs(s.prompt_rows.data() + (size_t)j * (size_t)n_vocab, n_vocab,
                                                         prompt[(size_t)(pos0 + j + 1)], s.req().prompt_logprobs);
  });
  // The last row predicts the first generated token.
  if (s.want_logits) {
    std::copy_n(s.prompt_rows.data() + (size_t)(st.n - 1) * (size_t)n_vocab, (size_t)n_vocab, s.logits.data());
  }
  if (pos0 + st.n < (int64_t)prompt.size()) return;
  s.prompt_scored = true;
  s.prompt_rows = {};
  Event ev;
  ev.index = s.choice;
  ev.prompt_logprobs = std::move(s.prompt_logprobs);
  s.prompt_logprobs.clear();
  s.ch->push(std::move(ev));
}

}  // namespace stride::serving
