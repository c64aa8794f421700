#pragma once
// One server-streaming Generate call on gRPC's callback API: no thread waits
// for it. The scheduler's notification (RequestChannel::set_notify, on its
// thread) and each finished write take the events queued so far and start
// the next write, which does not block; a client that cancels (or whose
// deadline passes) cancels the request at once.
#include <deque>
#include <memory>
#include <mutex>

#include "rpc/call_record.h"
#include "serving/admission.h"
#include "serving/request.h"
#include "stride/v1/inference.grpc.pb.h"

namespace stride::rpc {

class GenerateCall final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  // A call refused before it reached the scheduler: it finishes with `refused`.
  static GenerateCall* refused(std::unique_ptr<CallRecord> rec, grpc::Status refused);
  // A submitted request: its events are written as they arrive.
  static GenerateCall* relay(std::unique_ptr<CallRecord> rec, std::unique_ptr<serving::Admission::Slot> slot,
                             std::shared_ptr<serving::RequestChannel> ch);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  struct Made {};  // only refused() and relay() make one (the call owns itself)

 public:
  GenerateCall(Made, std::unique_ptr<CallRecord> rec) : rec_(std::move(rec)) {}

 private:
  static GenerateCall* own(std::unique_ptr<CallRecord> rec);

  // What the channel's notification reaches: the call while it lives.
  struct Link {
    std::recursive_mutex mu;  // serializes the call's reactions and notifications
    GenerateCall* call = nullptr;
  };
  // Writes the next event, unless a write is in flight or the call is over. Under link_->mu.
  void pump();
  // Ends the call with `st` (after writing `last`, when given), the audit
  // line first. Under link_->mu.
  void end(grpc::Status st, const v1::GenerateResponse* last = nullptr);

  std::unique_ptr<GenerateCall> self_;  // the call owns itself until gRPC is done with it (OnDone)
  std::shared_ptr<Link> link_ = std::make_shared<Link>();
  std::unique_ptr<CallRecord> rec_;
  std::unique_ptr<serving::Admission::Slot> slot_;  // counted against the key while the request runs
  std::shared_ptr<serving::RequestChannel> ch_;
  std::deque<serving::Event> events_;  // taken from the channel, not yet written
  v1::GenerateResponse out_;           // the message being written
  bool writing_ = false;
  bool cancelled_ = false;  // the client went: end once no write is in flight
  bool ended_ = false;
};

}  // namespace stride::rpc
