// The shared tier's address: redis://[[user]:password@]host[:port][/db].
#include <gtest/gtest.h>

#include "redis/redis_url.h"

namespace stride {
namespace {

TEST(RedisUrl, HostPortAndDefaults) {
  auto a = parse_redis_url("redis://cache.internal:6380");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->host, "cache.internal");
  EXPECT_EQ(a->port, 6380);
  EXPECT_EQ(a->db, 0);
  EXPECT_EQ(a->password, "");
  auto b = parse_redis_url("redis://10.0.0.7");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 6379);
  EXPECT_EQ(b->display(), "10.0.0.7:6379/0");
}

TEST(RedisUrl, PasswordUserAndDatabase) {
  auto a = parse_redis_url("redis://:s3cr@t/x@127.0.0.1:7000/3");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->user, "");
  EXPECT_EQ(a->password, "s3cr@t/x");
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7000);
  EXPECT_EQ(a->db, 3);
  EXPECT_EQ(a->display().find("s3cr"), std::string::npos);  // never in logs
  auto b = parse_redis_url("redis://stride:pw@redis:6379/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->user, "stride");
  EXPECT_EQ(b->password, "pw");
  EXPECT_EQ(b->db, 0);
}

TEST(RedisUrl, Ipv6) {
  auto a = parse_redis_url("redis://[::1]:6390/2");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 6390);
  EXPECT_EQ(a->db, 2);
  EXPECT_EQ(a->display(), "[::1]:6390/2");
  auto b = parse_redis_url("redis://[fe80::1]");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->port, 6379);
}

TEST(RedisUrl, BadUrlsAreRefused) {
  for (const char* url : {"", "redis:/host:1", "http://host:6379", "rediss://host:6379", "redis://",
                          "redis://:6379", "redis://host:", "redis://host:0", "redis://host:65536",
                          "redis://host:12x", "redis://host:6379/db", "redis://host:6379/-1",
                          "redis://ho st:6379", "redis://host;rm:6379", "redis://pw@host:6379",
                          "redis://:@host:6379", "redis://[::1", "redis://[::1]x", "redis://[::1]:",
                          "redis://[zz]:1", "redis://host:99999999999"}) {
    auto a = parse_redis_url(url);
    EXPECT_FALSE(a.ok()) << url;
    if (!a.ok()) {
      EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument) << url;
    }
  }
}

}  // namespace
}  // namespace stride
