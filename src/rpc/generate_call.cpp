#include "rpc/generate_call.h"

#include "http/error_body.h"
#include "rpc/grpc_status.h"

namespace stride::rpc {

GenerateCall* GenerateCall::own(std::unique_ptr<CallRecord> rec) {
  auto call = std::make_unique<GenerateCall>(Made{}, std::move(rec));
  GenerateCall* raw = call.get();
  raw->self_ = std::move(call);
  return raw;
}

GenerateCall* GenerateCall::refused(std::unique_ptr<CallRecord> rec, grpc::Status refused) {
  GenerateCall* raw = own(std::move(rec));
  std::lock_guard<std::recursive_mutex> lock(raw->link_->mu);
  raw->end(std::move(refused));
  return raw;
}

GenerateCall* GenerateCall::relay(std::unique_ptr<CallRecord> rec, std::unique_ptr<serving::Admission::Slot> slot,
                                  std::shared_ptr<serving::RequestChannel> ch) {
  GenerateCall* raw = own(std::move(rec));
  raw->slot_ = std::move(slot);
  raw->ch_ = std::move(ch);
  std::lock_guard<std::recursive_mutex> lock(raw->link_->mu);
  raw->link_->call = raw;
  // Runs at once when events are already waiting; what the call starts
  // before gRPC has bound it, gRPC holds until then.
  raw->ch_->set_notify([link = raw->link_] {
    std::lock_guard<std::recursive_mutex> l(link->mu);
    if (link->call) link->call->pump();
  });
  return raw;
}

void GenerateCall::pump() {
  if (ended_ || writing_) return;
  if (cancelled_) {
    rec_->r.finish_reason = "client_disconnected";
    return end({grpc::StatusCode::CANCELLED, "the client cancelled the call"});
  }
  for (;;) {
    if (events_.empty()) {
      events_ = ch_->take_all();
      if (events_.empty()) return;
    }
    serving::Event ev = std::move(events_.front());
    events_.pop_front();
    out_.Clear();
    if (ev.kind == serving::EventKind::Token) {
      if (ev.token_ids.empty() && ev.text.empty()) continue;
      out_.mutable_token_ids()->Add(ev.token_ids.begin(), ev.token_ids.end());
      out_.set_text(ev.text);
      rec_->r.completion_tokens += (int)ev.token_ids.size();
      writing_ = true;
      return StartWrite(&out_);
    }
    if (ev.kind == serving::EventKind::Error) {
      return end({grpc_code_for(server::http_status_for(Status(ev.code, ev.message))), ev.message});
    }
    out_.set_finish_reason(ev.finish_reason);
    out_.mutable_usage()->set_prompt_tokens(ev.prompt_tokens);
    out_.mutable_usage()->set_completion_tokens(ev.completion_tokens);
    out_.mutable_usage()->set_cached_tokens(ev.cached_tokens);
    rec_->r.completion_tokens = ev.completion_tokens;
    rec_->r.finish_reason = ev.finish_reason;
    return end(grpc::Status::OK, &out_);
  }
}

void GenerateCall::OnWriteDone(bool ok) {
  std::lock_guard<std::recursive_mutex> lock(link_->mu);
  writing_ = false;
  if (ok || ended_) return pump();
  ch_->cancel();
  rec_->r.finish_reason = "client_disconnected";
  end(cancelled_ ? grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the call")
                 : grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
}

void GenerateCall::OnCancel() {
  std::lock_guard<std::recursive_mutex> lock(link_->mu);
  if (ended_) return;
  cancelled_ = true;
  ch_->cancel();  // the scheduler lets the sequence go at its next step
  pump();         // ends now, or once the write in flight is done
}

void GenerateCall::OnDone() {
  std::unique_ptr<GenerateCall> self;  // goes last
  std::lock_guard<std::recursive_mutex> lock(link_->mu);
  link_->call = nullptr;
  self = std::move(self_);
}

void GenerateCall::end(grpc::Status st, const v1::GenerateResponse* last) {
  ended_ = true;
  if (ch_) ch_->set_notify(nullptr);
  rec_->finish(st);
  rec_.reset();  // the audit line, before the client hears the outcome
  slot_.reset();
  if (last) return StartWriteAndFinish(last, grpc::WriteOptions(), std::move(st));
  Finish(std::move(st));
}

}  // namespace stride::rpc
