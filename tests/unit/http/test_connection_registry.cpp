// Connection caps at accept: idle connections make room, busy ones never do.
#include <gtest/gtest.h>

#include "http/connection_registry.h"

using namespace stride::server;

namespace {
struct FakeConn : Closable {
  int closes = 0;
  void close_if_idle() override { ++closes; }
};
}  // namespace

TEST(ConnectionRegistry, PerAddressCapEvictsThatAddressOldestIdle) {
  ConnectionRegistry reg(100, 2);
  auto a1 = std::make_shared<FakeConn>(), a2 = std::make_shared<FakeConn>(), b1 = std::make_shared<FakeConn>();
  const uint64_t ia1 = reg.admit("10.0.0.1");
  reg.attach(ia1, a1);
  const uint64_t ib1 = reg.admit("10.0.0.2");
  reg.attach(ib1, b1);
  const uint64_t ia2 = reg.admit("10.0.0.1");
  reg.attach(ia2, a2);
  ASSERT_TRUE(ia1 && ia2 && ib1);
  // A third from the same address: its oldest idle connection goes, not the other address's.
  const uint64_t ia3 = reg.admit("10.0.0.1");
  EXPECT_NE(ia3, 0u);
  EXPECT_EQ(a1->closes, 1);
  EXPECT_EQ(a2->closes, 0);
  EXPECT_EQ(b1->closes, 0);
  EXPECT_EQ(reg.evicted(), 1);
}

TEST(ConnectionRegistry, BusyConnectionsAreNeverEvicted) {
  ConnectionRegistry reg(2, 10);
  auto c1 = std::make_shared<FakeConn>(), c2 = std::make_shared<FakeConn>();
  const uint64_t i1 = reg.admit("a");
  reg.attach(i1, c1);
  const uint64_t i2 = reg.admit("b");
  reg.attach(i2, c2);
  reg.set_idle(i1, false);
  reg.set_idle(i2, false);
  EXPECT_EQ(reg.admit("c"), 0u);  // everything busy: refused
  EXPECT_EQ(c1->closes + c2->closes, 0);
  reg.set_idle(i2, true);
  EXPECT_NE(reg.admit("c"), 0u);  // the idle one made room
  EXPECT_EQ(c2->closes, 1);
  EXPECT_EQ(c1->closes, 0);
  reg.remove(i2);
  reg.remove(i1);
  EXPECT_EQ(reg.size(), 1);
}
