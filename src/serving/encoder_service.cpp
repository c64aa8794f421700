#include "serving/encoder_service.h"

#include "encoder/encoder_forward.h"

namespace stride::serving {

namespace {
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

EncoderService::EncoderService(std::unique_ptr<EncoderModel> model, const EncoderServiceOptions& opts,
                               Metrics& metrics)
    : model_(std::move(model)), opts_(opts), metrics_(metrics) {
  pool_ = std::make_unique<ThreadPool>(opts_.threads);
  if (opts_.batch_tokens < model_->max_tokens()) opts_.batch_tokens = model_->max_tokens();
}

EncoderService::~EncoderService() { drain_and_stop(); }

void EncoderService::start() { thread_ = std::thread([this] { loop(); }); }

void EncoderService::drain_and_stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status EncoderService::submit(std::shared_ptr<RequestChannel> channel) {
  if (!channel->request.embed) return InvalidArgument("an encoder model only computes embeddings");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return Unsupported("the server is shutting down");
    if (queue_.size() >= (size_t)opts_.max_queue) {
      return ResourceExhausted("the request queue is full (" + std::to_string(opts_.max_queue) + ")");
    }
    queue_.push_back(std::move(channel));
    metrics_.num_waiting = (int64_t)queue_.size();
  }
  cv_.notify_one();
  return Status::Ok();
}

void EncoderService::loop() {
  for (;;) {
    std::shared_ptr<RequestChannel> ch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) break;  // stopping, nothing left
      ch = std::move(queue_.front());
      queue_.pop_front();
      metrics_.num_waiting = (int64_t)queue_.size();
    }
    metrics_.num_running = 1;
    metrics_.queue_time.observe(seconds(Clock::now() - ch->arrived));
    run(*ch);
    metrics_.num_running = 0;
    metrics_.e2e.observe(seconds(Clock::now() - ch->arrived));
  }
}

void EncoderService::run(RequestChannel& ch) {
  const EmbedRequest& req = *ch.request.embed;
  size_t next = 0;
  while (next < req.inputs.size()) {
    if (ch.cancelled() || Clock::now() >= ch.request.deadline) {
      Event done;
      done.kind = EventKind::Finish;
      done.finish_reason = ch.cancelled() ? "cancelled" : "timeout";
      metrics_.count_finish(done.finish_reason);
      ch.push(std::move(done));
      return;
    }
    // The next inputs up to batch_tokens (at least one).
    std::vector<std::vector<int32_t>> batch;
    int64_t tokens = 0;
    const size_t first = next;
    while (next < req.inputs.size() &&
           (batch.empty() || tokens + (int64_t)req.inputs[next].size() <= opts_.batch_tokens)) {
      tokens += (int64_t)req.inputs[next].size();
      batch.push_back(req.inputs[next++]);
    }
    const auto t0 = Clock::now();
    auto vectors = encoder_embed(*model_, batch, *pool_);
    metrics_.step_seconds = metrics_.step_seconds.load() + seconds(Clock::now() - t0);
    ++metrics_.steps;
    if (!vectors.ok()) {
      Event e;
      e.kind = EventKind::Error;
      e.code = vectors.status().code();
      e.message = vectors.status().message();
      metrics_.count_finish("error");
      ch.push(std::move(e));
      return;
    }
    metrics_.prompt_tokens += tokens;
    for (size_t i = 0; i < vectors->size(); ++i) {
      Event e;
      e.kind = EventKind::Embedding;
      e.index = (int)(first + i);
      e.prompt_tokens = (int)batch[i].size();
      e.embedding = std::move((*vectors)[i]);
      ch.push(std::move(e));
    }
  }
}

}  // namespace stride::serving
