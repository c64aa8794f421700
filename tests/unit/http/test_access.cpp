// API keys, bearer parsing and CIDR allowlists.
#include <gtest/gtest.h>

#include "http/access.h"

using namespace stride::server;

TEST(Access, ApiKeys) {
  const std::vector<std::string> keys = {"alpha", "beta-key"};
  EXPECT_EQ(match_api_key("beta-key", keys), 1);
  EXPECT_EQ(match_api_key("alpha", keys), 0);
  EXPECT_EQ(match_api_key("alph", keys), -1);
  EXPECT_EQ(match_api_key("alphaa", keys), -1);
  EXPECT_EQ(match_api_key("", keys), -1);
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
}

TEST(Access, CidrAllowlist) {
  std::vector<Cidr> list;
  for (const char* c : {"10.0.0.0/8", "192.168.1.7", "fd00::/8"}) {
    auto p = parse_cidr(c);
    ASSERT_TRUE(p.ok()) << c;
    list.push_back(*p);
  }
  EXPECT_TRUE(ip_allowed("10.255.0.1", list));
  EXPECT_FALSE(ip_allowed("11.0.0.1", list));
  EXPECT_TRUE(ip_allowed("192.168.1.7", list));
  EXPECT_FALSE(ip_allowed("192.168.1.8", list));
  EXPECT_TRUE(ip_allowed("::ffff:10.1.2.3", list));  // v4-mapped
  EXPECT_TRUE(ip_allowed("fd12::1", list));
  EXPECT_FALSE(ip_allowed("fe80::1", list));
  EXPECT_FALSE(ip_allowed("127.0.0.1", list));
  EXPECT_TRUE(ip_allowed("127.0.0.1", {}));
  EXPECT_FALSE(parse_cidr("10.0.0.0/33").ok());
  EXPECT_FALSE(parse_cidr("nonsense").ok());
  EXPECT_FALSE(parse_cidr("10.0.0.0/").ok());
}
