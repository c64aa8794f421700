#pragma once
// The engine loop: one thread owns the Engine and runs continuous batching.
// Each step decodes every running sequence (one token each) and spends the
// rest of the per-step token budget on prefill chunks of admitted requests.
// Each step is schedule -> KvManager::prepare -> forward -> sample -> commit
// (engine/step_runner.h). Admission is gated by the pages a prompt needs
// (kv/kv_pages_needed.h); when prepare() still finds no room, prompt chunks
// wait or the youngest sequence is preempted (run_step_with_room).
// New and recomputed sequences start on the longest cached prefix of their
// tokens (KvManager::add_sequence_with_prefix), so only the rest is prefilled.
// An embedding request becomes one sequence per input that is only
// prefilled: its final hidden states are pooled (kernels/pooling.h) as its
// chunks run, interleaved with everyone's decodes like any prompt.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "grammar/token_trie.h"
#include "serving/metrics.h"
#include "serving/request.h"
#include "serving/shard_route.h"

namespace stride::serving {

struct SchedulerOptions {
  int max_batch = 8;          // sequences decoded together
  int max_queue = 64;         // waiting requests before submit() refuses (HTTP 429)
  int step_tokens = 0;        // tokens per step (decode + prefill); 0: the model's max_chunk
  int64_t max_context = 8192; // tokens one sequence may hold
  // Speculative decoding for requests that do not choose (docs/serving.md).
  SpeculativeOptions speculative;
  // Control tokens a grammar may spell ([TOOL_CALLS], <|channel|>, ...: the
  // tool formats', tool_format_control_texts); every other control token is
  // never allowed under a grammar.
  std::vector<std::string> grammar_control_texts;
};

class SpeculativeSteps;  // scheduler_speculative.h

class Scheduler {
 public:
  Scheduler(Engine& engine, const SchedulerOptions& opts, Metrics& metrics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Requests the route takes (prompts long enough for a shard set) go to it
  // instead of the local batch. Before start().
  void set_shard_route(std::unique_ptr<ShardRoute> route) { route_ = std::move(route); }
  void start();
  // Refuses new requests, finishes the queued and running ones, joins the thread.
  void drain_and_stop();
  // ResourceExhausted when the queue is full (HTTP 429); kUnsupported when
  // shutting down (HTTP 503).
  Status submit(std::shared_ptr<RequestChannel> channel);

  // A request as the scheduler holds it (scheduler_sequence.h, private to the
  // scheduler's files and its helpers: scheduler_speculative.h, scheduler_scoring.h).
  struct Sequence;

 private:
  void loop();
  void take_incoming(std::deque<std::unique_ptr<Sequence>>& waiting);
  // Parallel sampling and batched prompts (scheduler_branches.cpp): a
  // generation's sequences, one per prompt, each carrying its other branches,
  // which fork_branches() starts on its KV pages once its prompt is prefilled.
  void enqueue_generation(std::shared_ptr<RequestChannel> ch, std::deque<std::unique_ptr<Sequence>>& waiting);
  std::unique_ptr<Sequence> new_generation(const std::shared_ptr<RequestChannel>& ch, int prompt_index, int branch);
  void fork_branches(Sequence& first, std::deque<std::unique_ptr<Sequence>>& waiting, std::vector<Sequence*>& owners);
  // Pages and batch slots that admitting s (with its branches) promises.
  int64_t admission_pages(Sequence& s) const;
  void drop_expired(std::deque<std::unique_ptr<Sequence>>& waiting);
  void admit(std::deque<std::unique_ptr<Sequence>>& waiting);
  bool step(std::deque<std::unique_ptr<Sequence>>& waiting);
  Status run_step_with_room(std::vector<SequenceStep>& steps, std::vector<Sequence*>& owners,
                            std::deque<std::unique_ptr<Sequence>>& waiting);
  void after_logits(Sequence& s);
  void finish(Sequence& s, const std::string& reason);
  void fail(Sequence& s, const Status& st);
  // Embedding inputs: a sequence without prefix reuse, and the pooled vector once prefilled.
  static Expected<KvManager::PrefixHit> fresh_sequence(KvManager& kv);
  void finish_embedding(Sequence& s);
  void release(Sequence& s);
  void publish_gauges(size_t waiting);
  // The vocabulary trie for grammar masks, built at the first constrained request.
  const std::shared_ptr<const grammar::TokenTrie>& token_trie();

  Engine& engine_;
  SchedulerOptions opts_;
  Metrics& metrics_;
  std::unique_ptr<SpeculativeSteps> speculative_;  // speculative decoding's part of a step
  std::vector<std::unique_ptr<Sequence>> running_;
  // Set by a step that preempted, cleared by one that ran: no admissions in
  // between, so a readmitted sequence cannot take back (through the prefix
  // cache) the pages the running ones need, and every cycle makes progress.
  bool admission_paused_ = false;
  std::shared_ptr<const grammar::TokenTrie> trie_;
  std::unique_ptr<ShardRoute> route_;  // null: every request runs here

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<RequestChannel>> incoming_;
  std::atomic<size_t> waiting_size_{0};  // scheduler-local waiting queue length
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace stride::serving
