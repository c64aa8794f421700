#pragma once
// The plain structs that cross between the front ends (HTTP, gRPC) and the scheduler thread.
// No JSON here: serving/prepare_generation.h makes a ServeRequest of a plain
// GenerationRequest, and the front ends turn events back into their wire formats.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "engine/speculative_mode.h"
#include "grammar/compiled_grammar.h"
#include "kv/kv_snapshot.h"
#include "kernels/pooling.h"
#include "sampler/logprobs.h"
#include "sampler/sampler.h"

namespace stride::serving {

using Clock = std::chrono::steady_clock;

// POST /v1/embeddings: each input is prefilled (nothing is generated) and its
// final hidden states pooled into one vector, sent back as an Embedding event.
struct EmbedRequest {
  std::vector<std::vector<int32_t>> inputs;  // token ids, each non-empty
  Pooling pooling = Pooling::Last;
  bool normalize = true;
};

struct ServeRequest {
  std::string id;                   // "cmpl-..." for logs and the audit trail
  std::vector<int32_t> prompt;      // token ids, BOS included when wanted
  int max_tokens = 16;
  SamplingParams sampling;
  std::vector<std::string> stop;    // stop strings, excluded from the text
  bool ignore_eos = false;
  // The text renders control tokens (a tool format that writes its calls
  // or channels with them: tool_format_control_texts).
  bool render_special = false;
  int top_logprobs = -1;            // -1: no log-probs; else alternatives per token
  // Log-probs of the prompt's own tokens (completions `echo` with `logprobs`),
  // with this many alternatives each; -1: none. The prompt is then prefilled
  // in full (no prefix reuse), every position's logits kept.
  int prompt_logprobs = -1;
  // Constrained decoding (response_format / grammar): every sampled token
  // keeps the output a prefix of a sentence of this grammar; null: none.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // Speculative decoding for this request (off, prompt-lookup, draft);
  // empty: the server's default. Constrained requests never speculate.
  std::optional<SpeculativeMode> speculative;
  Clock::time_point deadline = Clock::time_point::max();
  std::shared_ptr<const EmbedRequest> embed;  // set: an embedding request (prompt unused)
  // Saved sessions (docs/serving.md, "Sessions"). restore: pages put into the
  // prefix cache just before admission, so the prompt's start is a cache hit.
  std::shared_ptr<const KvSnapshot> restore;
  // save: once the prompt is prefilled its pages are exported and sent with
  // the Finish event (the request's one generated token is not part of them).
  bool save_session = false;
  // Parallel sampling (OpenAI's n and best_of): `branches` completions of
  // each prompt, branch j sampled with seed sampling.seed + j. The prompt is
  // prefilled once and its KV pages shared by the branches
  // (KvManager::fork_sequence). Events carry their choice in Event::index.
  int branches = 1;
  // A batched completion: the prompts after `prompt`; prompt i's branch j is
  // choice i * branches + j.
  std::vector<std::vector<int32_t>> more_prompts;
  // Each branch sums its sampled tokens' log-probabilities into its Finish
  // event (best_of keeps the branches with the highest sums).
  bool sum_logprobs = false;

  int n_prompts() const { return 1 + (int)more_prompts.size(); }
  const std::vector<int32_t>& prompt_at(int i) const { return i == 0 ? prompt : more_prompts[(size_t)i - 1]; }
};

// Log-probs cross to the server as the sampler computes them.
using stride::TokenLogprob;
using stride::TopLogprob;

enum class EventKind { Token, Finish, Error, Embedding };

struct Event {
  EventKind kind = EventKind::Token;
  std::string text;                     // Token: newly released text (may be empty)
  std::vector<TokenLogprob> logprobs;   // Token: one per generated token in this event
  int tokens = 0;                       // Token: tokens generated in this event (its text may be held back)
  std::vector<int32_t> token_ids;       // Token: their ids
  // Token, once, before the first generated token: one per prompt token (the
  // first has no logprob: NaN) when the request asked for prompt_logprobs.
  std::vector<TokenLogprob> prompt_logprobs;
  std::string finish_reason;            // Finish: stop | length | timeout | cancelled
  int prompt_tokens = 0;                // Finish
  int completion_tokens = 0;            // Finish
  int cached_tokens = 0;                // Finish: prompt tokens taken from the prefix cache
  std::shared_ptr<const KvSnapshot> snapshot;  // Finish of a save_session request: the prompt's pages
  StatusCode code = StatusCode::kOk;    // Error
  std::string message;                  // Error
  int index = 0;                        // Embedding: which input; else which choice (ServeRequest::branches)
  double logprob_sum = 0;               // Finish of a sum_logprobs request: its sampled tokens' log-probs summed
  std::vector<float> embedding;         // Embedding: its vector
};

// One request's mailbox: the scheduler pushes events; a front end either
// waits for them (pop) or is notified and takes them (set_notify,
// take_all). `cancelled` goes the other way (client gone): the scheduler frees the
// request's pages at its next step.
class RequestChannel {
 public:
  explicit RequestChannel(ServeRequest r) : request(std::move(r)) {}

  // The notification, when one is set, runs on the pushing thread only when
  // the mailbox was empty: the consumer takes everything at once (take_all),
  // so events that arrive while it is busy ride along with the next batch.
  void push(Event e) {
    bool was_empty = false;
    std::function<void()> notify;
    {
      std::lock_guard<std::mutex> lock(mu_);
      was_empty = events_.empty();
      events_.push_back(std::move(e));
      if (was_empty) notify = notify_;
    }
    cv_.notify_one();
    if (notify) notify();
  }
  // For a consumer that does not wait: `fn` is called (from the scheduler's
  // thread) when events arrive, and at once if some are already waiting. It
  // must be quick; it typically posts to the consumer's own executor.
  void set_notify(std::function<void()> fn) {
    bool pending = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      notify_ = std::move(fn);
      pending = !events_.empty();
      if (pending) fn = notify_;
    }
    if (pending && fn) fn();
  }
  // Every event queued so far, without waiting.
  std::deque<Event> take_all() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(events_, {});
  }
  // Waits up to `timeout` for the next event.
  std::optional<Event> pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  const ServeRequest request;
  const Clock::time_point arrived = Clock::now();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  std::function<void()> notify_;  // guarded by mu_
  std::atomic<bool> cancelled_{false};
};

}  // namespace stride::serving
