#include "serving/scheduler.h"

#include <algorithm>
#include <set>

#include "engine/decode_loop.h"
#include "engine/step_runner.h"
#include "grammar/grammar_matcher.h"
#include "kv/kv_pages_needed.h"
#include "serving/scheduler_scoring.h"
#include "serving/scheduler_sequence.h"
#include "serving/scheduler_speculative.h"

namespace stride::serving {

namespace {
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

Scheduler::Scheduler(Engine& engine, const SchedulerOptions& opts, Metrics& metrics)
    : engine_(engine), opts_(opts), metrics_(metrics),
      speculative_(std::make_unique<SpeculativeSteps>(engine_, opts_, metrics_)) {
  if (opts_.step_tokens <= 0 || opts_.step_tokens > engine_.model().max_chunk()) {
    opts_.step_tokens = engine_.model().max_chunk();
  }
  if (opts_.max_batch < 1) opts_.max_batch = 1;
  if (opts_.step_tokens < opts_.max_batch) opts_.step_tokens = std::min(opts_.max_batch, engine_.model().max_chunk());
}

Scheduler::~Scheduler() { drain_and_stop(); }

void Scheduler::start() { thread_ = std::thread([this] { loop(); }); }

void Scheduler::drain_and_stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Scheduler::submit(std::shared_ptr<RequestChannel> channel) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Unsupported("the server is shutting down");
    if (incoming_.size() + waiting_size_.load() >= (size_t)opts_.max_queue) {
      return ResourceExhausted("the request queue is full (" + std::to_string(opts_.max_queue) + ")");
    }
    incoming_.push_back(std::move(channel));
  }
  cv_.notify_one();
  return Status::Ok();
}

void Scheduler::take_incoming(std::deque<std::unique_ptr<Sequence>>& waiting) {
  std::unique_lock<std::mutex> lock(mu_);
  if (running_.empty() && waiting.empty() && !(route_ && route_->busy())) {
    // Idle: back to the loop twice a second anyway, so the published gauges
    // (the shared KV tier's up/down among them) follow while nothing runs.
    cv_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stopping_ || !incoming_.empty(); });
  }
  while (!incoming_.empty()) {
    std::shared_ptr<RequestChannel> ch = std::move(incoming_.front());
    incoming_.pop_front();
    if (ch->request.embed) {  // one sequence per input, all answering on the request's channel
      const EmbedRequest& e = *ch->request.embed;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        auto s = std::make_unique<Sequence>(ch, *engine_.tokenizer(), 0, opts_.max_context);
        s->tokens = e.inputs[i];
        s->embed_index = (int)i;
        s->pooled = std::make_unique<PooledRows>(e.pooling, engine_.config().n_embd);
        waiting.push_back(std::move(s));
      }
      continue;
    }
    if (route_ && route_->takes(ch->request)) {
      route_->enqueue(std::move(ch));
      continue;
    }
    enqueue_generation(std::move(ch), waiting);
  }
  waiting_size_.store(waiting.size());
}

const std::shared_ptr<const grammar::TokenTrie>& Scheduler::token_trie() {
  if (!trie_) {
    const Tokenizer& tok = *engine_.tokenizer();
    std::vector<std::string> pieces((size_t)tok.n_vocab());
    std::vector<int32_t> ends;
    // Control tokens are never allowed but those a grammar may spell.
    const std::set<std::string> markers(opts_.grammar_control_texts.begin(), opts_.grammar_control_texts.end());
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
      if (tok.is_eog(id)) {
        ends.push_back(id);
      } else {
        pieces[(size_t)id] = tok.token_to_piece(id);  // "" for control tokens
        if (pieces[(size_t)id].empty() && tok.is_special(id)) {
          std::string special = tok.token_to_piece_special(id);
          if (markers.count(special)) pieces[(size_t)id] = std::move(special);
        }
      }
    }
    trie_ = std::make_shared<const grammar::TokenTrie>(std::move(pieces), std::move(ends));
  }
  return trie_;
}

void Scheduler::publish_gauges(size_t waiting) {
  metrics_.num_running = (int64_t)running_.size();
  metrics_.num_waiting = (int64_t)waiting;
  metrics_.set_kv(engine_.kv().stats());
  waiting_size_.store(waiting);
}

void Scheduler::loop() {
  std::deque<std::unique_ptr<Sequence>> waiting;
  for (;;) {
    take_incoming(waiting);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ && incoming_.empty() && waiting.empty() && running_.empty() && !(route_ && route_->busy())) break;
    }
    drop_expired(waiting);
    admit(waiting);
    if (!running_.empty()) step(waiting);
    if (route_) route_->advance();  // between local steps: local requests go on while a sharded one runs
    publish_gauges(waiting.size());
  }
  publish_gauges(0);
}

void Scheduler::release(Sequence& s) {
  if (s.seq >= 0) engine_.kv().remove_sequence(s.seq);
  s.seq = -1;
  s.n_cached = 0;
}

void Scheduler::drop_expired(std::deque<std::unique_ptr<Sequence>>& waiting) {
  const auto now = Clock::now();
  auto expired = [&](Sequence& s) {
    if (s.ch->cancelled()) {
      finish(s, "cancelled");
      return true;
    }
    if (now >= s.req().deadline) {
      finish(s, "timeout");
      return true;
    }
    return false;
  };
  std::erase_if(running_, [&](auto& s) { return expired(*s); });
  std::erase_if(waiting, [&](auto& s) { return expired(*s); });
}

void Scheduler::admit(std::deque<std::unique_ptr<Sequence>>& waiting) {
  KvManager& kv = engine_.kv();
  if (admission_paused_ && !running_.empty()) return;
  // Pages promised to the sequences admitted by this call: they reserve
  // nothing until their first step, so the pool's free count does not show them.
  int64_t promised = 0;
  // Batch slots the admitted sequences' branches take once they fork.
  size_t branch_slots = 0;
  for (const auto& r : running_) branch_slots += r->forks.size();
  while ((int)(running_.size() + branch_slots) < opts_.max_batch && !waiting.empty()) {
    Sequence& s = *waiting.front();
    const KvStats ks = kv.stats();
    // A sequence with branches to fork waits for room for all of them.
    const bool slots = (int)(running_.size() + branch_slots + 1 + s.forks.size()) <= opts_.max_batch;
    if (!running_.empty() && (!slots || ks.pages_total - ks.pages_used - promised < admission_pages(s))) break;
    // The longest cached prefix (a shared system prompt, earlier turns of a
    // chat, or this sequence's own pages before a preemption) is not recomputed.
    // An embedding needs every token's hidden state: no prefix is reused, and
    // a readmitted (preempted) input pools again from its first token.
    // A saved session's pages go into the prefix cache right before the
    // lookup (no allocation in between can evict them). When the pool cannot
    // take them the prompt is simply prefilled: same outputs, fewer cached tokens.
    if (s.req().restore && !s.pooled) {
      const Expected<int64_t> loaded = kv.sessions().import_prefix(*s.req().restore);
      if (loaded.ok()) metrics_.session_pages_restored += *loaded;
    }
    // A prompt being scored needs the logits of every position: no prefix reuse either.
    const bool from_start = s.pooled || s.scoring_prompt();
    auto hit = from_start ? fresh_sequence(kv) : kv.add_sequence_with_prefix(s.tokens);
    if (s.pooled) s.pooled->reset();
    s.prompt_logprobs.clear();
    if (!hit) {
      fail(s, hit.status());
      waiting.pop_front();
      continue;
    }
    s.seq = hit->seq;
    s.n_cached = hit->reused_tokens;
    promised += s.admission_pages;
    branch_slots += s.forks.size();
    if (!s.admitted_once) {
      metrics_.queue_time.observe(seconds(Clock::now() - s.ch->arrived));
      metrics_.prompt_tokens += (int64_t)s.tokens.size();
      s.cached_prompt_tokens = (int)std::min<int64_t>(hit->reused_tokens, s.prompt_size);
      s.admitted_once = true;
    }
    running_.push_back(std::move(waiting.front()));
    waiting.pop_front();
  }
}

// When prepare() finds no room for the step (the rule, in order):
//   1. Prompt chunks that do not fit wait: the step runs without them, if
//      anything else fits (they lose no work, and finishing decodes free pages).
//   2. Otherwise the most recently admitted sequence is preempted (its pages
//      freed, requeued for recompute through the prefix cache): older requests
//      keep their progress, as in vLLM's FCFS preemption.
//   3. A sequence alone that does not fit fails with ResourceExhausted.
// Returns the step's Status; ResourceExhausted after 2 or 3 (nothing ran).
Status Scheduler::run_step_with_room(std::vector<SequenceStep>& steps, std::vector<Sequence*>& owners,
                                     std::deque<std::unique_ptr<Sequence>>& waiting) {
  std::vector<int> unfit;
  const BeforeCommit verify = [&](std::span<int> keep) { speculative_->verify_step(keep, owners); };
  Status st =
      run_step(engine_.model(), engine_.kv(), steps.data(), (int)steps.size(), engine_.pool(), &unfit, verify);
  // Drafts are the first thing to give up when the pool is short.
  if (st.code() == StatusCode::kResourceExhausted && speculative_->strip_drafts(steps, owners))
    st = run_step(engine_.model(), engine_.kv(), steps.data(), (int)steps.size(), engine_.pool(), &unfit, verify);
  const bool prompts_only = !unfit.empty() && unfit.size() < steps.size() &&
                            std::all_of(unfit.begin(), unfit.end(), [&](int i) { return owners[i]->n_generated == 0; });
  if (st.code() == StatusCode::kResourceExhausted && prompts_only) {
    for (auto it = unfit.rbegin(); it != unfit.rend(); ++it) {
      owners[*it]->want_logits = false;
      steps.erase(steps.begin() + *it);
      owners.erase(owners.begin() + *it);
    }
    ++metrics_.deferred_prefills;
    st = run_step(engine_.model(), engine_.kv(), steps.data(), (int)steps.size(), engine_.pool(), &unfit, verify);
  }
  // A lone prompt chunk that does not fit is halved until it does (a top-k
  // hot set reserves for every query's picks; windows release pages between
  // chunks): outputs do not depend on the chunking.
  while (st.code() == StatusCode::kResourceExhausted && running_.size() == 1 && steps.size() == 1 &&
         steps[0].n > 1 && owners[0]->n_generated == 0) {
    steps[0].n /= 2;
    if (!steps[0].all_logits) steps[0].logits = nullptr;  // a scoring chunk keeps its rows
    owners[0]->want_logits = false;
    ++metrics_.split_prefills;
    st = run_step(engine_.model(), engine_.kv(), steps.data(), (int)steps.size(), engine_.pool(), &unfit);
  }
  if (st.code() != StatusCode::kResourceExhausted) return st;
  if (running_.size() == 1) {
    fail(*running_.back(), ResourceExhausted("the KV pool cannot hold this request: " + st.message()));
    running_.pop_back();
    return st;
  }
  auto victim = std::move(running_.back());
  running_.pop_back();
  release(*victim);
  ++metrics_.preemptions;
  waiting.push_front(std::move(victim));
  admission_paused_ = true;
  return st;
}

bool Scheduler::step(std::deque<std::unique_ptr<Sequence>>& waiting) {
  int budget = opts_.step_tokens;
  std::vector<SequenceStep> steps;
  std::vector<Sequence*> owners;
  // Decodes first (one token each, and the drafts of those that speculate
  // while the budget lasts), then prefill chunks under what is left.
  int decodes = 0;
  // A prompt being scored is prefilled to its last token (its rows are kept).
  auto decoding = [](const Sequence& s) { return s.remaining() == 1 && !s.scoring_prompt(); };
  for (auto& sp : running_) decodes += decoding(*sp);
  int draft_room = budget - decodes;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& sp : running_) {
      Sequence& s = *sp;
      const int64_t rem = s.remaining();
      if ((pass == 0) != decoding(s) || budget <= 0) continue;
      SequenceStep st;
      s.verifying = false;
      int n = 0;
      if (pass == 0) {
        n = speculative_->plan_decode(s, draft_room, st);
        draft_room -= n - 1;
      } else {
        n = (int)std::min<int64_t>(rem, budget);
        s.want_logits = n == rem;
        st.seq = s.seq;
        st.tokens = s.tokens.data() + s.n_cached;
        st.n = n;
        st.logits = s.want_logits ? s.logits.data() : nullptr;
        if (s.scoring_prompt()) {
          plan_prompt_rows(s, st, engine_);
          n = st.n;
        }
      }
      if (s.pooled) {  // hidden states instead of logits
        s.want_logits = false;
        st.logits = nullptr;
        s.hidden.resize((size_t)n * engine_.config().n_embd);
        st.hidden = s.hidden.data();
      }
      steps.push_back(st);
      owners.push_back(&s);
      budget -= n;
    }
  }
  if (steps.empty()) return false;
  const auto t0 = Clock::now();
  Status st = run_step_with_room(steps, owners, waiting);
  metrics_.step_seconds = metrics_.step_seconds.load() + seconds(Clock::now() - t0);
  ++metrics_.steps;
  if (st.code() == StatusCode::kResourceExhausted) return false;
  if (!st.ok()) {
    for (auto& s : running_) fail(*s, st);
    running_.clear();
    return false;
  }
  admission_paused_ = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    Sequence& s = *owners[i];
    if (!s.verifying && s.scoring_prompt()) score_prompt_rows(s, steps[i], engine_);
    s.n_cached += s.verifying ? 1 + s.verified.accepted : steps[i].n;
    if (s.want_logits && s.req().max_tokens == 0) {  // the scored prompt is the whole answer
      s.want_logits = false;
      finish(s, "length");
    }
    if (!s.pooled) continue;
    s.pooled->add(s.hidden.data(), steps[i].n);
    if (s.remaining() == 0) finish_embedding(s);
  }
  // A prompt just prefilled: its other branches start on its pages.
  for (size_t i = 0, n = owners.size(); i < n; ++i)
    if (owners[i]->want_logits && !owners[i]->forks.empty()) fork_branches(*owners[i], waiting, owners);
  publish_gauges(waiting.size());  // before the events, so clients never see stale gauges
  // Sampling and log-probabilities read only a sequence's own logits and
  // sampler, so all of the step's sequences draw at once, over the pool;
  // events, text and finishing stay serial, in step order.
  std::vector<Sequence*> ready;
  for (Sequence* s : owners)
    if (s->want_logits) ready.push_back(s);
  const int n_vocab = engine_.config().n_vocab;
  engine_.pool().run_chunks((int)ready.size(), [&](int c, int) {
    Sequence& s = *ready[c];
    // The grammar's mask applies before the sampler (and so before greedy,
    // top-k/top-p and the log-probs): only allowed tokens can be drawn.
    if (!s.matcher) {
      s.next = s.sampler.sample(s.logits.data(), n_vocab, s.tokens);
    } else {
      const auto g0 = Clock::now();
      s.matcher->mask_logits(s.logits.data(), n_vocab);
      const auto g1 = Clock::now();
      s.next = s.sampler.sample(s.logits.data(), n_vocab, s.tokens);
      const auto g2 = Clock::now();
      s.grammar_stuck = !s.matcher->accept_token(s.next);
      metrics_.grammar_mask.observe(seconds(g1 - g0) + seconds(Clock::now() - g2));
    }
    s.next_logprobs.clear();
    if (s.req().top_logprobs >= 0)
      s.next_logprobs.push_back(token_logprobs(s.logits.data(), n_vocab, s.next, s.req().top_logprobs));
    if (s.req().sum_logprobs)
      s.logprob_sum += s.next_logprobs.empty() ? token_logprobs(s.logits.data(), n_vocab, s.next, 0).logprob
                                               : s.next_logprobs[0].logprob;
  });
  for (Sequence* s : owners) {
    if (s->verifying) {
      speculative_->emit_verified(*s, [this](Sequence& v) { after_logits(v); });
      continue;
    }
    if (!s->want_logits) continue;
    if (s->grammar_stuck) {
      fail(*s, InvalidArgument(s->matcher->exhausted()
                                   ? "the grammar is too ambiguous to follow (too much parse work for one token)"
                                   : "the grammar allows no token of this model's vocabulary here"));
      continue;
    }
    after_logits(*s);
  }
  std::erase_if(running_, [](auto& s) { return s->seq < 0; });
  return true;
}

Expected<KvManager::PrefixHit> Scheduler::fresh_sequence(KvManager& kv) {
  STRIDE_ASSIGN_OR_RETURN(KvManager::SeqId seq, kv.add_sequence());
  return KvManager::PrefixHit{seq, 0};
}

}  // namespace stride::serving
