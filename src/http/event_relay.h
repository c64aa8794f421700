#pragma once
// The part of a response that follows a request's scheduler events. A handler
// that submitted a request hands its channel and an EventRelay to the
// Responder and returns; the connection's session then feeds the relay the
// events on its strand as they arrive, writing what it produced between
// batches, so no thread waits on the scheduler.
#include "serving/request.h"

namespace stride::server {

class Responder;

class EventRelay {
 public:
  virtual ~EventRelay() = default;
  // One event; writes to `res`. False once the response needs no more events.
  virtual bool on_event(serving::Event& ev, Responder& res) = 0;
  // The client left (hung up, or a write failed or timed out) before the end;
  // the request is cancelled already.
  virtual void on_client_gone() = 0;
  // True when, after the last event, the response still needs blocking work
  // (disk, a long computation): finish() then runs off the network threads.
  virtual bool finishes_off_strand() const { return false; }
  virtual void finish(Responder&) {}
};

}  // namespace stride::server
