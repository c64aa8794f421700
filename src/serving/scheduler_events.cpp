// What the scheduler sends a request's client: each sampled token and the
// text it releases, the finish event (with a saved session's KV snapshot),
// an embedding, an error. Each also hands the sequence's KV pages back and
// records the request's latencies.
#include <memory>
#include <string>
#include <utility>

#include "serving/scheduler_sequence.h"

namespace stride::serving {

namespace {
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

// Takes the token sampled for `s` (s.next) and releases text.
void Scheduler::after_logits(Sequence& s) {
  Event ev;
  ev.index = s.choice;
  const int32_t id = s.next;
  ev.logprobs = std::move(s.next_logprobs);
  s.next_logprobs.clear();
  const auto now = Clock::now();
  if (s.n_generated == 0) {
    metrics_.ttft.observe(seconds(now - s.ch->arrived));
  } else {
    metrics_.itl.observe(seconds(now - s.last_token));
  }
  s.last_token = now;
  const DecodeLoop::Step step = s.loop.push(id);
  if (step.appended) {
    s.tokens.push_back(id);
    ev.tokens = 1;
    ev.token_ids.push_back(id);
    ++s.n_generated;
    ++metrics_.generation_tokens;
  }
  ev.text = step.text;
  if (step.appended || !ev.logprobs.empty()) s.ch->push(std::move(ev));
  if (step.done) {
    finish(s, finish_reason_name(step.reason));
  } else if (s.matcher && s.matcher->ended()) {
    finish(s, "stop");  // the grammar took an end token that ignore_eos kept in the text
  }
}

void Scheduler::finish(Sequence& s, const std::string& reason) {
  // Branches not forked yet end with their first branch (cancelled, timed out).
  for (auto& branch : std::exchange(s.forks, {})) finish(*branch, reason);
  Event tail;
  tail.index = s.choice;
  tail.text = s.loop.finish();
  if (!tail.text.empty()) s.ch->push(std::move(tail));
  std::shared_ptr<const KvSnapshot> snapshot;
  if (s.req().save_session && s.seq >= 0 && s.n_cached >= s.prompt_size) {
    // The pages are still held by the sequence, so none was evicted.
    Expected<KvSnapshot> got = engine_.kv().sessions().export_prefix(s.prompt());
    if (!got.ok()) return fail(s, got.status());
    snapshot = std::make_shared<const KvSnapshot>(std::move(*got));
  }
  // Pages go back before the client hears "finished", so a client that reads
  // /metrics right after sees them free.
  release(s);
  metrics_.set_kv(engine_.kv().stats());
  Event done;
  done.kind = EventKind::Finish;
  done.finish_reason = reason;
  done.index = s.choice;
  done.logprob_sum = s.logprob_sum;
  done.prompt_tokens = (int)s.prompt_size;
  done.completion_tokens = s.n_generated;
  done.cached_tokens = s.cached_prompt_tokens;
  done.snapshot = std::move(snapshot);
  s.ch->push(std::move(done));
  metrics_.e2e.observe(seconds(Clock::now() - s.ch->arrived));
  metrics_.count_finish(reason);
}

void Scheduler::finish_embedding(Sequence& s) {
  Event e;
  e.kind = EventKind::Embedding;
  e.index = s.embed_index;
  e.embedding = s.pooled->result(s.req().embed->normalize);
  e.prompt_tokens = (int)s.tokens.size();
  release(s);  // leaves the running set at the end of the step
  metrics_.set_kv(engine_.kv().stats());
  s.ch->push(std::move(e));
}

void Scheduler::fail(Sequence& s, const Status& st) {
  for (auto& branch : std::exchange(s.forks, {})) fail(*branch, st);
  Event e;
  e.kind = EventKind::Error;
  e.index = s.choice;
  e.code = st.code();
  e.message = st.message();
  release(s);
  metrics_.set_kv(engine_.kv().stats());
  s.ch->push(std::move(e));
  metrics_.count_finish("error");
}

}  // namespace stride::serving
