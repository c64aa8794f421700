#pragma once
// Serving for a BERT-style encoder (an embeddings-only model): one thread
// owns the encoder and its thread pool and runs embedding requests from a
// bounded queue in order. Inputs are batched by tokens (the matmuls of a
// batch run together); cancellation and deadlines are checked between
// batches. It speaks the scheduler's protocol: an Embedding event per input,
// or Error, or Finish with "cancelled"/"timeout". There is no decoding to
// hold up: an encoder model serves nothing else.
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "core/thread_pool.h"
#include "encoder/encoder_model.h"
#include "serving/metrics.h"
#include "serving/request.h"

namespace stride::serving {

struct EncoderServiceOptions {
  int threads = 0;           // 0: all cores
  int max_queue = 64;        // waiting requests before submit() refuses (HTTP 429)
  int batch_tokens = 4096;   // tokens per forward pass
};

class EncoderService {
 public:
  EncoderService(std::unique_ptr<EncoderModel> model, const EncoderServiceOptions& opts, Metrics& metrics);
  ~EncoderService();
  EncoderService(const EncoderService&) = delete;
  EncoderService& operator=(const EncoderService&) = delete;

  const EncoderModel& model() const { return *model_; }
  void start();
  // Refuses new requests, finishes the queued ones, joins the thread.
  void drain_and_stop();
  // ResourceExhausted when the queue is full; Unsupported when shutting down.
  Status submit(std::shared_ptr<RequestChannel> channel);

 private:
  void loop();
  void run(RequestChannel& ch);

  std::unique_ptr<EncoderModel> model_;
  EncoderServiceOptions opts_;
  Metrics& metrics_;
  std::unique_ptr<ThreadPool> pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<RequestChannel>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace stride::serving
