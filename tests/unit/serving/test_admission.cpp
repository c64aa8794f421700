// Admission's decisions (what HTTP and gRPC both refuse with): the per-key
// in-flight cap, the rate limit's token bucket, ready/draining, and what a
// scheduler's submit Status means to the client.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "serving/admission.h"
#include "serving/config.h"

namespace stride::serving {
namespace {

TEST(Admission, InFlightCapPerKeyUntilASlotIsReleased) {
  ServeConfig cfg;
  cfg.max_requests_per_key = 2;
  Admission adm(cfg);
  auto a = std::make_unique<Admission::Slot>(adm, "key#0");
  Admission::Slot b(adm, "key#0");
  EXPECT_TRUE(a->held());
  EXPECT_FALSE(a->refusal());
  EXPECT_TRUE(b.held());
  {
    Admission::Slot c(adm, "key#0");
    EXPECT_FALSE(c.held());
    auto r = c.refusal();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->reason, Refusal::Reason::kTooManyInFlight);
    EXPECT_EQ(r->code, "too_many_requests");
    EXPECT_EQ(r->message, "too many requests in flight for this key (max_requests_per_key: 2)");
    EXPECT_DOUBLE_EQ(r->retry_after_s, 1.0);
    EXPECT_TRUE(r->exhausted());
    Admission::Slot other(adm, "key#1");  // another key has its own count
    EXPECT_TRUE(other.held());
  }
  // A refused slot gives nothing back: the key is still at its cap.
  EXPECT_FALSE(Admission::Slot(adm, "key#0").held());
  a.reset();
  Admission::Slot d(adm, "key#0");
  EXPECT_TRUE(d.held());
  EXPECT_FALSE(d.refusal());
}

TEST(Admission, NoInFlightCapWhenOff) {
  ServeConfig cfg;
  cfg.max_requests_per_key = 0;
  Admission adm(cfg);
  std::vector<std::unique_ptr<Admission::Slot>> slots;
  for (int i = 0; i < 100; ++i) {
    slots.push_back(std::make_unique<Admission::Slot>(adm, "10.0.0.1"));
    EXPECT_TRUE(slots.back()->held());
  }
}

TEST(Admission, RateLimitRefusesOnceTheBucketIsEmpty) {
  ServeConfig cfg;
  cfg.rate_limit_rpm = 30;  // 0.5 tokens/s; a bucket holds ten seconds' worth (5)
  Admission adm(cfg);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(adm.take_rate_token("key#0")) << "request " << i;
  auto r = adm.take_rate_token("key#0");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, Refusal::Reason::kRateLimited);
  EXPECT_EQ(r->code, "rate_limit_exceeded");
  EXPECT_EQ(r->message, "rate limit exceeded (30 requests/minute)");
  EXPECT_GT(r->retry_after_s, 0.0);
  EXPECT_LE(r->retry_after_s, 2.0);  // one token at 0.5/s
  EXPECT_TRUE(r->exhausted());
  EXPECT_FALSE(adm.take_rate_token("key#1"));  // each key has its own bucket
}

TEST(Admission, SmallRateLimitStillAllowsOneRequest) {
  ServeConfig cfg;
  cfg.rate_limit_rpm = 1;  // under one token of burst: the bucket still holds one
  Admission adm(cfg);
  EXPECT_FALSE(adm.take_rate_token("10.0.0.1"));
  auto r = adm.take_rate_token("10.0.0.1");
  ASSERT_TRUE(r);
  EXPECT_GT(r->retry_after_s, 50.0);  // a token a minute
  EXPECT_LE(r->retry_after_s, 60.0);
}

TEST(Admission, NoRateLimitWhenOff) {
  ServeConfig cfg;
  cfg.rate_limit_rpm = 0;
  Admission adm(cfg);
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(adm.take_rate_token("key#0"));
}

TEST(Admission, ReadyAndDraining) {
  ServeConfig cfg;
  Admission adm(cfg);
  auto r = adm.check_ready(true);
  ASSERT_TRUE(r);  // nothing is served before set_ready
  EXPECT_EQ(r->code, "not_ready");
  EXPECT_EQ(r->message, "the model is still loading");
  EXPECT_FALSE(r->exhausted());
  adm.set_ready();
  EXPECT_FALSE(adm.check_ready(true));
  EXPECT_TRUE(adm.check_ready(false));  // ready, but the caller has no model
  EXPECT_FALSE(adm.check_draining());
  adm.set_draining();
  auto d = adm.check_draining();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->reason, Refusal::Reason::kDraining);
  EXPECT_EQ(d->code, "draining");
  EXPECT_EQ(d->message, "the server is shutting down");
  EXPECT_DOUBLE_EQ(d->retry_after_s, 0.0);
  EXPECT_FALSE(d->exhausted());
}

TEST(Admission, SubmitStatusToRefusal) {
  EXPECT_FALSE(Admission::refusal_for_submit(Status::Ok()));
  auto full = Admission::refusal_for_submit(ResourceExhausted("the request queue is full"));
  ASSERT_TRUE(full);
  EXPECT_EQ(full->reason, Refusal::Reason::kQueueFull);
  EXPECT_EQ(full->code, "queue_full");
  EXPECT_EQ(full->message, "the request queue is full");
  EXPECT_DOUBLE_EQ(full->retry_after_s, 1.0);
  EXPECT_TRUE(full->exhausted());
  auto stopping = Admission::refusal_for_submit(Unsupported("the scheduler is shutting down"));
  ASSERT_TRUE(stopping);
  EXPECT_EQ(stopping->reason, Refusal::Reason::kUnavailable);
  EXPECT_EQ(stopping->code, "unavailable");
  EXPECT_EQ(stopping->message, "the scheduler is shutting down");
  EXPECT_DOUBLE_EQ(stopping->retry_after_s, 0.0);
  EXPECT_FALSE(stopping->exhausted());
}

}  // namespace
}  // namespace stride::serving
