#pragma once
// What the relays of a text generation (completions, chat completions,
// /v1/responses) share: the stream's head, the order of events, the error
// tail (one JSON error body, or the endpoint's stream error and the end of the
// stream), the request's finish in the audit record, and the count of tokens
// the client received when it leaves early. Each endpoint writes only its own
// chunks.
#include <memory>
#include <string>

#include "http/api_handler.h"
#include "http/event_relay.h"

namespace stride::server {

class GenerationRelay : public EventRelay {
 public:
  // The stream's head, before any event (nothing for one JSON body).
  void open(Responder& res);
  bool on_event(serving::Event& ev, Responder& res) final;
  void on_client_gone() final;

 protected:
  GenerationRelay(ApiHandler& api, ApiCall& call, std::unique_ptr<serving::Admission::Slot> slot, bool streaming)
      : api_(api), call_(call), streaming_(streaming), slot_(std::move(slot)) {}

  // The endpoint's first chunks, after the stream's headers.
  virtual void write_head(Responder& res) = 0;
  virtual void on_token(const serving::Event& ev, Responder& res) = 0;
  // The endpoint's error chunks; the stream ends after them.
  virtual void write_stream_error(int http_status, const std::string& message, Responder& res) = 0;
  // A finish event (the call records it already; a relay of several choices
  // records its own sum). True when the answer is complete: every choice of
  // the request has finished.
  virtual bool write_finish(const serving::Event& ev, Responder& res) = 0;

  // Tokens generated; they count as received once written (written()).
  void generated(int tokens) { pending_tokens_ += tokens; }
  void written() {
    delivered_tokens_ += pending_tokens_;
    pending_tokens_ = 0;
  }

  ApiHandler& api_;
  ApiCall& call_;
  const bool streaming_;

 private:
  std::unique_ptr<serving::Admission::Slot> slot_;  // counted against the key while the request runs
  int delivered_tokens_ = 0;  // written to the client (the audit log's count when it hangs up)
  int pending_tokens_ = 0;    // generated, text not yet written
};

}  // namespace stride::server
